package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/mongoerr"
)

// queryFile is one file of testdata/query: documents and cases against them.
type queryFile struct {
	Docs []bson.Raw `bson:"docs"`
	// Indexes are paths to index in the indexed run besides the fields of
	// the documents, such as positional paths.
	Indexes []string `bson:"indexes"`
	// GeoIndexes are key patterns of geo indexes ({loc: "2dsphere"}) the
	// indexed run builds too.
	GeoIndexes []bson.Raw `bson:"geoIndexes"`
	// IndexCollation is the collation of the indexed run's indexes; none
	// is the simple collation.
	IndexCollation bson.Raw `bson:"indexCollation"`
	Cases          []struct {
		Name    string          `bson:"name"`
		Filter  bson.Raw        `bson:"filter"`
		Sort    bson.Raw        `bson:"sort"`
		Expect  []bson.RawValue `bson:"expect"`
		Ordered bool            `bson:"ordered"`
		Error   int32           `bson:"error"`
		Exclude []bson.RawValue `bson:"exclude"`
		// Nearest cases ($near) expect the _ids nearest first, and
		// ErrorWithoutIndex is the code they fail with without a geo
		// index; Limit limits the query.
		Nearest           bool  `bson:"nearest"`
		ErrorWithoutIndex int32 `bson:"errorWithoutIndex"`
		Limit             int64 `bson:"limit"`
		// Collation is the collation the case's query names.
		Collation bson.Raw `bson:"collation"`
	} `bson:"cases"`
}

func openTestEngine(t testing.TB) *Engine {
	t.Helper()
	e, _ := openTestEngineClock(t)
	return e
}

