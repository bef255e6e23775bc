package engine

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/keycodec"
)

// viewsFile is testdata/aggregation/views.json, in the format of the
// aggregation stage files (testdata/aggregation/README.md), with the keys
// reads through views use.
type viewsFile struct {
	Collections map[string][]bson.Raw `bson:"collections"`
	Indexes     map[string][]bson.Raw `bson:"indexes"`
	Views       map[string]struct {
		ViewOn   string     `bson:"viewOn"`
		Pipeline []bson.Raw `bson:"pipeline"`
	} `bson:"views"`
	Cases []struct {
		Name       string     `bson:"name"`
		Collection string     `bson:"collection"`
		Pipeline   []bson.Raw `bson:"pipeline"`
		Expect     []bson.Raw `bson:"expect"`
		Ordered    bool       `bson:"ordered"`
		Error      int32      `bson:"error"`
	} `bson:"cases"`
}

// TestViewsConformance runs the cases of views.json: each reads through a
// view as the server does, the view's resolved pipeline first.
func TestViewsConformance(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "testdata", "aggregation", "views.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f viewsFile
	if err := bson.UnmarshalExtJSON(data, false, &f); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range f.Cases {
		t.Run(c.Name, func(t *testing.T) {
			e := openTestEngine(t)
			for name, docs := range f.Collections {
				if _, err := e.Insert("db", name, docs, true); err != nil {
					t.Fatal(err)
				}
			}
			for name, specs := range f.Indexes {
				if _, err := e.CreateIndexes("db", name, specs); err != nil {
					t.Fatal(err)
				}
			}
			for name, v := range f.Views {
				if err := e.CreateView(ctx, "db", name, v.ViewOn, v.Pipeline); err != nil {
					t.Fatalf("view %s: %v", name, err)
				}
			}
			coll := c.Collection
			if coll == "" {
				coll = "c"
			}
			source, vp, _, err := e.ResolveView("db", coll)
			var got []bson.Raw
			if err == nil {
				got, err = e.Aggregate(ctx, "db", source, append(vp, c.Pipeline...), AggregateOptions{})
			}
			if c.Error != 0 {
				wantCode(t, "read", err, int(c.Error))
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !sameDocs(got, c.Expect, c.Ordered) {
				t.Fatalf("got %s, want %s", rawList(got), rawList(c.Expect))
			}
		})
	}
}

// sameDocs compares documents as values, numbers by value, in order or as
// multisets.
func sameDocs(got, want []bson.Raw, ordered bool) bool {
	if len(got) != len(want) {
		return false
	}
	cmp := func(a, b bson.Raw) int {
		return keycodec.Compare(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: a}, bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: b})
	}
	if !ordered {
		got, want = slices.Clone(got), slices.Clone(want)
		slices.SortFunc(got, cmp)
		slices.SortFunc(want, cmp)
	}
	return slices.EqualFunc(got, want, func(a, b bson.Raw) bool { return cmp(a, b) == 0 })
}
