package query

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/mongoerr"
)

// The conformance files in testdata/query describe MongoDB's query behaviour
// as data, so that the storage layer can replay them with and without
// indexes. Each file holds documents and cases, in extended JSON:
//
//	{"docs": [{"_id": 1, "a": 5}, ...],
//	 "cases": [{"name": ..., "filter": {...}, "sort": {...},
//	            "expect": [_id, ...], "ordered": true,
//	            "error": code, "exclude": [_id, ...], "derived": "reasoning"}]}
//
// expect lists the _ids of the matching documents, in any order unless
// ordered is set, when it is the order after sorting (only total sorts are
// used). error is the code compiling the filter or sort, or evaluating a
// $expr against a document, must fail with. exclude leaves documents out of
// the collection for that case, as a $expr that fails on them would fail
// the whole query. derived marks cases reasoned out rather than taken from
// MongoDB's documentation.
type conformanceFile struct {
	Docs  []bson.Raw        `bson:"docs"`
	Cases []conformanceCase `bson:"cases"`
}

type conformanceCase struct {
	Name    string          `bson:"name"`
	Filter  bson.Raw        `bson:"filter"`
	Sort    bson.Raw        `bson:"sort"`
	Expect  []bson.RawValue `bson:"expect"`
	Ordered bool            `bson:"ordered"`
	Error   *int32          `bson:"error"`
	Exclude []bson.RawValue `bson:"exclude"`
	Derived string          `bson:"derived"`
	// Nearest, ErrorWithoutIndex and Limit are for the storage layer's
	// $near cases, whose order and limit come from a geo index: the
	// matcher checks only which documents are within their bounds, and
	// skips a case with a limit.
	Nearest           bool  `bson:"nearest"`
	ErrorWithoutIndex int32 `bson:"errorWithoutIndex"`
	Limit             int64 `bson:"limit"`
	// Collation is the collation the case runs under; none is simple.
	Collation bson.Raw `bson:"collation"`
}

func TestConformance(t *testing.T) {
	files, err := filepath.Glob("../../testdata/query/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no conformance files: %v", err)
	}
	total := 0
	for _, file := range files {
		f := readConformanceFile(t, file)
		total += len(f.Cases)
		t.Run(filepath.Base(file), func(t *testing.T) {
			for _, c := range f.Cases {
				t.Run(c.Name, func(t *testing.T) { runConformanceCase(t, f.Docs, c) })
			}
		})
	}
	t.Logf("%d conformance cases in %d files", total, len(files))
}

func readConformanceFile(t *testing.T, file string) conformanceFile {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var f conformanceFile
	if err := bson.UnmarshalExtJSON(data, false, &f); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	names := map[string]bool{}
	for _, c := range f.Cases {
		if names[c.Name] {
			t.Fatalf("%s: duplicate case name %q", file, c.Name)
		}
		names[c.Name] = true
		if (c.Error == nil) == (c.Expect == nil) {
			t.Fatalf("%s: case %q needs exactly one of expect and error", file, c.Name)
		}
		if c.Ordered && c.Sort == nil {
			t.Fatalf("%s: ordered case %q has no sort", file, c.Name)
		}
	}
	return f
}

func runConformanceCase(t *testing.T, docs []bson.Raw, c conformanceCase) {
	if c.Limit > 0 {
		t.Skip("the limit of a $near case keeps the nearest documents, which only the storage layer orders")
	}
	coll, err := collation.Parse(c.Collation)
	var filter *Filter
	if err == nil {
		filter, err = CompileWith(c.Filter, Options{Collator: coll})
	}
	var sortSpec *Sort
	if err == nil && c.Sort != nil {
		sortSpec, err = CompileSortWith(c.Sort, coll)
	}
	var matched []bson.Raw
	if err == nil {
		for _, d := range docs {
			if excluded(d, c.Exclude) {
				continue
			}
			var ok bool
			if ok, err = filter.MatchErr(d); err != nil {
				break
			}
			if ok {
				matched = append(matched, d)
			}
		}
	}
	if c.Error != nil {
		if err == nil {
			t.Fatalf("compiled and matched, want error code %d", *c.Error)
		}
		if code := mongoerr.CodeOf(err); code != mongoerr.Code(*c.Error) {
			t.Fatalf("error %v (code %d), want code %d", err, code, *c.Error)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if c.Ordered {
		slices.SortStableFunc(matched, sortSpec.Compare)
		for i := 1; i < len(matched); i++ {
			if sortSpec.Compare(matched[i-1], matched[i]) == 0 {
				t.Fatalf("ordered case sorts %s and %s equal; use a total sort", matched[i-1], matched[i])
			}
		}
	}
	got := make([]bsoncore.Value, len(matched))
	for i, d := range matched {
		got[i] = bsoncore.Document(d).Lookup("_id")
	}
	want := make([]bsoncore.Value, len(c.Expect))
	for i, id := range c.Expect {
		want[i] = bsoncore.Value{Type: bsoncore.Type(id.Type), Data: id.Value}
	}
	if !c.Ordered {
		slices.SortFunc(got, keycodec.Compare)
		slices.SortFunc(want, keycodec.Compare)
	}
	if !slices.EqualFunc(got, want, func(a, b bsoncore.Value) bool { return keycodec.Compare(a, b) == 0 }) {
		t.Errorf("filter %s sort %s\n got %v\nwant %v", c.Filter, c.Sort, got, want)
	}
}

// excluded reports whether doc's _id is among ids.
func excluded(doc bson.Raw, ids []bson.RawValue) bool {
	id := bsoncore.Document(doc).Lookup("_id")
	return slices.ContainsFunc(ids, func(v bson.RawValue) bool {
		return keycodec.Compare(id, bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value}) == 0
	})
}
