package expr

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/internal/conformance"
	"github.com/lethedb/lethe/mongoerr"
)

// The expression conformance files, testdata/aggregation/expr_*.json,
// describe MongoDB's expression language as data (see
// testdata/aggregation/README.md):
//
//	{"source": "...",
//	 "cases": [{"name": ..., "expr": <expression>, "doc": {...}, "now": {"$date": ...},
//	            "expect": <value>, "expectMissing": true, "error": code,
//	            "approx": true, "derived": "reasoning"}]}
//
// doc is $$ROOT (default {}), now is $$NOW. expect compares type and value
// strictly: 1 is not 1.0, field order counts, NaN equals NaN; approx
// compares doubles to a relative 1e-9. error is the code compiling or
// evaluating must fail with.
type exprConformanceFile struct {
	Source string                `bson:"source"`
	Cases  []exprConformanceCase `bson:"cases"`
}

type exprConformanceCase struct {
	Name          string        `bson:"name"`
	Expr          bson.RawValue `bson:"expr"`
	Doc           bson.Raw      `bson:"doc"`
	Now           *time.Time    `bson:"now"`
	Expect        bson.RawValue `bson:"expect"`
	ExpectMissing bool          `bson:"expectMissing"`
	Error         *int32        `bson:"error"`
	Approx        bool          `bson:"approx"`
	Derived       string        `bson:"derived"`
}

func TestExprConformance(t *testing.T) {
	files, err := filepath.Glob("../../testdata/aggregation/expr_*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Skip("no expression conformance files yet")
	}
	total := 0
	perOperator := map[string]int{}
	for _, file := range files {
		f := readExprConformanceFile(t, file)
		total += len(f.Cases)
		t.Run(filepath.Base(file), func(t *testing.T) {
			for _, c := range f.Cases {
				if op := topOperator(c.Expr); op != "" {
					perOperator[op]++
				}
				t.Run(c.Name, func(t *testing.T) { runExprConformanceCase(t, c) })
			}
		})
	}
	ops := make([]string, 0, len(perOperator))
	for op := range perOperator {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	var few []string
	for op := range exprOperators {
		if perOperator[op] < 5 {
			few = append(few, op)
		}
	}
	sort.Strings(few)
	t.Logf("%d expression conformance cases in %d files, over %d operators; fewer than 5 cases: %s",
		total, len(files), len(ops), strings.Join(few, " "))
}

func readExprConformanceFile(t *testing.T, path string) exprConformanceFile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f exprConformanceFile
	if err := bson.UnmarshalExtJSON(data, false, &f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(f.Cases) == 0 {
		t.Fatalf("%s: no cases", path)
	}
	return f
}

// topOperator is the operator of an operator document, or "".
func topOperator(v bson.RawValue) string {
	doc, ok := v.DocumentOK()
	if !ok {
		return ""
	}
	elems, err := doc.Elements()
	if err != nil || len(elems) != 1 || !strings.HasPrefix(elems[0].Key(), "$") {
		return ""
	}
	return elems[0].Key()
}

func runExprConformanceCase(t *testing.T, c exprConformanceCase) {
	t.Helper()
	var opts ExprOptions
	if c.Now != nil {
		opts.Now = *c.Now
	}
	doc := c.Doc
	if doc == nil {
		doc = bson.Raw(bsoncore.NewDocumentBuilder().Build())
	}
	ex, err := CompileExprWith(bsoncore.Value{Type: bsoncore.Type(c.Expr.Type), Data: c.Expr.Value}, opts)
	var got bsoncore.Value
	if err == nil {
		got, err = ex.Eval(doc)
	}
	switch {
	case c.Error != nil:
		if err == nil {
			t.Fatalf("%s: got %s, want error %d", c.Expr, describe(got), *c.Error)
		}
		if code := mongoerr.CodeOf(err); int32(code) != *c.Error {
			t.Fatalf("%s: error %v (code %d), want code %d", c.Expr, err, code, *c.Error)
		}
	case err != nil:
		t.Fatalf("%s: %v", c.Expr, err)
	case c.ExpectMissing:
		if got.Type != 0 {
			t.Fatalf("%s: got %s, want missing", c.Expr, describe(got))
		}
	default:
		if c.Expect.Type == 0 {
			t.Fatalf("case %q has neither expect, expectMissing nor error", c.Name)
		}
		want := bsoncore.Value{Type: bsoncore.Type(c.Expect.Type), Data: c.Expect.Value}
		if !conformance.Equal(got, want, c.Approx) {
			t.Fatalf("%s: got %s, want %s", c.Expr, describe(got), describe(want))
		}
	}
}

// describe shows a value with its type, since the comparison is strict.
func describe(v bsoncore.Value) string {
	if v.Type == 0 {
		return "missing"
	}
	return v.String() + " (" + bson.Type(v.Type).String() + ")"
}
