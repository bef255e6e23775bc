package query

import (
	"testing"

	"github.com/lethedb/lethe/mongoerr"
)

// The conformance file testdata/query/jsonschema.json covers MongoDB's
// behaviour; these tests cover what only Lethe does.

// TestJSONSchemaRefusals covers schemas MongoDB accepts and Lethe refuses.
func TestJSONSchemaRefusals(t *testing.T) {
	tests := []struct {
		filter string
		code   mongoerr.Code
	}{
		// Go's regexp has no lookaround or backreferences.
		{`{"$jsonSchema": {"properties": {"a": {"pattern": "a(?=b)"}}}}`, mongoerr.BadValue},
		{`{"$jsonSchema": {"patternProperties": {"(a)\\1": {}}}}`, mongoerr.BadValue},
		{`{"$jsonSchema": {"dependencies": {"a": ["b"]}}}`, mongoerr.NotImplemented},
		{`{"$jsonSchema": {"encrypt": {}}}`, mongoerr.NotImplemented},
		{`{"a": {"$elemMatch": {"$jsonSchema": {}}}}`, mongoerr.BadValue},
	}
	for _, tt := range tests {
		_, err := Compile(raw(t, tt.filter))
		if code := mongoerr.CodeOf(err); err == nil || code != tt.code {
			t.Errorf("Compile(%s) = %v (code %d), want code %d", tt.filter, err, code, tt.code)
		}
	}
}

func TestJSONSchemaValues(t *testing.T) {
	tests := []struct {
		schema, doc string
		want        bool
	}{
		{`{"properties": {"a": {"minimum": {"$numberDecimal": "1.5"}}}}`, `{"a": 2}`, true},
		{`{"properties": {"a": {"minimum": 1}}}`, `{"a": {"$numberDouble": "NaN"}}`, false},
		{`{"properties": {"a": {"multipleOf": 2}}}`, `{"a": {"$numberDouble": "Infinity"}}`, false},
		{`{"properties": {"a": {"multipleOf": {"$numberDecimal": "0.25"}}}}`, `{"a": {"$numberDecimal": "1.75"}}`, true},
		{`{"properties": {"a": {"pattern": "x"}}}`, `{"a": {"$symbol": "y"}}`, true},
		{`{"properties": {"a": {"uniqueItems": true}}}`, `{"a": [1, 1.0]}`, false},
		{`{"properties": {"a": {"uniqueItems": true}}}`, `{"a": [{"b": 1}, {"b": 2}]}`, true},
		{`{"properties": {"a": {"uniqueItems": false}}}`, `{"a": [1, 1]}`, true},
		{`{"properties": {"a": {"items": [{}, {}], "maxItems": 1}}}`, `{"a": [1, 2]}`, false},
		{`{"properties": {"a": {"oneOf": [{"minimum": 1}, {"minimum": 2}]}}}`, `{"a": 3}`, false},
		{`{"properties": {"a": {"oneOf": [{"minimum": 1}, {"minimum": 2}]}}}`, `{"a": 1}`, true},
	}
	for _, tt := range tests {
		f := mustCompile(t, `{"$jsonSchema": `+tt.schema+`}`)
		if got := f.Match(raw(t, tt.doc)); got != tt.want {
			t.Errorf("%s matching %s = %v, want %v", tt.schema, tt.doc, got, tt.want)
		}
	}
}