// openTestEngineClock opens a store without a reaper in a temporary
// directory, on a manual clock that starts at 2026-01-01 UTC.
func openTestEngineClock(t testing.TB) (*Engine, *clock.Manual) {
	t.Helper()
	clock := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e, err := Open(t.TempDir(), Options{Clock: clock, NoReaper: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, clock
}

// indexedPaths lists the top-level and nested field paths of the documents,
// each of which gets an index in the indexed run.
func indexedPaths(docs []bson.Raw) []string {
	seen := map[string]bool{}
	var walk func(prefix string, d bson.Raw, depth int)
	walk = func(prefix string, d bson.Raw, depth int) {
		elems, _ := d.Elements()
		for _, el := range elems {
			p := prefix + el.Key()
			if el.Key() == "_id" && prefix == "" || strings.ContainsAny(el.Key(), ".$") || el.Key() == "" {
				continue
			}
			seen[p] = true
			if sub, ok := el.Value().DocumentOK(); ok && depth < 2 {
				walk(p+".", sub, depth+1)
			}
		}
	}
	for _, d := range docs {
		walk("", d, 0)
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// TestQueryConformance runs every case of testdata/query through the store
// twice, without secondary indexes and with an index on every field, and
// requires the same, expected, results both ways.
func TestQueryConformance(t *testing.T) {
	files, err := filepath.Glob("../testdata/query/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no conformance files in testdata/query")
	}
	e := openTestEngine(t)
	cases := 0
	for fi, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var qf queryFile
		if err := bson.UnmarshalExtJSON(data, false, &qf); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		// load fills a plain and an indexed collection with docs, and a
		// third with hashed indexes (conformance_hashed_test.go).
		load := func(plain, indexed string, docs []bson.Raw) {
			loadHashed(t, e, file, hashedOf(indexed), docs, qf.Indexes)
			for _, coll := range []string{plain, indexed} {
				if len(docs) == 0 {
					continue
				}
				res, err := e.Insert(context.Background(), "conf", coll, docs, true)
				if err != nil || len(res.Errors) > 0 {
					t.Fatalf("%s: insert: %v %v", file, err, res.Errors)
				}
			}
			fieldPaths := indexedPaths(docs)
			for i, p := range append(fieldPaths, qf.Indexes...) {
				ixSpec := bson.D{{Key: "key", Value: bson.D{{Key: p, Value: 1}}}}
				if len(qf.IndexCollation) > 0 {
					ixSpec = append(ixSpec, bson.E{Key: "collation", Value: qf.IndexCollation})
				}
				spec, _ := bson.Marshal(ixSpec)
				_, err := e.CreateIndexes(context.Background(), "conf", indexed, []bson.Raw{spec})
				if mongoerr.CodeOf(err) == record.AmbiguousFieldName && i < len(fieldPaths) {
					// MongoDB cannot build this index on these documents either.
					t.Logf("%s: no index on %s: %v", file, p, err)
					continue
				}
				if err != nil {
					t.Fatalf("%s: index on %s: %v", file, p, err)
				}
			}
			// $near needs a geo index: the hashed run has them too.
			for _, key := range qf.GeoIndexes {
				spec, _ := bson.Marshal(bson.D{{Key: "key", Value: key}})
				for _, coll := range []string{indexed, hashedOf(indexed)} {
					if _, err := e.CreateIndexes(context.Background(), "conf", coll, []bson.Raw{spec}); err != nil {
						t.Fatalf("%s: geo index %s: %v", file, key, err)
					}
				}
			}
		}
		plain, indexed := fmt.Sprintf("plain%d", fi), fmt.Sprintf("indexed%d", fi)
		load(plain, indexed, qf.Docs)
		for ci, c := range qf.Cases {
			cases++
			plain, indexed := plain, indexed
			if len(c.Exclude) > 0 {
				// The case runs on collections of its own, without the
				// documents it excludes.
				plain, indexed = fmt.Sprintf("plain%d_%d", fi, ci), fmt.Sprintf("indexed%d_%d", fi, ci)
				docs := slices.DeleteFunc(slices.Clone(qf.Docs), func(d bson.Raw) bool {
					return slices.ContainsFunc(c.Exclude, func(v bson.RawValue) bool {
						return keycodec.Compare(record.IDOf(d), toCore(v)) == 0
					})
				})
				load(plain, indexed, docs)
			}
			for _, coll := range []string{plain, indexed, hashedOf(indexed)} {
				name := fmt.Sprintf("%s/%s/%s", filepath.Base(file), c.Name, coll)
				got, err := e.findIDsIn(WithCollation(context.Background(), c.Collation), "conf", coll, c.Filter, c.Sort, c.Limit)
				wantErr := c.Error
				if coll == plain && c.ErrorWithoutIndex != 0 {
					wantErr = c.ErrorWithoutIndex
				}
				if wantErr != 0 {
					if mongoerr.CodeOf(err) != mongoerr.Code(wantErr) || err == nil {
						t.Errorf("%s: got error %v, want code %d", name, err, wantErr)
					}
					continue
				}
				if err != nil {
					t.Errorf("%s: %v", name, err)
					continue
				}
				want := make([]string, len(c.Expect))
				for i, v := range c.Expect {
					want[i] = string(keycodec.Append(nil, toCore(v)))
				}
				if !c.Ordered && !c.Nearest {
					slices.Sort(got)
					slices.Sort(want)
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s: filter %v sort %v: got %d ids, want %d (%v)", name, c.Filter, c.Sort, len(got), len(want), c.Expect)
				}
			}
		}
	}
	t.Logf("%d query cases, each without and with indexes", cases)
}

// findIDs runs a query and returns the keys of the matching _ids in result order.
func (e *Engine) findIDs(db, coll string, filter, sort bson.Raw) ([]string, error) {
	return e.findIDsIn(context.Background(), db, coll, filter, sort, 0)
}

// findIDsIn is findIDs under ctx, which may name a collation, and a limit
// (0: none).
func (e *Engine) findIDsIn(ctx context.Context, db, coll string, filter, sort bson.Raw, limit int64) ([]string, error) {
	cur, err := e.Find(ctx, db, coll, FindSpec{Filter: filter, Sort: sort, Limit: limit})
	if err != nil {
		return nil, err
	}
	docs, err := cur.All(context.Background())
	if err != nil {
		return nil, err
	}
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = string(keycodec.Append(nil, record.IDOf(d)))
	}
	return out, nil
}

func toCore(v bson.RawValue) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value}
}
