package query

import (
	"testing"

	"github.com/lethedb/lethe/mongoerr"
)

func TestMatchPositional(t *testing.T) {
	tests := []struct {
		filter, doc string
		matched     bool
		index       int
	}{
		{`{"a": 6}`, `{"a": [5, 6]}`, true, 1},
		{`{"a": [5, 6]}`, `{"a": [5, 6]}`, true, -1},
		{`{"a.b": 2}`, `{"a": [{"b": 1}, {"b": 2}]}`, true, 1},
		{`{"a.b": 3}`, `{"a": [{"b": [1]}, {"b": [2, 3]}]}`, true, 1},
		{`{"a": {"$elemMatch": {"b": 2}}}`, `{"a": [{"b": 1}, {"b": 2}]}`, true, 1},
		{`{"a.b": {"$elemMatch": {"$gt": 2}}}`, `{"a": [{"b": [1]}, {"b": [2, 3]}]}`, true, 1},
		{`{"a.1": 6}`, `{"a": [5, 6]}`, true, -1},
		{`{"a.0.b": 7}`, `{"a": [{"b": [6, 7]}]}`, true, 1},
		{`{"x": 1, "a": 6}`, `{"x": 1, "a": [5, 6]}`, true, 1},
		{`{"a": 6, "b": 2}`, `{"a": [5, 6], "b": [2, 1]}`, true, 1},
		{`{"a": {"$ne": 5}}`, `{"a": [4, 6]}`, true, -1},
		{`{"$or": [{"a": 6}]}`, `{"a": [5, 6]}`, true, -1},
		{`{"a": 7}`, `{"a": [5, 6]}`, false, -1},
		{`{"a": 5}`, `{"a": 5}`, true, -1},
	}
	for _, tt := range tests {
		f := mustCompile(t, tt.filter)
		matched, index, err := f.MatchPositional(raw(t, tt.doc))
		if err != nil {
			t.Fatalf("%s on %s: %v", tt.filter, tt.doc, err)
		}
		if matched != tt.matched || index != tt.index {
			t.Errorf("%s on %s: got (%v, %d), want (%v, %d)", tt.filter, tt.doc, matched, index, tt.matched, tt.index)
		}
		if m := f.Match(raw(t, tt.doc)); m != matched {
			t.Errorf("%s on %s: Match %v, MatchPositional %v", tt.filter, tt.doc, m, matched)
		}
	}
}

// TestRefusals covers what MongoDB supports and Lethe does not.
func TestRefusals(t *testing.T) {
	tests := []struct {
		filter string
		code   mongoerr.Code
	}{
		{`{"$where": "this.a == 1"}`, mongoerr.BadValue},
		{`{"a": {"$regex": "a(?=b)"}}`, mongoerr.BadValue},
		{`{"a": {"$regex": "(a)\\1"}}`, mongoerr.BadValue},
	}
	for _, tt := range tests {
		_, err := Compile(raw(t, tt.filter))
		if code := mongoerr.CodeOf(err); err == nil || code != tt.code {
			t.Errorf("Compile(%s) = %v (code %d), want code %d", tt.filter, err, code, tt.code)
		}
	}
}

func TestCompileEmpty(t *testing.T) {
	for _, filter := range [][]byte{nil, raw(t, `{}`)} {
		f, err := Compile(filter)
		if err != nil {
			t.Fatal(err)
		}
		if !f.Match(raw(t, `{"a": 1}`)) {
			t.Errorf("empty filter %v does not match", filter)
		}
	}
}

func TestCompileRejectsInvalidBSON(t *testing.T) {
	if _, err := Compile([]byte{5, 0, 0, 0}); err == nil {
		t.Error("compiled a truncated document")
	}
}

// TestFilterOwnsItsSource checks that a filter does not depend on the buffer
// it was compiled from, which servers reuse.
func TestFilterOwnsItsSource(t *testing.T) {
	src := raw(t, `{"a": {"$in": [1, 2]}, "b": "x"}`)
	f, err := Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	clear(src)
	if !f.Match(raw(t, `{"a": 2, "b": "x"}`)) {
		t.Error("filter changed with its source buffer")
	}
}

// TestMatchMalformedDocument checks that truncated documents do not panic.
func TestMatchMalformedDocument(t *testing.T) {
	f := mustCompile(t, `{"a.b": {"$gt": 1}, "c": {"$exists": false}}`)
	doc := raw(t, `{"a": {"b": 5}, "c": [1, 2, 3]}`)
	for n := 0; n < len(doc); n++ {
		f.Match(doc[:n])
	}
}
