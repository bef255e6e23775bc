package collation

import (
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/mongoerr"
)

func doc(t *testing.T, d bson.D) bson.Raw {
	t.Helper()
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustParse(t *testing.T, d bson.D) *Collator {
	t.Helper()
	c, err := Parse(doc(t, d))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func sortStrings(c *Collator, in ...string) []string {
	out := slices.Clone(in)
	slices.SortStableFunc(out, func(a, b string) int { return c.CompareStrings([]byte(a), []byte(b)) })
	return out
}

// The Canadian French example of the drivers' collation guides
// (https://www.mongodb.com/docs/drivers/java/sync/v5.1/crud/collations):
// fr_CA orders by the last accent, backwards: its default.
func TestFrenchCanadianBackwards(t *testing.T) {
	c := mustParse(t, bson.D{{Key: "locale", Value: "fr_CA"}})
	if !c.Spec().Backwards {
		t.Fatal("fr_CA defaults to backwards")
	}
	got := sortStrings(c, "côté", "coté", "côte", "cote")
	want := []string{"cote", "côte", "coté", "côté"}
	if !slices.Equal(got, want) {
		t.Fatalf("fr_CA order %q, want %q", got, want)
	}
	// Without backwards, French orders by the first accent.
	got = sortStrings(mustParse(t, bson.D{{Key: "locale", Value: "fr"}}), "côté", "coté", "côte", "cote")
	if want := []string{"cote", "coté", "côte", "côté"}; !slices.Equal(got, want) {
		t.Fatalf("fr order %q, want %q", got, want)
	}
}

// cursor.collation's example (https://www.mongodb.com/docs/manual/reference/method/cursor.collation/):
// at strength 1 "cafe" equals "café" and "cafE".
func TestStrengths(t *testing.T) {
	s1 := mustParse(t, bson.D{{Key: "locale", Value: "fr"}, {Key: "strength", Value: 1}})
	for _, s := range []string{"café", "cafe", "cafE"} {
		if s1.CompareStrings([]byte("cafe"), []byte(s)) != 0 {
			t.Errorf("strength 1: cafe != %s", s)
		}
	}
	s2 := mustParse(t, bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}})
	if s2.CompareStrings([]byte("Alice"), []byte("alice")) != 0 {
		t.Error("strength 2 is case-insensitive")
	}
	if s2.CompareStrings([]byte("cafe"), []byte("café")) == 0 {
		t.Error("strength 2 tells accents apart")
	}
	s3 := mustParse(t, bson.D{{Key: "locale", Value: "en"}})
	if s3.CompareStrings([]byte("a"), []byte("A")) >= 0 {
		t.Error("strength 3 puts lower case first")
	}
	up := mustParse(t, bson.D{{Key: "locale", Value: "en"}, {Key: "caseFirst", Value: "upper"}})
	if up.CompareStrings([]byte("a"), []byte("A")) <= 0 || up.CompareStrings([]byte("A"), []byte("b")) >= 0 {
		t.Error("caseFirst upper puts A before a, and both before b")
	}
	cl := mustParse(t, bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 1}, {Key: "caseLevel", Value: true}})
	if cl.CompareStrings([]byte("e"), []byte("é")) != 0 || cl.CompareStrings([]byte("e"), []byte("E")) == 0 {
		t.Error("strength 1 with caseLevel ignores accents but not case")
	}
	id := mustParse(t, bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 5}})
	if id.CompareStrings([]byte("a"), []byte("a")) != 0 || id.CompareStrings([]byte("a"), []byte("A")) == 0 {
		t.Error("strength 5")
	}
}

// derived: numericOrdering compares digit runs as numbers.
func TestNumericOrdering(t *testing.T) {
	c := mustParse(t, bson.D{{Key: "locale", Value: "en"}, {Key: "numericOrdering", Value: true}})
	got := sortStrings(c, "10", "9", "2", "100")
	if want := []string{"2", "9", "10", "100"}; !slices.Equal(got, want) {
		t.Fatalf("numeric order %q, want %q", got, want)
	}
	got = sortStrings(mustParse(t, bson.D{{Key: "locale", Value: "en"}}), "10", "9", "2", "100")
	if want := []string{"10", "100", "2", "9"}; !slices.Equal(got, want) {
		t.Fatalf("plain order %q, want %q", got, want)
	}
}

