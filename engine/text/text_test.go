package text

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func spec(t *testing.T, key, weights, lang string) *Spec {
	t.Helper()
	var k bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(key), false, &k); err != nil {
		t.Fatal(err)
	}
	var w, l bson.RawValue
	if weights != "" {
		var d bson.Raw
		if err := bson.UnmarshalExtJSON([]byte(weights), false, &d); err != nil {
			t.Fatal(err)
		}
		w = bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: d}
	}
	if lang != "" {
		_, v, _ := bson.MarshalValue(lang)
		l = bson.RawValue{Type: bson.TypeString, Value: v}
	}
	stored, opts, err := Normalize(k, w, l, bson.RawValue{}, bson.RawValue{})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := bson.Marshal(opts)
	s, err := NewSpec(stored, raw)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func tokens(l *Language, s string, opts TokenOptions) []string {
	var out []string
	l.Tokens(s, opts, func(t string) { out = append(out, t) })
	return out
}

// TestTokens: delimiters, stop words, stemming, folding, diacritics.
func TestTokens(t *testing.T) {
	en := LookupLanguage("EN")
	for _, c := range []struct {
		in   string
		opts TokenOptions
		want []string
	}{
		{"Coffee Shopping", TokenOptions{}, []string{"coffe", "shop"}},
		{"Baking a cake", TokenOptions{}, []string{"bake", "cake"}},
		{"the and of", TokenOptions{}, nil},
		{"pre-market don't", TokenOptions{}, []string{"pre", "market"}},
		{"NYC_Coffee Shop", TokenOptions{}, []string{"nyc_coffe", "shop"}},
		{"Café Con Leche", TokenOptions{}, []string{"cafe", "con", "lech"}},
		{"Café", TokenOptions{DiacriticSensitive: true}, []string{"café"}},
		{"Coffee", TokenOptions{CaseSensitive: true}, []string{"Coffe"}},
	} {
		if got := tokens(en, c.in, c.opts); !slices.Equal(got, c.want) {
			t.Errorf("%q %+v: got %q, want %q", c.in, c.opts, got, c.want)
		}
	}
	if got := tokens(LookupLanguage("none"), "the Coffees", TokenOptions{}); !slices.Equal(got, []string{"the", "coffees"}) {
		t.Errorf("none: got %q", got)
	}
	if LookupLanguage("klingon") != nil || LookupLanguage("Spanish") == nil {
		t.Error("language lookup")
	}
	if got := tokens(LookupLanguage("tr"), "IŞIK", TokenOptions{}); !slices.Equal(got, []string{"ısık"}) {
		t.Errorf("turkish: got %q", got)
	}
}

// TestBasicTokens: the tokens of textIndexVersion 2, as MongoDB's basic
// tokenizer makes them (src/mongo/db/fts/fts_basic_tokenizer.cpp over
// tokenizer.cpp): words end at ASCII white space and punctuation only, the
// apostrophe is white space but in English, ASCII letters alone are lower
// cased and diacritics stay, whatever DiacriticSensitive says.
func TestBasicTokens(t *testing.T) {
	en, none := LookupLanguage("english"), LookupLanguage("none")
	for _, c := range []struct {
		l    *Language
		in   string
		opts TokenOptions
		want []string
	}{
		{en, "Coffee Shopping", TokenOptions{}, []string{"coffe", "shop"}},
		{en, "pre-market rock'n'roll", TokenOptions{}, []string{"pre", "market", "rock'n'rol"}},
		{none, "rock'n'roll", TokenOptions{}, []string{"rock", "n", "roll"}},
		{none, "l'Été—Café", TokenOptions{}, []string{"l", "Été—café"}},
		{none, "Café", TokenOptions{DiacriticSensitive: true}, []string{"café"}},
		{none, "Café", TokenOptions{CaseSensitive: true}, []string{"Café"}},
	} {
		var got []string
		c.l.basicTokens(c.in, c.opts, nil, func(t string) { got = append(got, t) })
		if !slices.Equal(got, c.want) {
			t.Errorf("%s %q %+v: got %q, want %q", c.l.Name, c.in, c.opts, got, c.want)
		}
	}
	// The same text under version 3: Unicode delimiters, folding and no
	// diacritics.
	if got := tokens(none, "l'Été—Café", TokenOptions{}); !slices.Equal(got, []string{"l", "ete", "cafe"}) {
		t.Errorf("version 3: got %q", got)
	}
}

// manualArticles are the documents of the $text manual page
// (https://www.mongodb.com/docs/manual/reference/operator/query/text/),
// one per line of testdata/text/articles.jsonl.
func manualArticles(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "text", "articles.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

func search(t *testing.T, s *Spec, docs []string, q string) (ids []int32, scores map[int32]float64) {
	t.Helper()
	var arg bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(q), false, &arg); err != nil {
		t.Fatal(err)
	}
	pq, err := ParseQuery(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: arg})
	if err != nil {
		t.Fatal(err)
	}
	b, err := pq.Bind(s)
	if err != nil {
		t.Fatal(err)
	}
	scores = map[int32]float64{}
	for _, d := range docs {
		var raw bson.Raw
		if err := bson.UnmarshalExtJSON([]byte(d), false, &raw); err != nil {
			t.Fatal(err)
		}
		if b.Match(raw) {
			id := raw.Lookup("_id").Int32()
			ids = append(ids, id)
			scores[id] = b.Score(raw)
		}
	}
	return ids, scores
}

