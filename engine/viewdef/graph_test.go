package viewdef

import (
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/mongoerr"
)

// A view's pipeline reads other namespaces through $lookup, $graphLookup,
// $unionWith and the pipelines inside them and $facet: they are edges of
// the graph whose cycles are refused.
func TestViewInvolvedNamespaces(t *testing.T) {
	p := stages(t,
		bson.D{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "a"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$unionWith", Value: "b"}}}}}}},
		bson.D{{Key: "$facet", Value: bson.D{{Key: "x", Value: bson.A{bson.D{{Key: "$graphLookup", Value: bson.D{{Key: "from", Value: "c"}}}}}}}}},
		bson.D{{Key: "$unionWith", Value: bson.D{{Key: "coll", Value: "d"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "e"}}}}}}}}},
		bson.D{{Key: "$match", Value: bson.D{{Key: "from", Value: "f"}}}},
	)
	if got := fmt.Sprint(InvolvedNamespaces(p)); got != "[a b c d e]" {
		t.Fatalf("involved namespaces %s, want [a b c d e]", got)
	}
	g := viewGraph{db: "db", views: map[string]*View{"db.a": {Name: "a", ViewOn: "x", Pipeline: stages(t, bson.D{{Key: "$unionWith", Value: "b"}})}}, changed: &View{Name: "b", ViewOn: "c"}}
	wantCode(t, "no cycle", g.check(), 0)
	g.changed.Pipeline = stages(t, bson.D{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "a"}}}})
	wantCode(t, "b looks up a, which reads b", g.check(), 5)
}

func stages(t testing.TB, ds ...bson.D) []bson.Raw {
	t.Helper()
	out := []bson.Raw{}
	for _, d := range ds {
		raw, err := bson.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, raw)
	}
	return out
}

// wantCode checks err's MongoDB code; 0 is no error.
func wantCode(t testing.TB, what string, err error, code int) {
	t.Helper()
	got := 0
	if me, ok := mongoerr.As(err); ok {
		got = int(me.Code)
	} else if err != nil {
		got = -1
	}
	if got != code {
		t.Fatalf("%s: got %v (code %d), want code %d", what, err, got, code)
	}
}
