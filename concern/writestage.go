package concern

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/mongoerr"
)

// CheckWriteStage refuses $out and $merge under readConcern
// linearizable, which MongoDB's write stages do not support: InvalidOptions
// with the stage named (DocumentSourceOut and DocumentSourceMerge,
// LiteParsed::supportsReadConcern, in src/mongo/db/pipeline).
func CheckWriteStage(body bson.Raw, stages []bson.Raw) error {
	if len(stages) == 0 {
		return nil
	}
	level, _ := body.Lookup("readConcern", "level").StringValueOK()
	if level != "linearizable" {
		return nil
	}
	last := stages[len(stages)-1]
	elems, err := last.Elements()
	if err != nil || len(elems) == 0 {
		return nil // the pipeline parser reports it
	}
	switch name := elems[0].Key(); name {
	case "$out", "$merge":
		return mongoerr.New(mongoerr.InvalidOptions, "%s cannot be used with a 'linearizable' read concern level", name)
	}
	return nil
}
