package pipeline

// The metadata stages: $collStats, $indexStats, $currentOp and
// $listLocalSessions report the state of the store or the server rather
// than transform documents. Their documents come from whoever runs the
// pipeline (package engine for the first two, the server for the others),
// which passes them as the pipeline's Source; here each stage only checks
// its specification and its place, and passes the documents on.

import (
	"math"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
)

// MongoDB's codes for misused metadata stages.
const (
	codeCollStatsNotObject = 40166 // $collStats must take a nested object
	codeIndexStatsNotEmpty = 28803 // $indexStats takes {}
	codeNotEmptyObject     = 31170 // count and queryExecStats take {}
	codeIDLUnknownField    = 40415 // a field a strict specification does not know
	codeIDLBelowMinimum    = 51024 // a value under its validator's minimum
)

// CollStatsSpec is the argument of $collStats.
type CollStatsSpec struct {
	Latency    bool // latencyStats
	Histograms bool // latencyStats.histograms
	Storage    bool // storageStats
	Scale      int64
	Count      bool
	QueryExec  bool // queryExecStats
}

// ParseCollStats parses the argument of $collStats as MongoDB's strict
// specification does: unknown fields and wrong types are refused.
func ParseCollStats(arg bson.RawValue) (CollStatsSpec, error) {
	spec := CollStatsSpec{Scale: 1}
	doc, ok := arg.DocumentOK()
	if !ok {
		return spec, mongoerr.New(mongoerr.Code(codeCollStatsNotObject), "$collStats must take a nested object but found: $collStats: %s", arg)
	}
	elems, err := doc.Elements()
	if err != nil {
		return spec, err
	}
	for _, el := range elems {
		v := el.Value()
		switch key := el.Key(); key {
		case "latencyStats":
			sub, err := metaSubObject("$collStats", key, v)
			if err != nil {
				return spec, err
			}
			spec.Latency = true
			subElems, _ := sub.Elements()
			for _, se := range subElems {
				if se.Key() != "histograms" {
					return spec, metaUnknownField("$collStats.latencyStats", se.Key())
				}
				if spec.Histograms, err = metaBool("$collStats.latencyStats.histograms", se.Value()); err != nil {
					return spec, err
				}
			}
		case "storageStats":
			sub, err := metaSubObject("$collStats", key, v)
			if err != nil {
				return spec, err
			}
			spec.Storage = true
			if spec.Scale, err = parseScale(sub); err != nil {
				return spec, err
			}
		case "count", "queryExecStats":
			sub, err := metaSubObject("$collStats", key, v)
			if err != nil {
				return spec, err
			}
			if len(sub) > 5 {
				return spec, mongoerr.New(mongoerr.Code(codeNotEmptyObject), "expected an empty object, but got %s", sub)
			}
			if key == "count" {
				spec.Count = true
			} else {
				spec.QueryExec = true
			}
		default:
			return spec, metaUnknownField("$collStats", key)
		}
	}
	return spec, nil
}

// parseScale reads storageStats.scale, a number of at least 1 whose
// fraction MongoDB drops; the other fields of storageStats (verbose,
// waitForLock, numericOnly) change nothing Lethe reports, and unknown
// ones are ignored as MongoDB's non-strict specification does.
func parseScale(sub bson.Raw) (int64, error) {
	v, err := sub.LookupErr("scale")
	if err != nil {
		return 1, nil
	}
	var f float64
	switch v.Type {
	case bson.TypeInt32, bson.TypeInt64, bson.TypeDouble, bson.TypeDecimal128:
		if d, ok := v.Decimal128OK(); ok {
			f, _ = strconv.ParseFloat(d.String(), 64)
		} else {
			f, _ = v.AsFloat64OK()
		}
	default:
		return 0, metaWrongType("$collStats.storageStats.scale", v, "[long, int, decimal, double]")
	}
	if math.IsNaN(f) || f < 1 {
		return 0, mongoerr.New(mongoerr.Code(codeIDLBelowMinimum), "BSON field 'scale' value must be >= 1, actual value '%v'", f)
	}
	if f >= math.MaxInt64 {
		return math.MaxInt64, nil
	}
	return int64(f), nil
}

// ParseIndexStats checks the argument of $indexStats, which must be {}.
func ParseIndexStats(arg bson.RawValue) error {
	doc, ok := arg.DocumentOK()
	if !ok || len(doc) > 5 {
		return mongoerr.New(mongoerr.Code(codeIndexStatsNotEmpty), "The $indexStats stage specification must be an empty object")
	}
	return nil
}

