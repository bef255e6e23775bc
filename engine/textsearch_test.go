package engine

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/mongoerr"
)

// manualDocs are the documents of a file of testdata/text, one per line:
// the manual's text search examples, such as the articles of the $text
// page (https://www.mongodb.com/docs/manual/reference/operator/query/text/).
// Its documented queries are cases of testdata/text/cases.json
// (TestTextConformance); the tests here check what a case cannot say:
// index specs, writes, plans, restarts.
func manualDocs(t *testing.T, name string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "text", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

func loadText(t *testing.T, e *Engine, coll string, docs []string, index string) {
	t.Helper()
	var raws []bson.Raw
	for _, d := range docs {
		raws = append(raws, extDoc(t, d))
	}
	if _, err := e.Insert(context.Background(), "db", coll, raws, true); err != nil {
		t.Fatal(err)
	}
	if index != "" {
		if err := createIndex(t, e, coll, index); err != nil {
			t.Fatal(err)
		}
	}
}

func findAll(t *testing.T, e *Engine, coll string, spec FindSpec) ([]bson.Raw, error) {
	t.Helper()
	cur, err := e.Find(context.Background(), "db", coll, spec)
	if err != nil {
		return nil, err
	}
	return cur.All(context.Background())
}

func ids(docs []bson.Raw) []int32 {
	var out []int32
	for _, d := range docs {
		out = append(out, d.Lookup("_id").Int32())
	}
	return out
}

// TestTextIndexErrors: MongoDB's codes for the text indexes it refuses.
// The refusals of $text queries are cases of testdata/text/cases.json.
func TestTextIndexErrors(t *testing.T) {
	e := openTestEngine(t)
	loadText(t, e, "articles", manualDocs(t, "articles.jsonl"), `{"key": {"subject": "text"}}`)
	for _, c := range []struct {
		spec string
		code mongoerr.Code
	}{
		// One text index per collection.
		{`{"key": {"author": "text"}}`, mongoerr.IndexOptionsConflict},
		// fts_spec.cpp's fixSpec: "bad textIndexVersion" past 3.
		{`{"key": {"a": "text"}, "textIndexVersion": 4}`, mongoerr.CannotCreateIndex},
		{`{"key": {"a": "text"}, "default_language": "klingon"}`, mongoerr.CannotCreateIndex},
		{`{"key": {"a": "text"}, "weights": {"a": 0}}`, mongoerr.CannotCreateIndex},
		{`{"key": {"a": "text", "b": 1, "c": "text"}}`, mongoerr.CannotCreateIndex},
		{`{"key": {"a": 1}, "weights": {"a": 2}}`, mongoerr.CannotCreateIndex},
		{`{"key": {"a": 1}, "partialFilterExpression": {"$text": {"$search": "x"}}}`, mongoerr.CannotCreateIndex},
	} {
		coll := "articles"
		if c.code != mongoerr.IndexOptionsConflict {
			coll = "fresh"
		}
		if err := createIndex(t, e, coll, c.spec); mongoerr.CodeOf(err) != c.code || err == nil {
			t.Errorf("%s: got %v, want code %d", c.spec, err, c.code)
		}
	}
	// The same text index again is no error.
	if err := createIndex(t, e, "articles", `{"key": {"subject": "text"}}`); err != nil {
		t.Errorf("same text index: %v", err)
	}
}

// TestTextIndexForms: compound text indexes with an equality prefix, the
// wildcard, weights, languages per document, listIndexes' spec, explain.
func TestTextIndexForms(t *testing.T) {
	e := openTestEngine(t)
	loadText(t, e, "c", []string{
		`{"_id": 1, "shop": "a", "about": "coffee beans"}`,
		`{"_id": 2, "shop": "b", "about": "coffee cups"}`,
		`{"_id": 3, "shop": "a", "about": "tea"}`,
		`{"_id": 4, "shop": "a", "about": {"deep": "coffee"}, "tags": ["Coffee"]}`,
		`{"_id": 5, "shop": "a", "about": "el café", "language": "es"}`,
	}, `{"key": {"shop": 1, "about": "text"}, "name": "shop_about"}`)
	docs, err := findAll(t, e, "c", FindSpec{Filter: extDoc(t, `{"shop": "a", "$text": {"$search": "coffee"}}`)})
	if err != nil || !slices.Equal(ids(docs), []int32{1}) {
		t.Errorf("compound: %v %v", ids(docs), err)
	}
	if _, err := findAll(t, e, "c", FindSpec{Filter: extDoc(t, `{"$text": {"$search": "coffee"}}`)}); mongoerr.CodeOf(err) != 291 {
		t.Errorf("compound without the prefix: %v", err)
	}
	ex, err := e.Explain(context.Background(), "db", "c", FindSpec{Filter: extDoc(t, `{"shop": "a", "$text": {"$search": "coffee -tea"}}`)}, true)
	if err != nil || ex.Stage != "TEXT_MATCH" || ex.IndexName != "shop_about" || ex.NReturned != 1 {
		t.Errorf("explain: %+v %v", ex, err)
	}
	loadText(t, e, "w", []string{
		`{"_id": 1, "title": "coffee", "body": "tea"}`,
		`{"_id": 2, "title": "tea", "body": "coffee", "n": {"x": "coffee"}}`,
		`{"_id": 3, "title": "kaffee", "language": "german"}`,
	}, `{"key": {"$**": "text"}, "weights": {"title": 10}}`)
	docs, err = findAll(t, e, "w", FindSpec{
		Filter: extDoc(t, `{"$text": {"$search": "coffee"}}`),
		Sort:   extDoc(t, `{"s": {"$meta": "textScore"}}`), Projection: extDoc(t, `{"s": {"$meta": "textScore"}}`),
	})
	// title weighs 10; body and n.x, named by no weight, 1 each.
	if err != nil || !slices.Equal(ids(docs), []int32{1, 2}) || docs[0].Lookup("s").Double() != 10 || docs[1].Lookup("s").Double() != 2 {
		t.Errorf("wildcard: %v %v", docs, err)
	}
	specs, err := e.ListIndexes(context.Background(), "db", "w")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range specs {
		raw, _ := bson.Marshal(s)
		if bson.Raw(raw).Lookup("name").StringValue() == "$**_text" {
			found = true
			if k := bson.Raw(raw).Lookup("key").Document().String(); k != `{"_fts": "text","_ftsx": {"$numberInt":"1"}}` {
				t.Errorf("key %s", k)
			}
			for _, f := range []string{"weights", "default_language", "language_override", "textIndexVersion"} {
				if _, err := bson.Raw(raw).LookupErr(f); err != nil {
					t.Errorf("listIndexes lacks %s: %v", f, bson.Raw(raw))
				}
			}
		}
	}
	if !found {
		t.Errorf("no $**_text in %v", specs)
	}
	// A bad language in a document fails its insert (17262).
	res, err := e.Insert(context.Background(), "db", "w", []bson.Raw{extDoc(t, `{"title": "x", "language": "klingon"}`)}, true)
	if err != nil || len(res.Errors) != 1 || mongoerr.CodeOf(res.Errors[0].Err) != 17262 {
		t.Errorf("bad language: %v %v", res.Errors, err)
	}
}

// TestTextWrites: $text selects the documents of a delete as of a find.
func TestTextWrites(t *testing.T) {
	e := openTestEngine(t)
	loadText(t, e, "articles", manualDocs(t, "articles.jsonl"), `{"key": {"subject": "text"}}`)
	n, err := e.Delete(context.Background(), "db", "articles", extDoc(t, `{"$text": {"$search": "coffee -shop"}}`), 0, bson.RawValue{})
	if err != nil || n != 2 {
		t.Fatalf("delete: %d %v, want 2", n, err)
	}
	docs, err := findAll(t, e, "articles", FindSpec{Filter: extDoc(t, `{"$text": {"$search": "coffee"}}`)})
	if err != nil || !slices.Equal(ids(docs), []int32{2}) {
		t.Errorf("after the delete: %v %v", ids(docs), err)
	}
}

// TestTextIndexOnlyForText: a text index has entries only for documents
// with terms, so no other query reads it, even on its prefix field.
func TestTextIndexOnlyForText(t *testing.T) {
	e := openTestEngine(t)
	loadText(t, e, "c", []string{
		`{"_id": 1, "shop": "a", "about": "coffee"}`,
		`{"_id": 2, "shop": "a"}`,
		`{"_id": 3, "shop": "a", "about": "the"}`,
	}, `{"key": {"shop": 1, "about": "text"}}`)
	docs, err := findAll(t, e, "c", FindSpec{Filter: extDoc(t, `{"shop": "a"}`), Sort: extDoc(t, `{"shop": 1}`)})
	if err != nil || len(docs) != 3 {
		t.Errorf("by the prefix field: %v %v", ids(docs), err)
	}
	if _, err := findAll(t, e, "c", FindSpec{Filter: extDoc(t, `{"shop": "a"}`), Hint: bson.RawValue{Type: bson.TypeString, Value: bsoncoreString("shop_1_about_text")}}); mongoerr.CodeOf(err) != mongoerr.BadValue {
		t.Errorf("hinting the text index: %v", err)
	}
}

// TestTextLongTerm: a word longer than 64 bytes is kept in the index as
// MongoDB keeps it, a prefix and a hash, and found again.
func TestTextLongTerm(t *testing.T) {
	e := openTestEngine(t)
	long := strings.Repeat("abcdefghij", 20)
	loadText(t, e, "c", []string{`{"_id": 1, "t": "` + long + `x"}`, `{"_id": 2, "t": "` + long + `y"}`}, `{"key": {"t": "text"}}`)
	docs, err := findAll(t, e, "c", FindSpec{Filter: extDoc(t, `{"$text": {"$search": "`+long+`y"}}`)})
	if err != nil || !slices.Equal(ids(docs), []int32{2}) {
		t.Errorf("long term: %v %v", ids(docs), err)
	}
}

// TestTextIndexReopen: a text index and a hashed index come back from the
// catalog after a restart and serve their queries.
func TestTextIndexReopen(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoReaper: true})
	if err != nil {
		t.Fatal(err)
	}
	loadText(t, e, "articles", manualDocs(t, "articles.jsonl"), `{"key": {"subject": "text"}, "default_language": "spanish"}`)
	if err := createIndex(t, e, "articles", `{"key": {"views": "hashed"}}`); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err = Open(dir, Options{NoReaper: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	docs, err := findAll(t, e, "articles", FindSpec{Filter: extDoc(t, `{"$text": {"$search": "leches"}}`)})
	if err != nil || len(docs) != 2 {
		t.Errorf("after reopening, leches in spanish: %v %v", ids(docs), err)
	}
	ex, err := e.Explain(context.Background(), "db", "articles", FindSpec{Filter: extDoc(t, `{"views": 10}`)}, true)
	if err != nil || ex.IndexName != "views_hashed" || ex.NReturned != 2 {
		t.Errorf("hashed after reopening: %+v %v", ex, err)
	}
}

// TestTextIndexVersion2: createIndexes builds textIndexVersion 2 on
// request (src/mongo/db/fts/fts_spec.cpp, fixSpec), listIndexes and
// explain report it, the same index asked with another version is the one
// there already (jstests/core/fts_index.js: "equivalent if they differ
// only in 'textIndexVersion'"), and after a restart the index still makes
// version 2's terms: diacritics kept (jstests/core/fts_index_version2.js).
func TestTextIndexVersion2(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoReaper: true})
	if err != nil {
		t.Fatal(err)
	}
	loadText(t, e, "c", []string{`{"_id": 1, "a": "Café Con Leche"}`}, `{"key": {"a": "text"}, "textIndexVersion": 2}`)
	if err := createIndex(t, e, "c", `{"key": {"a": "text"}}`); err != nil {
		t.Errorf("the same text index as version 3: %v", err)
	}
	ctx := context.Background()
	specs, err := e.ListIndexes(ctx, "db", "c")
	if err != nil || len(specs) != 2 {
		t.Fatalf("listIndexes: %v %v", specs, err)
	}
	raw, _ := bson.Marshal(specs[1])
	if v, err := bson.Raw(raw).LookupErr("textIndexVersion"); err != nil || v.Int32() != 2 {
		t.Errorf("listIndexes: %s, want textIndexVersion 2", bson.Raw(raw))
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if e, err = Open(dir, Options{NoReaper: true}); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// Version 2 lower cases ASCII letters alone: CAFÉ is cafÉ.
	for q, n := range map[string]int{"café": 1, "CAFé": 1, "cafe": 0, "CAFÉ": 0} {
		docs, err := findAll(t, e, "c", FindSpec{Filter: extDoc(t, `{"$text": {"$search": "`+q+`"}}`)})
		if err != nil || len(docs) != n {
			t.Errorf("%s: %v %v, want %d documents", q, ids(docs), err, n)
		}
	}
	ex, err := e.Explain(ctx, "db", "c", FindSpec{Filter: extDoc(t, `{"$text": {"$search": "leche"}}`)}, false)
	if err != nil || ex.Stage != "TEXT_MATCH" || ex.TextIndexVersion != 2 {
		t.Errorf("explain: %+v %v, want a TEXT_MATCH of version 2", ex, err)
	}
}
