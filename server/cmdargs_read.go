package server

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/cursor"
	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/mongoerr"
)

// The arguments of find and count, parsed apart from running the command
// so that explain checks the command it explains exactly as the command
// itself would: MongoDB's explain parses the inner command with the
// command's own parser (src/mongo/db/commands/find_cmd.cpp,
// count_cmd.cpp, parseExplain...).

// findArgs are find's arguments.
type findArgs struct {
	spec                engine.FindSpec
	batchSize           int
	tailable, awaitData bool
	copts               cursor.Options
	let                 *engine.Let
}

// parseFind reads find's arguments from body.
func (s *Server) parseFind(body bson.Raw) (findArgs, error) {
	a := findArgs{spec: engine.FindSpec{AllowDiskUse: s.params.AllowDiskUseByDefault()}, batchSize: 101}
	var err error
	for key, v := range command.Args(body) {
		switch string(key) {
		case "filter":
			a.spec.Filter, err = command.Object("filter", v)
		case "sort":
			a.spec.Sort, err = command.Object("sort", v)
		case "projection":
			a.spec.Projection, err = command.Object("projection", v)
		case "hint":
			a.spec.Hint, err = command.Hint(v)
		case "skip":
			a.spec.Skip, err = command.NonNegative("find", "skip", v)
		case "limit":
			a.spec.Limit, err = command.NonNegative("find", "limit", v)
		case "batchSize":
			var n int64
			n, err = command.NonNegative("find", "batchSize", v)
			a.batchSize = int(min(n, math.MaxInt32))
		case "singleBatch":
			a.copts.Single, err = command.StrictBool("singleBatch", v)
		case "collation":
			if _, err = command.Object("collation", v); err == nil {
				err = command.CheckCollation("collation", v)
			}
		case "allowDiskUse":
			a.spec.AllowDiskUse, err = command.StrictBool("allowDiskUse", v)
		case "tailable":
			a.tailable, err = command.StrictBool("tailable", v)
		case "awaitData":
			a.awaitData, err = command.StrictBool("awaitData", v)
		case "oplogReplay":
			// Deprecated and ignored by MongoDB too, but type-checked.
			if v.Type != bson.TypeBoolean {
				err = mongoerr.New(mongoerr.TypeMismatch, "Expected field oplogReplayto be of type object")
			}
		case "noCursorTimeout":
			a.copts.NoTimeout, err = command.StrictBool("noCursorTimeout", v)
		case "allowPartialResults", "readOnce":
			// There are no shards whose results could be partial, and
			// readOnce is only a hint.
			_, err = command.StrictBool(string(key), v)
		case "returnKey":
			a.spec.ReturnKey, err = command.StrictBool("returnKey", v)
		case "showRecordId":
			err = refuseShowRecordID(v)
		case "min":
			a.spec.Min, err = command.Object("min", v)
		case "max":
			a.spec.Max, err = command.Object("max", v)
		case "let":
			a.let, err = s.parseLet("find", v)
		default:
			err = command.UnknownField("find", key)
		}
		if err != nil {
			return a, err
		}
	}
	return a, nil
}

// countArgs are count's arguments.
type countArgs struct {
	filter      bson.Raw
	skip, limit int64
	hint        bson.RawValue
}

// parseCount reads count's arguments from body.
func parseCount(body bson.Raw) (countArgs, error) {
	var a countArgs
	var err error
	for key, v := range command.Args(body) {
		switch string(key) {
		case "query":
			if v.Type != bson.TypeNull {
				a.filter, err = command.Doc("count", "query", v)
			}
		case "skip":
			// count parses skip and limit by hand, not as IDL types: a
			// wrong type is BadValue (src/mongo/db/query/count_request.cpp).
			if !command.IsNumber(v.Type) {
				err = mongoerr.New(mongoerr.BadValue, "skip value is not a valid number")
				break
			}
			if err = integralCountArg("skip", v); err != nil {
				break
			}
			a.skip, err = command.Int64("count", "skip", v)
			if err == nil && a.skip < 0 {
				err = mongoerr.New(mongoerr.BadValue, "skip value is negative in count query")
			}
		case "limit":
			if !command.IsNumber(v.Type) {
				err = mongoerr.New(mongoerr.BadValue, "limit value is not a valid number")
				break
			}
			if err = integralCountArg("limit", v); err != nil {
				break
			}
			a.limit, err = command.Int64("count", "limit", v)
			if a.limit == math.MinInt64 {
				err = mongoerr.New(mongoerr.BadValue, "limit value for count cannot be min long")
			}
			if a.limit < 0 {
				a.limit = -a.limit
			}
		case "hint":
			a.hint, err = command.Hint(v)
		case "collation":
			err = command.CheckCollation("count", v)
		case "fields", "query_options":
		default:
			err = command.UnknownField("count", key)
		}
		if err != nil {
			return a, err
		}
	}
	return a, nil
}

// parseDistinct reads distinct's key and query from body.
func parseDistinct(body bson.Raw) (key string, filter bson.Raw, err error) {
	haveKey := false
	for k, v := range command.Args(body) {
		switch string(k) {
		case "key":
			key, err = command.String("distinct", "key", v)
			haveKey = true
		case "query":
			if v.Type != bson.TypeNull {
				filter, err = command.Doc("distinct", "query", v)
			}
		case "collation":
			err = command.CheckCollation("distinct", v)
		default:
			// hint included: MongoDB takes it from 7.1 on, and the 7.0
			// Lethe presents as refuses it rather than ignore it.
			err = command.UnknownField("distinct", k)
		}
		if err != nil {
			return "", nil, err
		}
	}
	if !haveKey {
		return "", nil, command.MissingField("distinct", "key")
	}
	return key, filter, nil
}

// integralCountArg refuses a fractional skip or limit of count, which
// parses them with parseIntegerElementToLong (count_request.cpp), as the
// IDL-typed fields of find do not.
func integralCountArg(field string, v bson.RawValue) error {
	f, err := command.Float64("count", field, v)
	if err != nil || f == math.Trunc(f) || math.IsInf(f, 0) {
		return err
	}
	return mongoerr.New(mongoerr.BadValue, "Expected an integer: %s: %v", field, f)
}