// CurrentOpSpec is the argument of $currentOp.
type CurrentOpSpec struct {
	AllUsers        bool
	IdleConnections bool
	IdleSessions    bool // true unless turned off
	IdleCursors     bool
	LocalOps        bool
	TruncateOps     bool
	Backtrace       bool
}

// ParseCurrentOp parses the argument of $currentOp. MongoDB checks allUsers
// and localOps first, when it reads the command (TypeMismatch), and the
// other options as it builds the stage (FailedToParse).
func ParseCurrentOp(arg bson.RawValue) (CurrentOpSpec, error) {
	spec := CurrentOpSpec{IdleSessions: true}
	if err := liteParseCurrentOp(arg); err != nil {
		return spec, err
	}
	elems, err := arg.Document().Elements()
	if err != nil {
		return spec, err
	}
	for _, el := range elems {
		var dst *bool
		switch el.Key() {
		case "allUsers":
			dst = &spec.AllUsers
		case "idleConnections":
			dst = &spec.IdleConnections
		case "idleSessions":
			dst = &spec.IdleSessions
		case "idleCursors":
			dst = &spec.IdleCursors
		case "localOps":
			dst = &spec.LocalOps
		case "truncateOps":
			dst = &spec.TruncateOps
		case "backtrace":
			dst = &spec.Backtrace
		default:
			return spec, mongoerr.New(mongoerr.FailedToParse, "Unrecognized option '%s' in $currentOp stage.", el.Key())
		}
		b, ok := el.Value().BooleanOK()
		if !ok {
			return spec, mongoerr.New(mongoerr.FailedToParse, "The '%s' parameter of the $currentOp stage must be a boolean value, but found: %s", el.Key(), metaTypeName(el.Value()))
		}
		*dst = b
	}
	return spec, nil
}

// liteParseCurrentOp makes the checks of $currentOp's argument MongoDB
// makes as it reads the command.
func liteParseCurrentOp(arg bson.RawValue) error {
	doc, ok := arg.DocumentOK()
	if !ok {
		return mongoerr.New(mongoerr.TypeMismatch, "$currentOp options must be specified in an object, but found: %s", metaTypeName(arg))
	}
	elems, err := doc.Elements()
	if err != nil {
		return err
	}
	for _, el := range elems {
		if k := el.Key(); (k == "allUsers" || k == "localOps") && el.Value().Type != bson.TypeBoolean {
			return mongoerr.New(mongoerr.TypeMismatch, "The '%s' parameter of the $currentOp stage must be a boolean value, but found: %s", k, metaTypeName(el.Value()))
		}
	}
	return nil
}

// SessionsSpec is the argument of $listLocalSessions: the sessions of all
// users, or of those listed; neither means the caller's own.
type SessionsSpec struct {
	AllUsers bool
	Users    []SessionUser
}

// SessionUser names a user whose sessions $listLocalSessions lists.
type SessionUser struct{ User, DB string }

// ParseListLocalSessions parses the argument of $listLocalSessions.
func ParseListLocalSessions(arg bson.RawValue) (SessionsSpec, error) {
	var spec SessionsSpec
	doc, ok := arg.DocumentOK()
	if !ok {
		return spec, mongoerr.New(mongoerr.TypeMismatch, "$listLocalSessions options must be specified in an object, but found: %s", metaTypeName(arg))
	}
	elems, err := doc.Elements()
	if err != nil {
		return spec, err
	}
	for _, el := range elems {
		v := el.Value()
		switch el.Key() {
		case "allUsers":
			if spec.AllUsers, err = metaBool("$listLocalSessions.allUsers", v); err != nil {
				return spec, err
			}
		case "users":
			arr, ok := v.ArrayOK()
			if !ok {
				return spec, metaWrongType("$listLocalSessions.users", v, "array")
			}
			vals, _ := arr.Values()
			for _, u := range vals {
				ud, ok := u.DocumentOK()
				if !ok {
					return spec, metaWrongType("$listLocalSessions.users", u, "object")
				}
				var su SessionUser
				for _, f := range []struct {
					name string
					dst  *string
				}{{"user", &su.User}, {"db", &su.DB}} {
					fv, err := ud.LookupErr(f.name)
					if err != nil {
						return spec, mongoerr.New(mongoerr.Code(40414), "BSON field '$listLocalSessions.users.%s' is missing but a required field", f.name)
					}
					s, ok := fv.StringValueOK()
					if !ok {
						return spec, metaWrongType("$listLocalSessions.users."+f.name, fv, "string")
					}
					*f.dst = s
				}
				spec.Users = append(spec.Users, su)
			}
		case "$_internalPredicate":
		default:
			return spec, metaUnknownField("$listLocalSessions", el.Key())
		}
	}
	if spec.AllUsers && len(spec.Users) > 0 {
		return spec, mongoerr.New(mongoerr.Code(12), "$listLocalSessions may not specify {allUsers:true} and {users:[...]} at the same time")
	}
	return spec, nil
}

