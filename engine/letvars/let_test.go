package letvars

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/expr"
)

func TestLetSubstitution(t *testing.T) {
	letDoc, _ := bson.Marshal(bson.D{{Key: "x", Value: 10}, {Key: "this", Value: "outer"}, {Key: "gone", Value: "$$REMOVE"}})
	l, err := ParseLet(letDoc, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := bson.Marshal(bson.D{{Key: "arr", Value: bson.A{1, 2}}})
	for _, c := range []struct {
		expr any
		want string
	}{
		{"$$x", `10`},
		{bson.D{{Key: "$literal", Value: "$$x"}}, `"$$x"`},
		{bson.D{{Key: "$add", Value: bson.A{"$$x", 1}}}, `11`},
		// $filter and $map bind this; $reduce binds this and value.
		{bson.D{{Key: "$map", Value: bson.D{{Key: "input", Value: "$arr"}, {Key: "in", Value: "$$this"}}}}, `[1,2]`},
		{bson.D{{Key: "$filter", Value: bson.D{{Key: "input", Value: "$arr"}, {Key: "cond", Value: bson.D{{Key: "$gt", Value: bson.A{"$$this", 1}}}}}}}, `[2]`},
		{bson.D{{Key: "$reduce", Value: bson.D{{Key: "input", Value: "$arr"}, {Key: "initialValue", Value: "$$x"}, {Key: "in", Value: bson.D{{Key: "$add", Value: bson.A{"$$value", "$$this"}}}}}}}, `13`},
		// Outside the binding operator the command's variable shows.
		{bson.A{"$$this", bson.D{{Key: "$map", Value: bson.D{{Key: "input", Value: bson.A{"$$this"}}, {Key: "as", Value: "y"}, {Key: "in", Value: "$$this"}}}}}, `["outer",["outer"]]`},
		{bson.D{{Key: "$ifNull", Value: bson.A{"$$gone", "none"}}}, `"none"`},
	} {
		raw, _ := bson.Marshal(bson.D{{Key: "e", Value: c.expr}})
		v := bsoncore.Document(raw).Lookup("e")
		ex, err := expr.CompileExpr((&rewriter{Let: l}).expr(v, nil))
		if err != nil {
			t.Errorf("%v: %v", c.expr, err)
			continue
		}
		got, err := ex.Eval(doc)
		if err != nil {
			t.Errorf("%v: %v", c.expr, err)
			continue
		}
		s := compact(bson.RawValue{Type: bson.Type(got.Type), Value: got.Data})
		if s != c.want {
			t.Errorf("%v = %s, want %s", c.expr, s, c.want)
		}
	}
}

// compact renders a value as relaxed extended JSON.
func compact(v bson.RawValue) string {
	doc, _ := bson.Marshal(bson.D{{Key: "v", Value: v}})
	var d bson.D
	if err := bson.Unmarshal(doc, &d); err != nil {
		return v.String()
	}
	out, err := bson.MarshalExtJSON(d, false, false)
	if err != nil {
		return v.String()
	}
	return string(out[len(`{"v":`) : len(out)-1])
}
