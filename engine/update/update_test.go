package update

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/mongoerr"
)

// testNow is the time $currentDate writes in the test cases.
var testNow = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

// updateCase is one case of testdata/update. A case either applies update,
// or pipeline, an update given as an array of stages, to doc (with
// positional standing for the query's "$" match, -1 by default), or, with
// upsertFilter, builds the document an upsert inserts. It expects either the
// resulting document, byte for byte, or an error code.
type updateCase struct {
	Name         string        `bson:"name"`
	Doc          bson.Raw      `bson:"doc"`
	Update       bson.Raw      `bson:"update"`
	Pipeline     bson.RawValue `bson:"pipeline"`
	ArrayFilters []bson.Raw    `bson:"arrayFilters"`
	Positional   *int          `bson:"positional"`
	UpsertFilter bson.Raw      `bson:"upsertFilter"`
	Expect       bson.Raw      `bson:"expect"`
	Modified     *bool         `bson:"modified"`
	Error        int           `bson:"error"`
	// Derived explains an expectation reasoned out rather than taken from
	// MongoDB's documentation or observed behaviour.
	Derived string `bson:"derived"`
}

func TestCases(t *testing.T) {
	files, err := filepath.Glob("../../testdata/update/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	total := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var f struct {
			Cases []updateCase `bson:"cases"`
		}
		if err := bson.UnmarshalExtJSON(data, false, &f); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, c := range f.Cases {
			total++
			t.Run(filepath.Base(file)+"/"+c.Name, func(t *testing.T) { runCase(t, c) })
		}
	}
	t.Logf("%d cases", total)
}

func runCase(t *testing.T, c updateCase) {
	opts := Options{Now: testNow, ArrayFilters: c.ArrayFilters}
	var u *Update
	var err error
	if c.Pipeline.Type != 0 {
		u, err = CompilePipeline(stages(t, c.Pipeline), opts)
	} else {
		u, err = Compile(c.Update, opts)
	}
	var out bson.Raw
	var changed bool
	if err == nil {
		if c.UpsertFilter != nil {
			out, err = u.ApplyUpsert(c.UpsertFilter)
			changed = true
		} else {
			positional := -1
			if c.Positional != nil {
				positional = *c.Positional
			}
			out, changed, err = u.Apply(c.Doc, positional)
		}
	}
	if c.Error != 0 {
		if err == nil {
			t.Fatalf("expected error %d, got %s", c.Error, out)
		}
		if code := mongoerr.CodeOf(err); int(code) != c.Error {
			t.Fatalf("expected error %d, got %d: %v", c.Error, code, err)
		}
		t.Log(err)
		return
	}
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	if !bytes.Equal(out, c.Expect) {
		t.Fatalf("got      %s\nexpected %s", out, c.Expect)
	}
	if c.Modified != nil && *c.Modified != changed {
		t.Fatalf("modified: got %v, expected %v", changed, *c.Modified)
	}
}

// stages returns the documents of a pipeline.
func stages(t *testing.T, pipeline bson.RawValue) []bson.Raw {
	t.Helper()
	arr, ok := pipeline.ArrayOK()
	if !ok {
		t.Fatal("pipeline is not an array")
	}
	values, err := arr.Values()
	if err != nil {
		t.Fatal(err)
	}
	docs := make([]bson.Raw, len(values))
	for i, v := range values {
		d, ok := v.DocumentOK()
		if !ok {
			t.Fatalf("pipeline stage %d is not a document", i)
		}
		docs[i] = d
	}
	return docs
}

// TestApplyDoesNotAliasInput checks that applying an update leaves the
// input document and the compiled update reusable.
func TestApplyDoesNotAliasInput(t *testing.T) {
	doc := extJSON(t, `{"_id": 1, "a": [1, 2], "b": {"c": 1}}`)
	orig := bytes.Clone(doc)
	u, err := Compile(extJSON(t, `{"$push": {"a": 3}, "$set": {"b.d": 2}}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	first, _, err := u.Apply(doc, -1)
	if err != nil {
		t.Fatal(err)
	}
	second, _, err := u.Apply(doc, -1)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(doc, orig) || !bytes.Equal(first, second) {
		t.Fatalf("input changed or results differ: %s / %s", first, second)
	}
}

func extJSON(t *testing.T, s string) bson.Raw {
	t.Helper()
	var doc bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(s), false, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}
