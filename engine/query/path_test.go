package query

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func TestWalkPath(t *testing.T) {
	tests := []struct {
		doc, path string
		want      string
	}{
		{`{"a": 1}`, "a", `1`},
		{`{"a": 1}`, "b", ``},
		{`{"a": {"b": "x"}}`, "a.b", `"x"`},
		{`{"a": 1}`, "a.b", ``},
		{`{"a": [1, 2]}`, "a", `1 2 [1,2]`},
		{`{"a": []}`, "a", `[]`},
		{`{"a": [{"b": 1}, {"c": 2}, {"b": [3]}]}`, "a.b", `1 3 [3]`},
		{`{"a": [[{"b": 1}]]}`, "a.b", ``},
		{`{"a": [[{"b": 1}]]}`, "a.0.b", `1`},
		{`{"a": [5, [6, 7]]}`, "a.1", `[6,7]`},
		{`{"a": [{"b": 1}, {"b": 2}]}`, "a.1.b", `2`},
		{`{"a": {"0": 8}}`, "a.0", `8`},
		{`{"a": [{"0": 8}, 9]}`, "a.0", `8 {"0": 8}`},
		{`{"a": [1, 2]}`, "a.01", ``},
	}
	for _, tt := range tests {
		var got []string
		WalkPath(raw(t, tt.doc), tt.path, func(v bsoncore.Value) bool {
			got = append(got, relaxed(v.String()))
			return true
		})
		if s := strings.Join(got, " "); s != tt.want {
			t.Errorf("WalkPath(%s, %q) = %s, want %s", tt.doc, tt.path, s, tt.want)
		}
	}
}

func TestWalkPathStops(t *testing.T) {
	calls := 0
	WalkPath(raw(t, `{"a": [1, 2, 3]}`), "a", func(bsoncore.Value) bool {
		calls++
		return calls < 2
	})
	if calls != 2 {
		t.Errorf("walk went on for %d calls after fn returned false", calls)
	}
}