// TestArticles: the manual's $text examples on articles.
func TestArticles(t *testing.T) {
	s := spec(t, `{"subject": "text"}`, "", "")
	for _, c := range []struct {
		q    string
		want []int32
	}{
		{`{"$search": "coffee"}`, []int32{1, 2, 7}},
		{`{"$search": "bake coffee cake"}`, []int32{1, 2, 3, 4, 7}},
		{`{"$search": "\"coffee shop\""}`, []int32{2}},
		{`{"$search": "coffee -shop"}`, []int32{1, 7}},
		{`{"$search": "leche", "$language": "es"}`, []int32{5, 8}},
		{`{"$search": "Coffee", "$caseSensitive": true}`, []int32{2}},
		{`{"$search": "\"Café Con Leche\"", "$caseSensitive": true}`, []int32{5}},
		{`{"$search": "CAFÉ", "$diacriticSensitive": true}`, []int32{5}},
		{`{"$search": "leches -cafés", "$diacriticSensitive": true}`, []int32{8}},
		{`{"$search": "the and"}`, nil},
		{`{"$search": "-coffee"}`, nil},
	} {
		got, _ := search(t, s, manualArticles(t), c.q)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.q, got, c.want)
		}
	}
	// The manual's "return the text search score" example on cake: Baking
	// a cake scores 0.75 (derived from fts_spec.cpp's formula: cake is one
	// of its two tokens, "a" being a stop word; the example's printed
	// value could not be checked here).
	_, scores := search(t, s, manualArticles(t), `{"$search": "cake"}`)
	if scores[3] != 0.75 {
		t.Errorf("cake: scores %v, want 0.75 for 3", scores)
	}
	_, scores = search(t, s, manualArticles(t), `{"$search": "coffee"}`)
	// coffee alone: one token, 1; Coffee Shopping: 0.75; coffee and
	// cream: and is a stop word, 0.75 (derived from fts_spec.cpp).
	if scores[1] != 1 || scores[2] != 0.75 || scores[7] != 0.75 {
		t.Errorf("coffee: scores %v", scores)
	}
}

// TestScoreFormula: repeats, weights and the exact-string boost.
func TestScoreFormula(t *testing.T) {
	s := spec(t, `{"title": "text", "body": "text"}`, `{"title": 10}`, "none")
	_, scores := search(t, s, []string{`{"_id": 1, "title": "Go", "body": "go go go stop"}`}, `{"$search": "go"}`)
	// title: one token, the whole string: 10 * 1 * 1 * 1.1 = 11; body: go
	// three times of four tokens: freq 1.75, coeff 0.875.
	want := 11 + 1.75*0.875
	if math.Abs(scores[1]-want) > 1e-12 {
		t.Errorf("got %v, want %v", scores[1], want)
	}
}

// TestNormalize: the errors of fixSpec.
// TestNormalizeStoredForm: the key pattern listIndexes shows, with its
// weights, creates the same index again, as mongorestore and $out do
// (src/mongo/db/fts/fts_spec.cpp, FTSSpec::fixSpec, takes _fts and _ftsx
// as they are).
func TestNormalizeStoredForm(t *testing.T) {
	var given, w, stored bson.Raw
	_ = bson.UnmarshalExtJSON([]byte(`{"a": 1, "t": "text", "u": "text", "b": -1}`), false, &given)
	_ = bson.UnmarshalExtJSON([]byte(`{"t": 2}`), false, &w)
	key, opts, err := Normalize(given, bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: w}, bson.RawValue{}, bson.RawValue{}, bson.RawValue{})
	if err != nil {
		t.Fatal(err)
	}
	stored = key
	var weights bson.RawValue
	for _, o := range opts {
		if o.Key == "weights" {
			raw, _ := bson.Marshal(o.Value)
			weights = bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: raw}
		}
	}
	again, opts2, err := Normalize(stored, weights, bson.RawValue{}, bson.RawValue{}, bson.RawValue{})
	if err != nil {
		t.Fatalf("the stored form %s: %v", stored, err)
	}
	if !bytes.Equal(again, stored) || fmt.Sprint(opts2) != fmt.Sprint(opts) {
		t.Errorf("again: %s %v, want %s %v", again, opts2, stored, opts)
	}
}

func TestNormalize(t *testing.T) {
	for _, c := range []struct{ key, weights string }{
		{`{"a": "text", "b": 1, "c": "text"}`, ""},
		// fts_spec.cpp's fixSpec: the stored form must be whole, and name
		// its fields by weights.
		{`{"_fts": "text"}`, ""},
		{`{"_fts": "text"}`, `{"a": 1}`},
		{`{"_fts": "text", "_ftsx": 1}`, ""},
		{`{"_fts": "text", "_ftsx": 2}`, `{"a": 1}`},
		{`{"_ftsx": 1, "a": "text"}`, ""},
		{`{"_fts": "text", "_ftsx": 1, "a": "text"}`, `{"a": 1}`},
		{`{"a": "text", "b": 2}`, ""},
		{`{"a": "text"}`, `{"a": 100000}`},
		{`{"a": "text"}`, `{"a.$b": 1}`},
	} {
		var k, w bson.Raw
		_ = bson.UnmarshalExtJSON([]byte(c.key), false, &k)
		var wv bson.RawValue
		if c.weights != "" {
			_ = bson.UnmarshalExtJSON([]byte(c.weights), false, &w)
			wv = bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: w}
		}
		if _, _, err := Normalize(k, wv, bson.RawValue{}, bson.RawValue{}, bson.RawValue{}); err == nil {
			t.Errorf("%s %s: no error", c.key, c.weights)
		}
	}
}
