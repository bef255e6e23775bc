package pipeline

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/mongoerr"
)

// What the stages that reach other collections share: their
// sub-pipelines, the variables those run with, and collection names.

// Vars are the values of variables a sub-pipeline runs with, as the let of
// $lookup binds them; a value of Type 0 is missing.
type Vars map[string]bsoncore.Value

// withNow adds $$NOW to vars, so that a sub-pipeline sees the time of the
// pipeline that runs it.
func (r *run) withNow(vars Vars) Vars {
	out := make(Vars, len(vars)+1)
	for k, v := range vars {
		out[k] = v
	}
	out["NOW"] = bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, r.opts.Now.UnixMilli())}
	return out
}

// subPipeline reads the pipeline option of a stage.
func subPipeline(v bson.RawValue) ([]bson.Raw, error) {
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "'pipeline' option must be specified as an array")
	}
	vals, _ := arr.Values()
	stages := make([]bson.Raw, 0, len(vals))
	for _, e := range vals {
		doc, ok := e.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "Each element of the 'pipeline' array must be an object")
		}
		stages = append(stages, doc)
	}
	return stages, nil
}

// allowedInside refuses the stages that write, which no sub-pipeline of
// stage may hold; code is the stage's own code for it.
func allowedInside(stages []bson.Raw, stage string, code mongoerr.Code) error {
	for _, st := range stages {
		name, _, err := StageOf(st)
		if err != nil {
			return err
		}
		if name == "$out" || name == "$merge" {
			return mongoerr.New(code, "%s is not allowed within a %s's sub-pipeline", name, stage)
		}
	}
	return nil
}

// check compiles a sub-pipeline to refuse it before any document is
// read, as MongoDB parses sub-pipelines with their stage. A variable the
// sub-pipeline reads may be bound only when it runs, by a let of the
// stage, so a pipeline that reads one is checked when it runs instead.
func (c *compiler) check(stages []bson.Raw) error {
	_, err := Compile(stages, *c.opts)
	if mongoerr.CodeOf(err) == undefinedVariable {
		return nil
	}
	return err
}

// undefinedVariable is the code of a variable no scope defines.
const undefinedVariable mongoerr.Code = 17276

// startsWithDocuments reports whether a sub-pipeline makes its own
// documents, so that it needs no collection.
func startsWithDocuments(stages []bson.Raw) bool {
	return len(stages) > 0 && MakesDocuments(stages[0])
}

// checkCollName checks the name of a collection a stage reads or writes.
func checkCollName(db, coll, stage string) error {
	if coll == "" || strings.HasPrefix(coll, ".") || strings.ContainsRune(coll, 0) ||
		strings.Contains(coll, "$") || len(db)+1+len(coll) > 255 {
		return mongoerr.New(mongoerr.InvalidNamespace, "invalid %s namespace: %s.%s", stage, db, coll)
	}
	return nil
}

// noCatalog is the error of a stage that reaches other collections in a
// pipeline that has no store behind it.
func noCatalog(stage string) error {
	return mongoerr.New(mongoerr.IllegalOperation, "%s cannot run here: the pipeline reads no collections", stage)
}
