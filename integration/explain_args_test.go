package integration

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestExplainChecksTheExplainedCommand checks that explain refuses the
// arguments the explained command refuses, with the command's codes:
// MongoDB's explain parses the inner command with that command's parser
// before planning (find_cmd.cpp, count_cmd.cpp, distinct.cpp and
// run_aggregate.cpp; the fields and validators of find_command.idl,
// count_command.idl, distinct_command.idl and aggregate_command.idl).
func TestExplainChecksTheExplainedCommand(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	db := ts.Client.Database("test")
	mustInsert(t, db.Collection("c"), bson.D{{Key: "_id", Value: 1}})
	explain := func(inner bson.D) error {
		return db.RunCommand(ctx, bson.D{{Key: "explain", Value: inner}, {Key: "verbosity", Value: "queryPlanner"}}).Err()
	}
	find := func(extra ...bson.E) bson.D { return append(bson.D{{Key: "find", Value: "c"}}, extra...) }
	for _, c := range []struct {
		name  string
		inner bson.D
		code  int
	}{
		{"find limit negative", find(bson.E{Key: "limit", Value: -1}), 51024},
		{"find limit string", find(bson.E{Key: "limit", Value: "2"}), 14},
		{"find skip negative", find(bson.E{Key: "skip", Value: -3}), 51024},
		{"find skip string", find(bson.E{Key: "skip", Value: "1"}), 14},
		{"find batchSize negative", find(bson.E{Key: "batchSize", Value: -1}), 51024},
		{"find filter not a document", find(bson.E{Key: "filter", Value: 1}), 14},
		{"find unknown field", find(bson.E{Key: "limt", Value: 1}), 40415},
		{"find maxTimeMS string", find(bson.E{Key: "maxTimeMS", Value: "1"}), 2},
		{"count skip negative", bson.D{{Key: "count", Value: "c"}, {Key: "skip", Value: -1}}, 2},
		{"count limit string", bson.D{{Key: "count", Value: "c"}, {Key: "limit", Value: "1"}}, 2},
		{"distinct key not a string", bson.D{{Key: "distinct", Value: "c"}, {Key: "key", Value: 1}}, 14},
		{"aggregate cursor batchSize negative", bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{{Key: "batchSize", Value: -1}}}}, 51024},
		{"aggregate unknown field", bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{}}, {Key: "limit", Value: 1}}, 40415},
		{"find valid", find(bson.E{Key: "limit", Value: 2}, bson.E{Key: "skip", Value: 1}), 0},
		{"count valid negative limit", bson.D{{Key: "count", Value: "c"}, {Key: "limit", Value: -1}}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := explain(c.inner)
			if c.code == 0 {
				if err != nil {
					t.Fatalf("explain %v: %v", c.inner, err)
				}
				return
			}
			wantCode(t, err, c.code)
		})
	}
}