// The manual's alternate field (https://www.mongodb.com/docs/manual/reference/collation/):
// with "shifted", whitespace and punctuation are not base characters.
func TestAlternateShifted(t *testing.T) {
	c := mustParse(t, bson.D{{Key: "locale", Value: "en"}, {Key: "alternate", Value: "shifted"}})
	if c.CompareStrings([]byte("black-bird"), []byte("blackbird")) != 0 || c.CompareStrings([]byte("black bird"), []byte("blackbird")) != 0 {
		t.Error("shifted ignores punctuation and spaces at strength 3")
	}
	q := mustParse(t, bson.D{{Key: "locale", Value: "en"}, {Key: "alternate", Value: "shifted"}, {Key: "strength", Value: 4}})
	if q.CompareStrings([]byte("black-bird"), []byte("blackbird")) == 0 {
		t.Error("strength 4 tells ignored punctuation apart")
	}
	n := mustParse(t, bson.D{{Key: "locale", Value: "en"}})
	if n.CompareStrings([]byte("black-bird"), []byte("blackbird")) == 0 {
		t.Error("non-ignorable counts punctuation")
	}
}

// jstests/core/collation.js: the normalised document of fr_CA.
func TestDocument(t *testing.T) {
	c := mustParse(t, bson.D{{Key: "locale", Value: "fr_CA"}})
	want := doc(t, bson.D{{Key: "locale", Value: "fr_CA"}, {Key: "caseLevel", Value: false}, {Key: "caseFirst", Value: "off"},
		{Key: "strength", Value: int32(3)}, {Key: "numericOrdering", Value: false}, {Key: "alternate", Value: "non-ignorable"},
		{Key: "maxVariable", Value: "punct"}, {Key: "normalization", Value: false}, {Key: "backwards", Value: true},
		{Key: "version", Value: "57.1"}})
	if !slices.Equal(c.Document(), want) {
		t.Fatalf("document %s, want %s", c.Document(), want)
	}
	// A normalised document parses back to the same collation.
	if again := mustParse(t, bson.D{{Key: "locale", Value: "fr_CA"}, {Key: "version", Value: "57.1"}}); !Equal(c, again) {
		t.Fatal("not equal after a round trip")
	}
	if Equal(c, nil) || !Equal(nil, nil) {
		t.Fatal("Equal and the simple collation")
	}
}

func TestSimple(t *testing.T) {
	for _, d := range []bson.D{{}, {{Key: "locale", Value: "simple"}}, {{Key: "locale", Value: "simple"}, {Key: "strength", Value: 2}}} {
		c, err := Parse(doc(t, d))
		if err != nil || c != nil {
			t.Errorf("%v: %v %v, want the simple collation", d, c, err)
		}
	}
	var c *Collator
	if c.CompareStrings([]byte("B"), []byte("a")) >= 0 {
		t.Error("simple compares bytes")
	}
}

