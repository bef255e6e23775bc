package engine

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/mongoerr"
	"github.com/lethedb/lethe/engine/pipeline"
)

// stageFile is one stage conformance file of testdata/aggregation (every
// file but expr_*.json), in the format of its README.
type stageFile struct {
	Source      string                `bson:"source"`
	Collections map[string][]bson.Raw `bson:"collections"`
	Indexes     map[string][]bson.Raw `bson:"indexes"`
	Views       bson.Raw              `bson:"views"`
	Cases       []stageCase           `bson:"cases"`
}

type stageCase struct {
	Name              string                `bson:"name"`
	Pipeline          []bson.Raw            `bson:"pipeline"`
	Expect            *[]bson.Raw           `bson:"expect"`
	Ordered           bool                  `bson:"ordered"`
	Approx            bool                  `bson:"approx"`
	Error             *int32                `bson:"error"`
	Collection        string                `bson:"collection"`
	Aggregate         any                   `bson:"aggregate"`
	Options           bson.Raw              `bson:"options"`
	ExpectCollections map[string][]bson.Raw `bson:"expectCollections"`
	ExpectCount       *int                  `bson:"expectCount"`
	Derived           string                `bson:"derived"`
}

// TestStageConformance runs the cases of the stage conformance files, each
// on a database of its own holding the file's collections and indexes.
func TestStageConformance(t *testing.T) {
	all, err := filepath.Glob("../testdata/aggregation/*.json")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range all {
		if !strings.HasPrefix(filepath.Base(f), "expr_") {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		t.Skip("no stage conformance files yet")
	}
	e := openTestEngine(t)
	total := 0
	perStage := map[string]int{}
	for fi, file := range files {
		sf := readStageFile(t, file)
		total += len(sf.Cases)
		t.Run(filepath.Base(file), func(t *testing.T) {
			if len(sf.Views) > 0 {
				t.Log("views are not run by this runner yet; cases on them are skipped")
			}
			for ci, c := range sf.Cases {
				for _, st := range c.Pipeline {
					if name, _, err := pipeline.StageOf(st); err == nil {
						perStage[name]++
					}
				}
				db := fmt.Sprintf("agg%d_%d", fi, ci)
				t.Run(c.Name, func(t *testing.T) { runStageCase(t, e, db, &sf, c) })
			}
		})
	}
	names := make([]string, 0, len(perStage))
	for n := range perStage {
		names = append(names, fmt.Sprintf("%s:%d", n, perStage[n]))
	}
	sort.Strings(names)
	t.Logf("%d stage conformance cases in %d files; stages used: %s", total, len(files), strings.Join(names, " "))
}

func readStageFile(t *testing.T, path string) stageFile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f stageFile
	if err := bson.UnmarshalExtJSON(data, false, &f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(f.Cases) == 0 {
		t.Fatalf("%s: no cases", path)
	}
	return f
}

func runStageCase(t *testing.T, e *Engine, db string, f *stageFile, c stageCase) {
	coll := c.Collection
	if coll == "" {
		coll = "c"
	}
	if views, _ := f.Views.Elements(); len(views) > 0 {
		if _, err := f.Views.LookupErr(coll); err == nil {
			t.Skipf("%s is a view", coll)
		}
	}
	for name, docs := range f.Collections {
		if len(docs) == 0 {
			if err := e.CreateCollection(db, name, CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if res, err := e.Insert(db, name, docs, true); err != nil || len(res.Errors) > 0 {
			t.Fatalf("insert into %s: %v %v", name, err, res.Errors)
		}
	}
	for name, specs := range f.Indexes {
		if _, err := e.CreateIndexes(db, name, specs); err != nil {
			t.Fatalf("indexes of %s: %v", name, err)
		}
	}
	stages := c.Pipeline
	var opts AggregateOptions
	if c.Options != nil {
		if v, err := c.Options.LookupErr("allowDiskUse"); err == nil {
			opts.AllowDiskUse = v.Boolean()
		}
		if v, err := c.Options.LookupErr("let"); err == nil {
			l, err := ParseLet(v.Document(), e.clock.Now())
			if err == nil {
				stages, err = l.Pipeline(stages)
			}
			if err != nil {
				checkStageError(t, c, err)
				return
			}
		}
	}
	ctx := context.Background()
	var got []bson.Raw
	var err error
	if c.Aggregate != nil {
		got, err = e.AggregateDB(ctx, db, stages, opts)
	} else {
		got, err = e.Aggregate(ctx, db, coll, stages, opts)
	}
	if c.Error != nil || err != nil {
		checkStageError(t, c, err)
		return
	}
	switch {
	case c.ExpectCount != nil:
		if len(got) != *c.ExpectCount {
			t.Errorf("%d documents, want %d: %v", len(got), *c.ExpectCount, got)
		}
	case c.Expect != nil:
		if msg := sameDocs(got, *c.Expect, c.Ordered, c.Approx); msg != "" {
			t.Errorf("%s\ngot  %v\nwant %v", msg, got, *c.Expect)
		}
	case c.ExpectCollections == nil:
		t.Fatalf("case %q has neither expect, expectCount, expectCollections nor error", c.Name)
	}
	for name, want := range c.ExpectCollections {
		cur, err := e.Find(ctx, db, name, FindSpec{})
		if err != nil {
			t.Fatal(err)
		}
		have, err := cur.All(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if msg := sameDocs(have, want, false, c.Approx); msg != "" {
			t.Errorf("collection %s: %s\ngot  %v\nwant %v", name, msg, have, want)
		}
	}
}

func checkStageError(t *testing.T, c stageCase, err error) {
	t.Helper()
	switch {
	case c.Error == nil:
		t.Fatalf("%v", err)
	case err == nil:
		t.Fatalf("no error, want code %d", *c.Error)
	case int32(mongoerr.CodeOf(err)) != *c.Error:
		t.Fatalf("error %v (code %d), want code %d", err, mongoerr.CodeOf(err), *c.Error)
	}
}

// sameDocs compares documents strictly, in order or as multisets, and
// says how they differ.
func sameDocs(got, want []bson.Raw, ordered, approx bool) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d documents, want %d", len(got), len(want))
	}
	doc := func(d bson.Raw) bsoncore.Value { return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d} }
	if ordered {
		for i := range got {
			if !strictlyEqual(doc(got[i]), doc(want[i]), approx) {
				return fmt.Sprintf("document %d differs", i)
			}
		}
		return ""
	}
	used := make([]bool, len(got))
	for i, w := range want {
		j := -1
		for k, g := range got {
			if !used[k] && strictlyEqual(doc(g), doc(w), approx) {
				j = k
				break
			}
		}
		if j < 0 {
			return fmt.Sprintf("expected document %d is not in the output", i)
		}
		used[j] = true
	}
	return ""
}

// strictlyEqual compares values strictly: same types, same values, same
// field order; NaN equals NaN; approx compares doubles to a relative 1e-9.
func strictlyEqual(a, b bsoncore.Value, approx bool) bool {
	if a.Type != b.Type {
		return false
	}
	switch a.Type {
	case bsoncore.TypeDouble:
		x, y := a.Double(), b.Double()
		if math.IsNaN(x) || math.IsNaN(y) {
			return math.IsNaN(x) && math.IsNaN(y)
		}
		if approx && x != y {
			return math.Abs(x-y) <= 1e-9*math.Max(math.Abs(x), math.Abs(y))
		}
		return x == y
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		ea, errA := bsoncore.Document(a.Data).Elements()
		eb, errB := bsoncore.Document(b.Data).Elements()
		if errA != nil || errB != nil || len(ea) != len(eb) {
			return false
		}
		for i := range ea {
			if a.Type == bsoncore.TypeEmbeddedDocument && ea[i].Key() != eb[i].Key() {
				return false
			}
			if !strictlyEqual(ea[i].Value(), eb[i].Value(), approx) {
				return false
			}
		}
		return true
	}
	return string(a.Data) == string(b.Data)
}