// metaStage is a compiled metadata stage: its documents are the source
// of the pipeline.
type metaStage struct{}

func (metaStage) apply(_ *run, docs []bson.Raw, _ Limit) ([]bson.Raw, error) { return docs, nil }

// compileMeta checks a metadata stage's specification, then its place:
// MongoDB parses every stage before it checks where the stages are.
func compileMeta(c *compiler, name string, arg bson.RawValue) (stage, error) {
	var err error
	switch name {
	case "$collStats":
		_, err = ParseCollStats(arg)
	case "$indexStats":
		err = ParseIndexStats(arg)
	case "$currentOp":
		_, err = ParseCurrentOp(arg)
	case "$listLocalSessions":
		_, err = ParseListLocalSessions(arg)
	}
	if err != nil {
		return nil, err
	}
	if !c.first {
		return nil, notFirst(name)
	}
	return metaStage{}, nil
}

// CheckNamespace applies MongoDB's rules on where the metadata stages run,
// which it checks as it parses a stage, before the stages' places:
// $currentOp only on admin with {aggregate: 1}, $listLocalSessions only
// with {aggregate: 1}. collectionless is set for {aggregate: 1}. The
// checks MongoDB makes as it reads the command come first: $currentOp's
// argument and its allUsers and localOps, $listLocalSessions' argument.
func CheckNamespace(stages []bson.Raw, db string, collectionless bool) error {
	for _, raw := range stages {
		name, arg, err := StageOf(raw)
		if err != nil {
			return err
		}
		switch name {
		case "$currentOp":
			if err := liteParseCurrentOp(arg); err != nil {
				return err
			}
		case "$listLocalSessions":
			if _, err := ParseListLocalSessions(arg); err != nil {
				return err
			}
		}
	}
	for _, raw := range stages {
		name, _, _ := StageOf(raw)
		switch {
		case name == "$currentOp" && (db != "admin" || !collectionless):
			return mongoerr.New(mongoerr.InvalidNamespace, "$currentOp must be run against the 'admin' database with {aggregate: 1}")
		case name == "$listLocalSessions" && !collectionless:
			return mongoerr.New(mongoerr.InvalidNamespace, "$listLocalSessions must be run against the database with {aggregate: 1}, not a collection")
		}
	}
	return nil
}

func metaSubObject(stage, key string, v bson.RawValue) (bson.Raw, error) {
	doc, ok := v.DocumentOK()
	if !ok {
		return nil, metaWrongType(stage+"."+key, v, "object")
	}
	return doc, nil
}

// optionalBool reads a boolean of a strict specification, where null
// counts as absent.
func metaBool(field string, v bson.RawValue) (bool, error) {
	switch v.Type {
	case bson.TypeBoolean:
		return v.Boolean(), nil
	case bson.TypeNull, bson.TypeUndefined:
		return false, nil
	}
	return false, metaWrongType(field, v, "bool")
}

func metaWrongType(field string, v bson.RawValue, want string) error {
	return mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s' is the wrong type '%s', expected type '%s'", field, metaTypeName(v), want)
}

func metaUnknownField(stage, key string) error {
	return mongoerr.New(mongoerr.Code(codeIDLUnknownField), "BSON field '%s.%s' is an unknown field.", stage, key)
}

func metaTypeName(v bson.RawValue) string {
	return bsonvalue.TypeName(bsoncore.Type(v.Type))
}

// Len is the number of stages of p.
func (p *Pipeline) Len() int { return len(p.stages) }

// Stage is the pipeline of p's i-th stage alone, which explain runs one
// at a time to count what each stage makes.
func (p *Pipeline) Stage(i int) *Pipeline {
	return &Pipeline{stages: p.stages[i : i+1], opts: p.opts}
}
