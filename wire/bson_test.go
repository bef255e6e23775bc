package wire

import (
	"errors"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// nested returns {a: {a: ... {}}} with depth documents in all, built in one
// pass because building it level by level takes quadratic time.
func nested(depth int) bsoncore.Document {
	starts := make([]int32, depth)
	var doc []byte
	starts[0], doc = bsoncore.AppendDocumentStart(nil)
	for i := 1; i < depth; i++ {
		starts[i], doc = bsoncore.AppendDocumentElementStart(doc, "a")
	}
	for i := depth - 1; i >= 0; i-- {
		doc, _ = bsoncore.AppendDocumentEnd(doc, starts[i])
	}
	return doc
}

func TestReadDocumentDepth(t *testing.T) {
	if _, _, err := readDocument(nested(maxNestingDepth)); err != nil {
		t.Errorf("depth %d: %v", maxNestingDepth, err)
	}
	for _, depth := range []int{maxNestingDepth + 1, 1_000_000} {
		_, _, err := readDocument(nested(depth))
		if !errors.Is(err, ErrInvalidBSON) || !strings.Contains(err.Error(), "nested") {
			t.Errorf("depth %d: err = %v, want ErrInvalidBSON about nesting", depth, err)
		}
	}
}

func TestReadDocumentValues(t *testing.T) {
	doc := func(elems ...[]byte) []byte { return bsoncore.BuildDocument(nil, elems...) }
	scope := doc(bsoncore.AppendInt32Element(nil, "x", 1))
	codeWithScope := bsoncore.AppendCodeWithScopeElement(nil, "f", "return x", scope)
	array := bsoncore.BuildArrayElement(nil, "list", bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 7)})

	// corrupt returns a copy of b with the byte at i (from the end when
	// negative) set to v.
	corrupt := func(b []byte, i int, v byte) []byte {
		b = append([]byte(nil), b...)
		if i < 0 {
			i += len(b)
		}
		b[i] = v
		return b
	}
	for _, tc := range []struct {
		name string
		doc  []byte
		ok   bool
	}{
		{"empty", doc(), true},
		{"every kind of scalar", doc(
			bsoncore.AppendDoubleElement(nil, "d", 1.5),
			bsoncore.AppendStringElement(nil, "s", "text"),
			bsoncore.AppendBinaryElement(nil, "b", 0, []byte{1, 2}),
			bsoncore.AppendBooleanElement(nil, "t", true),
			bsoncore.AppendNullElement(nil, "n"),
			bsoncore.AppendRegexElement(nil, "r", "^a", "i"),
			bsoncore.AppendInt64Element(nil, "l", 1),
			bsoncore.AppendJavaScriptElement(nil, "js", "1"),
			bsoncore.AppendSymbolElement(nil, "sym", "s"),
			bsoncore.AppendMinKeyElement(nil, "min"),
		), true},
		{"array", doc(array), true},
		{"code with scope", doc(codeWithScope), true},
		{"array missing its final null", doc(corrupt(array, -1, 'x')), false},
		{"string missing its null", doc(corrupt(bsoncore.AppendStringElement(nil, "s", "text"), -1, '!')), false},
		{"string of length zero", doc(corrupt(bsoncore.AppendStringElement(nil, "s", ""), 3, 0), bsoncore.AppendNullElement(nil, "n")), false},
		{"scope missing its final null", doc(corrupt(codeWithScope, -1, 'x')), false},
		{"code missing its null", doc(corrupt(codeWithScope, 1+2+4+4+len("return x"), 'y')), false},
		{"unknown type", doc(corrupt(bsoncore.AppendNullElement(nil, "n"), 0, 0x42)), false},
		{"length below five", []byte{4, 0, 0, 0}, false},
		{"no final null", corrupt(doc(), -1, 1), false},
	} {
		_, rest, err := readDocument(tc.doc)
		switch {
		case tc.ok && (err != nil || len(rest) != 0):
			t.Errorf("%s: %v", tc.name, err)
		case !tc.ok && !errors.Is(err, ErrInvalidBSON):
			t.Errorf("%s: err = %v, want ErrInvalidBSON", tc.name, err)
		}
	}
}
