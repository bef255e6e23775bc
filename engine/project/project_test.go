package project

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/mongoerr"
)

// projectionCase is one case of testdata/projection: doc projected by
// projection, with positional standing for the query's "$" match (-1 by
// default), expecting either the result byte for byte or an error code.
type projectionCase struct {
	Name       string   `bson:"name"`
	Doc        bson.Raw `bson:"doc"`
	Projection bson.Raw `bson:"projection"`
	Positional *int     `bson:"positional"`
	Expect     bson.Raw `bson:"expect"`
	Error      int      `bson:"error"`
	// Derived explains an expectation reasoned out rather than taken from
	// MongoDB's documentation or observed behaviour.
	Derived string `bson:"derived"`
}

func TestCases(t *testing.T) {
	files, err := filepath.Glob("../../testdata/projection/*.json")
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
			Cases []projectionCase `bson:"cases"`
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

func runCase(t *testing.T, c projectionCase) {
	p, err := Compile(c.Projection)
	var out bson.Raw
	if err == nil {
		positional := -1
		if c.Positional != nil {
			positional = *c.Positional
		}
		out, err = p.Apply(c.Doc, positional)
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
}

func TestIsEmpty(t *testing.T) {
	for spec, want := range map[string]bool{`{}`: true, `{"a": 1}`: false, `{"_id": 0}`: false} {
		var raw bson.Raw
		if err := bson.UnmarshalExtJSON([]byte(spec), false, &raw); err != nil {
			t.Fatal(err)
		}
		p, err := Compile(raw)
		if err != nil {
			t.Fatal(err)
		}
		if p.IsEmpty() != want {
			t.Errorf("%s: IsEmpty() = %v", spec, !want)
		}
	}
}
