package engine

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/mongoerr"
)

// manualDocs are the documents of a file of testdata/text, one per line:
// the manual's text search examples, the articles of the $text page
// (https://www.mongodb.com/docs/manual/reference/operator/query/text/)
// and the stores of "Perform a Text Search"
// (https://www.mongodb.com/docs/manual/core/link-text-indexes/).
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

// TestTextManualExamples: the results of the manual's $text examples,
// and their order by score.
func TestTextManualExamples(t *testing.T) {
	e := openTestEngine(t)
	loadText(t, e, "articles", manualDocs(t, "articles.jsonl"), `{"key": {"subject": "text"}}`)
	loadText(t, e, "stores", manualDocs(t, "stores.jsonl"), `{"key": {"name": "text", "description": "text"}}`)
	for _, c := range []struct {
		coll, filter string
		want         []int32
	}{
		{"articles", `{"$text": {"$search": "coffee"}}`, []int32{1, 2, 7}},
		{"articles", `{"$text": {"$search": "bake coffee cake"}}`, []int32{1, 2, 3, 4, 7}},
		{"articles", `{"$text": {"$search": "\"coffee shop\""}}`, []int32{2}},
		{"articles", `{"$text": {"$search": "coffee -shop"}}`, []int32{1, 7}},
		{"articles", `{"$text": {"$search": "leche", "$language": "es"}}`, []int32{5, 8}},
		{"articles", `{"$text": {"$search": "Coffee", "$caseSensitive": true}}`, []int32{2}},
		{"articles", `{"$text": {"$search": "\"Café Con Leche\"", "$caseSensitive": true}}`, []int32{5}},
		{"articles", `{"$text": {"$search": "CAFÉ", "$diacriticSensitive": true}}`, []int32{5}},
		{"articles", `{"$text": {"$search": "leches -cafés", "$diacriticSensitive": true}}`, []int32{8}},
		{"articles", `{"$text": {"$search": "cake"}, "views": {"$gt": 50}}`, []int32{3}},
		{"stores", `{"$text": {"$search": "java coffee shop"}}`, []int32{1, 3, 5, 6}},
		{"stores", `{"$text": {"$search": "\"coffee shop\""}}`, []int32{3, 6}},
		{"stores", `{"$text": {"$search": "\"COFFEé SHOP\""}}`, []int32{3, 6}},
		{"stores", `{"$text": {"$search": "java shop -coffee"}}`, []int32{5}},
		// derived: stop words alone leave no term, so nothing matches.
		{"stores", `{"$text": {"$search": "and the of"}}`, nil},
	} {
		docs, err := findAll(t, e, c.coll, FindSpec{Filter: extDoc(t, c.filter)})
		if err != nil {
			t.Fatalf("%s: %v", c.filter, err)
		}
		got := ids(docs)
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s %s: got %v, want %v", c.coll, c.filter, got, c.want)
		}
		n, err := e.Count(context.Background(), "db", c.coll, extDoc(t, c.filter), 0, 0, bson.RawValue{})
		if err != nil || n != int64(len(c.want)) {
			t.Errorf("count %s: %d %v, want %d", c.filter, n, err, len(c.want))
		}
	}
	// Sorted by score, with the score projected; the scores are derived
	// from fts_spec.cpp's formula: "Baking a cake" 0.75 for cake (one of
	// two tokens), "coffee" 1 (its only token; the stem coffe is not the
	// whole string, so no boost).
	docs, err := findAll(t, e, "articles", FindSpec{
		Filter:     extDoc(t, `{"$text": {"$search": "coffee cake"}}`),
		Projection: extDoc(t, `{"subject": 1, "score": {"$meta": "textScore"}}`),
		Sort:       extDoc(t, `{"score": {"$meta": "textScore"}}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id    int32
		score float64
	}{{1, 1}, {2, 0.75}, {3, 0.75}, {7, 0.75}}
	if len(docs) != len(want) {
		t.Fatalf("got %v", docs)
	}
	for i, d := range docs {
		score := d.Lookup("score").Double()
		if math.Abs(score-want[i].score) > 1e-9 || (i == 0 && d.Lookup("_id").Int32() != 1) {
			t.Errorf("%d: got %v, want _id %d score %v", i, d, want[i].id, want[i].score)
		}
		if elems, _ := d.Elements(); elems[len(elems)-1].Key() != "score" || len(elems) != 3 {
			t.Errorf("%d: projected %v, want _id, subject, score", i, d)
		}
	}
	// A projection of the score alone keeps the whole document.
	docs, err = findAll(t, e, "stores", FindSpec{
		Filter:     extDoc(t, `{"$text": {"$search": "clothes"}}`),
		Projection: extDoc(t, `{"score": {"$meta": "textScore"}}`),
	})
	if err != nil || len(docs) != 1 {
		t.Fatalf("clothes: %v %v", docs, err)
	}
	// name: clothes three times of three tokens, freq 1.75, coeff 1;
	// description: "clothing" stems to cloth as clothes does, one of two
	// tokens, 0.75 (derived from fts_spec.cpp's formula).
	if got := docs[0].Lookup("score").Double(); math.Abs(got-2.5) > 1e-9 || docs[0].Lookup("description").StringValue() != "Discount clothing" {
		t.Errorf("clothes: %v", docs[0])
	}
}

// TestTextAggregate: $text in the first $match, the score in $sort,
// $project and $addFields stages, and refused elsewhere
// (https://www.mongodb.com/docs/manual/tutorial/text-search-in-aggregation/).
func TestTextAggregate(t *testing.T) {
	e := openTestEngine(t)
	loadText(t, e, "articles", manualDocs(t, "articles.jsonl"), `{"key": {"subject": "text"}}`)
	run := func(stages ...string) ([]bson.Raw, error) {
		var raws []bson.Raw
		for _, s := range stages {
			raws = append(raws, extDoc(t, s))
		}
		return e.Aggregate(context.Background(), "db", "articles", raws, AggregateOptions{})
	}
	docs, err := run(`{"$match": {"$text": {"$search": "cake"}}}`, `{"$group": {"_id": null, "views": {"$sum": "$views"}}}`)
	if err != nil || len(docs) != 1 || docs[0].Lookup("views").Int32() != 90 {
		t.Errorf("total views of cake: %v %v", docs, err)
	}
	docs, err = run(`{"$match": {"$text": {"$search": "cake coffee"}}}`, `{"$addFields": {"score": {"$meta": "textScore"}}}`, `{"$match": {"score": {"$gt": 0.9}}}`, `{"$project": {"subject": 1, "_id": 0, "score": 1}}`)
	if err != nil || len(docs) != 1 || docs[0].Lookup("subject").StringValue() != "coffee" {
		t.Errorf("score above 0.9: %v %v", docs, err)
	}
	docs, err = run(`{"$match": {"$text": {"$search": "cake coffee"}}}`, `{"$project": {"subject": 1, "s": {"$meta": "textScore"}}}`, `{"$sort": {"s": -1, "_id": 1}}`)
	if err != nil || len(docs) != 4 || docs[0].Lookup("_id").Int32() != 1 {
		t.Errorf("projected score: %v %v", docs, err)
	}
	docs, err = run(`{"$match": {"$text": {"$search": "cake coffee"}}}`, `{"$sort": {"score": {"$meta": "textScore"}, "_id": -1}}`, `{"$limit": 2}`)
	if err != nil || !slices.Equal(ids(docs), []int32{1, 7}) {
		t.Errorf("sorted by score: %v %v", ids(docs), err)
	}
	if _, err := run(`{"$match": {"views": {"$gt": 1}}}`, `{"$match": {"$text": {"$search": "cake"}}}`); mongoerr.CodeOf(err) != 17313 {
		t.Errorf("$text in a second $match: %v, want 17313", err)
	}
	if _, err := run(`{"$match": {"views": {"$gt": 1}}}`, `{"$project": {"s": {"$meta": "textScore"}}}`); mongoerr.CodeOf(err) != 40218 {
		t.Errorf("score without $text: %v, want 40218", err)
	}
}

// TestTextErrors: MongoDB's codes for $text where it cannot be, and for
// text indexes it refuses.
func TestTextErrors(t *testing.T) {
	e := openTestEngine(t)
	loadText(t, e, "plain", manualDocs(t, "articles.jsonl"), "")
	loadText(t, e, "articles", manualDocs(t, "articles.jsonl"), `{"key": {"subject": "text"}}`)
	for _, c := range []struct {
		coll, filter string
		code         mongoerr.Code
	}{
		{"plain", `{"$text": {"$search": "coffee"}}`, mongoerr.IndexNotFound},
		{"articles", `{"$nor": [{"$text": {"$search": "coffee"}}]}`, mongoerr.BadValue},
		{"articles", `{"$and": [{"$text": {"$search": "a"}}, {"$text": {"$search": "b"}}]}`, mongoerr.BadValue},
		{"articles", `{"a": {"$elemMatch": {"$text": {"$search": "coffee"}}}}`, mongoerr.BadValue},
		{"articles", `{"$or": [{"$text": {"$search": "coffee"}}, {"views": 5}]}`, 291},
		{"articles", `{"$text": {"$search": 1}}`, mongoerr.TypeMismatch},
		{"articles", `{"$text": {"$search": "x", "$foo": 1}}`, mongoerr.BadValue},
		{"articles", `{"$text": {"$search": "x", "$language": "klingon"}}`, mongoerr.BadValue},
		{"articles", `{"$text": {"$search": "x", "$caseSensitive": 1}}`, mongoerr.TypeMismatch},
	} {
		_, err := findAll(t, e, c.coll, FindSpec{Filter: extDoc(t, c.filter)})
		if mongoerr.CodeOf(err) != c.code || err == nil {
			t.Errorf("%s: got %v, want code %d", c.filter, err, c.code)
		}
	}
	if _, err := findAll(t, e, "articles", FindSpec{Filter: extDoc(t, `{}`), Projection: extDoc(t, `{"s": {"$meta": "textScore"}}`)}); mongoerr.CodeOf(err) != 40218 {
		t.Errorf("score without $text: %v", err)
	}
	for _, c := range []struct {
		spec string
		code mongoerr.Code
	}{
		// One text index per collection.
		{`{"key": {"author": "text"}}`, mongoerr.IndexOptionsConflict},
		{`{"key": {"a": "text"}, "textIndexVersion": 2}`, mongoerr.CannotCreateIndex},
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

// TestTextScoreNested: a projection may put the score in an embedded
// document.
func TestTextScoreNested(t *testing.T) {
	e := openTestEngine(t)
	loadText(t, e, "articles", manualDocs(t, "articles.jsonl"), `{"key": {"subject": "text"}}`)
	docs, err := findAll(t, e, "articles", FindSpec{
		Filter:     extDoc(t, `{"$text": {"$search": "cake"}}`),
		Projection: extDoc(t, `{"subject": 1, "meta.score": {"$meta": "textScore"}}`),
	})
	if err != nil || len(docs) != 1 || docs[0].Lookup("meta", "score").Double() != 0.75 {
		t.Errorf("nested score: %v %v", docs, err)
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
