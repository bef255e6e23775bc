package engine

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/engine/update"
	"github.com/lethedb/lethe/mongoerr"
)

// updateNow is the time the update conformance files expect $currentDate
// to write.
var updateNow = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

type updateFileCase struct {
	Name         string     `bson:"name"`
	Doc          bson.Raw   `bson:"doc"`
	Update       bson.Raw   `bson:"update"`
	Pipeline     []bson.Raw `bson:"pipeline"`
	ArrayFilters []bson.Raw `bson:"arrayFilters"`
	Positional   *int       `bson:"positional"`
	UpsertFilter bson.Raw   `bson:"upsertFilter"`
	Expect       bson.Raw   `bson:"expect"`
	Error        int32      `bson:"error"`
}

type projectionFileCase struct {
	Name       string   `bson:"name"`
	Doc        bson.Raw `bson:"doc"`
	Projection bson.Raw `bson:"projection"`
	Positional *int     `bson:"positional"`
	Expect     bson.Raw `bson:"expect"`
	Error      int32    `bson:"error"`
}

func readCases[T any](t *testing.T, pattern string) map[string][]T {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no files %s: %v", pattern, err)
	}
	out := map[string][]T{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var file struct {
			Cases []T `bson:"cases"`
		}
		if err := bson.UnmarshalExtJSON(data, false, &file); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[filepath.Base(f)] = file.Cases
	}
	return out
}

// withAndWithoutIndexes runs fn on a fresh collection holding doc, once
// without secondary indexes and once with an index on every field of doc.
func withAndWithoutIndexes(t *testing.T, e *Engine, name string, doc bson.Raw, fn func(coll string)) {
	for _, indexed := range []bool{false, true} {
		coll := fmt.Sprintf("c%x", len(name)*7919+int(time.Now().UnixNano()%1e6))
		if indexed {
			for _, p := range indexedPaths([]bson.Raw{doc}) {
				spec, _ := bson.Marshal(bson.D{{Key: "key", Value: bson.D{{Key: p, Value: 1}}}})
				if _, err := e.CreateIndexes(context.Background(), "w", coll, []bson.Raw{spec}); err != nil {
					t.Fatalf("%s: index on %s: %v", name, p, err)
				}
			}
		}
		if doc != nil {
			if res, err := e.Insert(context.Background(), "w", coll, []bson.Raw{doc}, true); err != nil || len(res.Errors) > 0 {
				t.Fatalf("%s: insert: %v %v", name, err, res.Errors)
			}
		}
		fn(coll)
		if _, err := e.DropCollection(context.Background(), "w", coll); err != nil {
			t.Fatal(err)
		}
	}
}

// TestUpdateConformanceThroughStore replays testdata/update through the
// store, with and without indexes: the stored result must be the file's.
func TestUpdateConformanceThroughStore(t *testing.T) {
	e := openTestEngine(t)
	n := 0
	for file, cases := range readCases[updateFileCase](t, "../testdata/update/*.json") {
		for _, c := range cases {
			// Positional cases name the matched element directly; documents
			// without _id get a generated one the file cannot expect.
			if c.Positional != nil || (c.UpsertFilter == nil && record.IDOf(c.Doc).Type == 0) || (c.Update == nil && c.Pipeline == nil) {
				continue
			}
			name := file + "/" + c.Name
			n++
			withAndWithoutIndexes(t, e, name, c.Doc, func(coll string) {
				opts := update.Options{Now: updateNow, ArrayFilters: c.ArrayFilters}
				var u *update.Update
				var err error
				if c.Pipeline != nil {
					u, err = update.CompilePipeline(c.Pipeline, opts)
				} else {
					u, err = update.Compile(c.Update, opts)
				}
				if err == nil {
					filter := c.UpsertFilter
					if filter == nil {
						filter = bsonDoc("_id", bson.RawValue{Type: bson.Type(record.IDOf(c.Doc).Type), Value: record.IDOf(c.Doc).Data})
					}
					_, err = e.Update(context.Background(), "w", coll, UpdateSpec{Filter: filter, Update: u, Upsert: c.UpsertFilter != nil})
				}
				if c.Error != 0 {
					if mongoerr.CodeOf(err) != mongoerr.Code(c.Error) {
						t.Errorf("%s: got %v, want code %d", name, err, c.Error)
					}
					return
				}
				if err != nil {
					t.Errorf("%s: %v", name, err)
					return
				}
				cur, err := e.Find(context.Background(), "w", coll, FindSpec{})
				if err != nil {
					t.Fatal(err)
				}
				docs, err := cur.All(context.Background())
				if err != nil || len(docs) != 1 {
					t.Errorf("%s: stored %d docs, %v", name, len(docs), err)
					return
				}
				got := docs[0]
				if record.IDOf(c.Expect).Type == 0 {
					got = withoutID(got)
				}
				if !bytes.Equal(got, c.Expect) {
					t.Errorf("%s:\n got %v\nwant %v", name, got, c.Expect)
				}
			})
		}
	}
	if n < 250 {
		t.Errorf("only %d update cases ran through the store", n)
	}
	t.Logf("%d update cases, each without and with indexes", n)
}

func withoutID(doc bson.Raw) bson.Raw {
	elems, _ := doc.Elements()
	d := bson.D{}
	for _, el := range elems {
		if el.Key() != "_id" {
			d = append(d, bson.E{Key: el.Key(), Value: el.Value()})
		}
	}
	raw, _ := bson.Marshal(d)
	return raw
}

// TestProjectionConformanceThroughStore replays testdata/projection through
// find, with and without indexes.
func TestProjectionConformanceThroughStore(t *testing.T) {
	e := openTestEngine(t)
	n := 0
	for file, cases := range readCases[projectionFileCase](t, "../testdata/projection/*.json") {
		for _, c := range cases {
			// Stored documents have _id first, as in MongoDB.
			if first, err := c.Doc.IndexErr(0); c.Positional != nil || err != nil || first.Key() != "_id" {
				continue
			}
			name := file + "/" + c.Name
			n++
			withAndWithoutIndexes(t, e, name, c.Doc, func(coll string) {
				id := record.IDOf(c.Doc)
				cur, err := e.Find(context.Background(), "w", coll, FindSpec{Filter: bsonDoc("_id", bson.RawValue{Type: bson.Type(id.Type), Value: id.Data}), Projection: c.Projection})
				var docs []bson.Raw
				if err == nil {
					docs, err = cur.All(context.Background())
				}
				if c.Error != 0 {
					if mongoerr.CodeOf(err) != mongoerr.Code(c.Error) {
						t.Errorf("%s: got %v, want code %d", name, err, c.Error)
					}
					return
				}
				if err != nil || len(docs) != 1 {
					t.Errorf("%s: %d docs, %v", name, len(docs), err)
					return
				}
				if !bytes.Equal(docs[0], c.Expect) {
					t.Errorf("%s:\n got %v\nwant %v", name, docs[0], c.Expect)
				}
			})
		}
	}
	if n < 80 {
		t.Errorf("only %d projection cases ran through the store", n)
	}
	t.Logf("%d projection cases, each without and with indexes", n)
}