// Refusals with mongod's codes and messages: mongod's IDL parser of the
// collation document (src/mongo/db/query/collation/collation_spec.idl),
// the locale and option checks of collator_factory_icu.cpp, and
// jstests/core/collation.js's invalid specs.
func TestParseErrors(t *testing.T) {
	cases := []struct {
		d    bson.D
		code mongoerr.Code
		msg  string
	}{
		{bson.D{{Key: "strength", Value: 2}}, 40414, "BSON field 'collation.locale' is missing but a required field"},
		{bson.D{{Key: "blah", Value: 1}}, 40415, "BSON field 'collation.blah' is an unknown field."},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "blah", Value: 1}}, 40415, "BSON field 'collation.blah' is an unknown field."},
		{bson.D{{Key: "locale", Value: 5}}, 14, "BSON field 'collation.locale' is the wrong type 'int', expected type 'string'"},
		{bson.D{{Key: "locale", Value: "xx"}}, 2, "Field 'locale' is invalid in: { locale: \"xx\" }"},
		{bson.D{{Key: "locale", Value: "en_us"}}, 2, "Field 'locale' is invalid in: { locale: \"en_us\" }. Did you mean 'en_US'?"},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 99}}, 2, "BSON field 'strength' value must be <= 5, actual value '99'"},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 9.9}}, 2, "BSON field 'strength' value must be <= 5, actual value '9'"},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: -1}}, 2, "BSON field 'strength' value must be >= 0, actual value '-1'"},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 0}}, 2, "Enumeration value '0' for field 'collation.strength' is not a valid value."},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: "x"}}, 14, "BSON field 'collation.strength' is the wrong type 'string', expected types '[double, decimal, long, int]'"},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "caseLevel", Value: 1}}, 14, "BSON field 'collation.caseLevel' is the wrong type 'int', expected type 'bool'"},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "caseFirst", Value: "sideways"}}, 2, "Enumeration value 'sideways' for field 'collation.caseFirst' is not a valid value."},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "alternate", Value: "nope"}}, 2, "Enumeration value 'nope' for field 'collation.alternate' is not a valid value."},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "maxVariable", Value: "nope"}}, 2, "Enumeration value 'nope' for field 'collation.maxVariable' is not a valid value."},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "backwards", Value: "x"}}, 14, "Field 'backwards' should be a boolean value, but found: string"},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "version", Value: "unknownVersion"}}, 161, "Requested collation version unknownVersion but the only available collator version was 57.1. Requested collation spec: { locale: \"en\", version: \"unknownVersion\" }"},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 1}, {Key: "backwards", Value: true}}, 2, "'backwards' is invalid with 'strength' of 1 in: { locale: \"en\", caseLevel: false, caseFirst: \"off\", strength: 1, numericOrdering: false, alternate: \"non-ignorable\", maxVariable: \"punct\", normalization: false, backwards: true, version: \"57.1\" }"},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}, {Key: "caseFirst", Value: "upper"}}, 2, "'caseFirst' is invalid unless 'caseLevel' is on or 'strength' is greater than 2 in: { locale: \"en\", caseLevel: false, caseFirst: \"upper\", strength: 2, numericOrdering: false, alternate: \"non-ignorable\", maxVariable: \"punct\", normalization: false, backwards: false, version: \"57.1\" }"},
	}
	for _, tc := range cases {
		_, err := Parse(doc(t, tc.d))
		me, ok := mongoerr.As(err)
		if !ok || me.Code != tc.code || me.Msg != tc.msg {
			t.Errorf("%v: got %v, want %d %q", tc.d, err, tc.code, tc.msg)
		}
	}
	// Variants and the truncated strength are accepted.
	for _, d := range []bson.D{
		{{Key: "locale", Value: "de@collation=phonebook"}},
		{{Key: "locale", Value: "zh_Hant"}},
		{{Key: "locale", Value: "en_US_POSIX"}},
		{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2.5}},
	} {
		if _, err := Parse(doc(t, d)); err != nil {
			t.Errorf("%v: %v", d, err)
		}
	}
}

// Key values keep BSON's type order and collate strings inside arrays and
// documents; field names are not collated.
func TestKeyValues(t *testing.T) {
	c := mustParse(t, bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}})
	v := func(x any) bsoncore.Value {
		t, data, err := bson.MarshalValue(x)
		if err != nil {
			panic(err)
		}
		return bsoncore.Value{Type: bsoncore.Type(t), Data: data}
	}
	if c.Compare(v("ABC"), v("abc")) != 0 {
		t.Error("strings")
	}
	if c.Compare(v(bson.A{"X", 1}), v(bson.A{"x", 1})) != 0 {
		t.Error("arrays")
	}
	if c.Compare(v(bson.D{{Key: "a", Value: "X"}}), v(bson.D{{Key: "a", Value: "x"}})) != 0 {
		t.Error("documents")
	}
	if c.Compare(v(bson.D{{Key: "A", Value: "x"}}), v(bson.D{{Key: "a", Value: "x"}})) == 0 {
		t.Error("field names are not collated")
	}
	if c.Compare(v(5), v("a")) >= 0 || c.Compare(v("z"), v(bson.D{})) >= 0 {
		t.Error("numbers before strings before documents")
	}
	if c.Compare(v(bson.Symbol("ABC")), v("abc")) != 0 {
		t.Error("symbols collate as strings")
	}
	n := v(3.5)
	if k := c.Key(n); &k.Data[0] != &n.Data[0] {
		t.Error("a value without strings is its own key")
	}
}
