package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/internal/conformance"
	"github.com/lethedb/lethe/engine/letvars"
	"github.com/lethedb/lethe/engine/pipeline"
	"github.com/lethedb/lethe/mongoerr"
)

// stageFile is one stage conformance file of testdata/aggregation (every
// file but expr_*.json), in the format of its README.
type stageFile struct {
	Source      string                `bson:"source"`
	Collections map[string][]bson.Raw `bson:"collections"`
	Indexes     map[string][]bson.Raw `bson:"indexes"`
	Views       map[string]struct {
		ViewOn   string     `bson:"viewOn"`
		Pipeline []bson.Raw `bson:"pipeline"`
	} `bson:"views"`
	Cases []stageCase `bson:"cases"`
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
	for name, docs := range f.Collections {
		if len(docs) == 0 {
			if err := e.CreateCollection(context.Background(), db, name, CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if res, err := e.Insert(context.Background(), db, name, docs, true); err != nil || len(res.Errors) > 0 {
			t.Fatalf("insert into %s: %v %v", name, err, res.Errors)
		}
	}
	for name, specs := range f.Indexes {
		if _, err := e.CreateIndexes(context.Background(), db, name, specs); err != nil {
			t.Fatalf("indexes of %s: %v", name, err)
		}
	}
	ctx := context.Background()
	for name, v := range f.Views {
		if err := e.CreateView(ctx, db, name, v.ViewOn, v.Pipeline); err != nil {
			t.Fatalf("view %s: %v", name, err)
		}
	}
	stages := c.Pipeline
	var opts AggregateOptions
	if c.Options != nil {
		if v, err := c.Options.LookupErr("allowDiskUse"); err == nil {
			opts.AllowDiskUse = v.Boolean()
		}
		if v, err := c.Options.LookupErr("collation"); err == nil {
			ctx = WithCollation(ctx, v.Document())
		}
		if v, err := c.Options.LookupErr("let"); err == nil {
			l, err := letvars.ParseLet(v.Document(), e.clock.Now())
			if err == nil {
				stages, err = l.Pipeline(stages)
			}
			if err != nil {
				checkStageError(t, c, err)
				return
			}
		}
	}
	var got []bson.Raw
	var err error
	if c.Aggregate != nil {
		got, err = e.AggregateDB(ctx, db, stages, opts)
	} else {
		// A read through a view runs the view's resolved pipeline first,
		// as the server does.
		source, viewStages, _, rerr := e.ResolveView(ctx, db, coll)
		if err = rerr; err == nil {
			got, err = e.Aggregate(ctx, db, source, append(viewStages, stages...), opts)
		}
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
			if !conformance.Equal(doc(got[i]), doc(want[i]), approx) {
				return fmt.Sprintf("document %d differs", i)
			}
		}
		return ""
	}
	used := make([]bool, len(got))
	for i, w := range want {
		j := -1
		for k, g := range got {
			if !used[k] && conformance.Equal(doc(g), doc(w), approx) {
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
