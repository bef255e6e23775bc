package query

import "testing"

// TestMatchPositionalArrayOffset follows MongoDB's
// update_array_offset_positional.js: an element selected by a numeric path
// component is not an implicit array traversal, so it gives the positional
// operator nothing, on the same path or another one.
func TestMatchPositionalArrayOffset(t *testing.T) {
	tests := []struct {
		doc, filter string
		want        int
	}{
		{`{"a": [0]}`, `{"a.0": 0}`, -1},
		{`{"a": [{"b": 0}]}`, `{"a.0.b": 0}`, -1},
		{`{"a": [[0]]}`, `{"a.0.0": 0}`, -1},
		{`{"a": [{"b": [0]}]}`, `{"a.0.b.0": 0}`, -1},
		{`{"a": [{"b": [0, 1]}]}`, `{"a.0.b": 1}`, 1},
		{`{"a": [{"b": [0, 1]}]}`, `{"a.b.1": 1}`, 0},
		{`{"a": [0, 1], "b": [0]}`, `{"a": 1, "b.0": 0}`, 1},
		{`{"a": [0, 1], "b": [{"c": 0}]}`, `{"a": 1, "b.0.c": 0}`, 1},
		{`{"a": [0, 1], "b": [[0]]}`, `{"a": 1, "b.0.0": 0}`, 1},
		{`{"a": [0, 1], "b": [{"c": [0]}]}`, `{"a": 1, "b.0.c.0": 0}`, 1},
	}
	for _, tt := range tests {
		matched, i, _ := mustCompile(t, tt.filter).MatchPositional(raw(t, tt.doc))
		if !matched || i != tt.want {
			t.Errorf("%s against %s: matched %v at %d, want a match at %d", tt.filter, tt.doc, matched, i, tt.want)
		}
	}
}
