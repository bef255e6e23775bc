package queryargs

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/cursor"
	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/mongoerr"
)

// Find are find's arguments.
type Find struct {
	Spec                engine.FindSpec
	BatchSize           int
	Tailable, AwaitData bool
	Copts               cursor.Options
	Let                 *engine.Let
}

// ParseFind reads find's arguments from body. allowDiskUse is the
// default of allowDiskUse (the allowDiskUseByDefault parameter), and clk
// the clock a let is evaluated by.
func ParseFind(body bson.Raw, allowDiskUse bool, clk clock.Clock) (Find, error) {
	a := Find{Spec: engine.FindSpec{AllowDiskUse: allowDiskUse}, BatchSize: 101}
	var err error
	for key, v := range command.Args(body) {
		switch string(key) {
		case "filter":
			a.Spec.Filter, err = command.Object("filter", v)
		case "sort":
			a.Spec.Sort, err = command.Object("sort", v)
		case "projection":
			a.Spec.Projection, err = command.Object("projection", v)
		case "hint":
			a.Spec.Hint, err = command.Hint(v)
		case "skip":
			a.Spec.Skip, err = command.NonNegative("find", "skip", v)
		case "limit":
			a.Spec.Limit, err = command.NonNegative("find", "limit", v)
		case "batchSize":
			var n int64
			n, err = command.NonNegative("find", "batchSize", v)
			a.BatchSize = int(min(n, math.MaxInt32))
		case "singleBatch":
			a.Copts.Single, err = command.StrictBool("singleBatch", v)
		case "collation":
			if _, err = command.Object("collation", v); err == nil {
				err = command.CheckCollation("collation", v)
			}
		case "allowDiskUse":
			a.Spec.AllowDiskUse, err = command.StrictBool("allowDiskUse", v)
		case "tailable":
			a.Tailable, err = command.StrictBool("tailable", v)
		case "awaitData":
			a.AwaitData, err = command.StrictBool("awaitData", v)
		case "oplogReplay":
			// Deprecated and ignored by MongoDB too, but type-checked.
			if v.Type != bson.TypeBoolean {
				err = mongoerr.New(mongoerr.TypeMismatch, "Expected field oplogReplayto be of type object")
			}
		case "noCursorTimeout":
			a.Copts.NoTimeout, err = command.StrictBool("noCursorTimeout", v)
		case "allowPartialResults", "readOnce":
			// There are no shards whose results could be partial, and
			// readOnce is only a hint.
			_, err = command.StrictBool(string(key), v)
		case "returnKey":
			a.Spec.ReturnKey, err = command.StrictBool("returnKey", v)
		case "showRecordId":
			err = refuseShowRecordID(v)
		case "min":
			a.Spec.Min, err = command.Object("min", v)
		case "max":
			a.Spec.Max, err = command.Object("max", v)
		case "let":
			a.Let, err = Let("find", v, clk)
		default:
			err = command.UnknownField("find", key)
		}
		if err != nil {
			return a, err
		}
	}
	return a, nil
}

// Count are count's arguments.
type Count struct {
	Filter      bson.Raw
	Skip, Limit int64
	Hint        bson.RawValue
}

// ParseCount reads count's arguments from body.
func ParseCount(body bson.Raw) (Count, error) {
	var a Count
	var err error
	for key, v := range command.Args(body) {
		switch string(key) {
		case "query":
			if v.Type != bson.TypeNull {
				a.Filter, err = command.Doc("count", "query", v)
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
			a.Skip, err = command.Int64("count", "skip", v)
			if err == nil && a.Skip < 0 {
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
			a.Limit, err = command.Int64("count", "limit", v)
			if a.Limit == math.MinInt64 {
				err = mongoerr.New(mongoerr.BadValue, "limit value for count cannot be min long")
			}
			if a.Limit < 0 {
				a.Limit = -a.Limit
			}
		case "hint":
			a.Hint, err = command.Hint(v)
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

// ParseDistinct reads distinct's key and query from body.
func ParseDistinct(body bson.Raw) (key string, filter bson.Raw, err error) {
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
