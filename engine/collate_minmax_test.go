package engine

import (
	"context"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/mongoerr"
)

// TestMinMaxUnderCollation: find's min and max bound the hinted index's
// keys as mongod's planner makes them (indexCompatibleMaxMin and
// stripFieldNamesAndApplyCollation in src/mongo/db/query/query_planner.cpp):
// a bound holding a string fits only an index of the query's collation,
// 51174 otherwise, and then bounds the collation keys the index holds;
// numbers bound any index.
func TestMinMaxUnderCollation(t *testing.T) {
	e := openTestEngine(t)
	ctx := context.Background()
	specs := []bson.Raw{
		mustRaw(t, bson.D{{Key: "key", Value: bson.D{{Key: "s", Value: 1}}}, {Key: "name", Value: "s_ci"}, {Key: "collation", Value: enStrength2}}),
		mustRaw(t, bson.D{{Key: "key", Value: bson.D{{Key: "n", Value: 1}}}, {Key: "name", Value: "n_ci"}, {Key: "collation", Value: enStrength2}}),
	}
	if _, err := e.CreateIndexes(ctx, "db", "c", specs); err != nil {
		t.Fatal(err)
	}
	var docs []bson.Raw
	for i, s := range []string{"apple", "Banana", "cherry", "Date", "elder"} {
		docs = append(docs, mustRaw(t, bson.D{{Key: "_id", Value: int32(i + 1)}, {Key: "s", Value: s}, {Key: "n", Value: int32(i + 1)}}))
	}
	if res, err := e.Insert(ctx, "db", "c", docs, true); err != nil || len(res.Errors) > 0 {
		t.Fatal(err, res.Errors)
	}
	find := func(coll bson.D, hint string, min, max bson.D) ([]int32, error) {
		qctx := ctx
		if coll != nil {
			qctx = WithCollation(ctx, mustRaw(t, coll))
		}
		cur, err := e.Find(qctx, "db", "c", FindSpec{Hint: indexNameHint(hint), Min: mustRaw(t, min), Max: mustRaw(t, max)})
		if err != nil {
			return nil, err
		}
		got, err := cur.All(qctx)
		return ids(got), err
	}
	// Under the index's collation, B and d bound banana to cherry
	// whatever their case.
	got, err := find(enStrength2, "s_ci", bson.D{{Key: "s", Value: "b"}}, bson.D{{Key: "s", Value: "D"}})
	if err != nil || !slices.Equal(got, []int32{2, 3}) {
		t.Errorf("min b, max D under the index's collation: %v %v, want [2 3]", got, err)
	}
	// Under the simple collation, string bounds do not fit the index.
	if _, err := find(nil, "s_ci", bson.D{{Key: "s", Value: "b"}}, bson.D{{Key: "s", Value: "D"}}); mongoerr.CodeOf(err) != 51174 {
		t.Errorf("string bounds under another collation: %v, want 51174", err)
	}
	// Numbers bound it under any collation.
	got, err = find(nil, "n_ci", bson.D{{Key: "n", Value: 2}}, bson.D{{Key: "n", Value: 4}})
	if err != nil || !slices.Equal(got, []int32{2, 3}) {
		t.Errorf("numeric bounds under another collation: %v %v, want [2 3]", got, err)
	}
}

// indexNameHint is a hint naming an index.
func indexNameHint(name string) bson.RawValue {
	typ, v, _ := bson.MarshalValue(name)
	return bson.RawValue{Type: typ, Value: v}
}
