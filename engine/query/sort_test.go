package query

import (
	"reflect"
	"testing"

	"github.com/lethedb/lethe/mongoerr"
)

func TestCompileSort(t *testing.T) {
	s, err := CompileSort(raw(t, `{"a": 1, "b.c": -1, "d": {"$numberLong": "-1"}, "e": 1.0}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []SortField{{"a", false}, {"b.c", true}, {"d", true}, {"e", false}}
	if got := s.Fields(); !reflect.DeepEqual(got, want) {
		t.Errorf("Fields() = %v, want %v", got, want)
	}
	if s.Natural() != 0 {
		t.Errorf("Natural() = %d", s.Natural())
	}
	for spec, natural := range map[string]int{`{"$natural": 1}`: 1, `{"$natural": -1}`: -1} {
		s, err := CompileSort(raw(t, spec))
		if err != nil {
			t.Fatal(err)
		}
		if s.Natural() != natural || len(s.Fields()) != 0 {
			t.Errorf("%s: Natural() = %d, Fields() = %v", spec, s.Natural(), s.Fields())
		}
		if c := s.Compare(raw(t, `{"a": 1}`), raw(t, `{"a": 2}`)); c != 0 {
			t.Errorf("%s: Compare = %d, want storage order", spec, c)
		}
	}
	empty, err := CompileSort(nil)
	if err != nil || len(empty.Fields()) != 0 || empty.Natural() != 0 {
		t.Errorf("CompileSort(nil) = %v, %v", empty, err)
	}
}

func TestCompileSortErrors(t *testing.T) {
	tests := map[string]mongoerr.Code{
		`{"a": 2}`:                      15975,
		`{"a": 0.5}`:                    15975,
		`{"a": "asc"}`:                  15974,
		`{"a": true}`:                   15974,
		`{"abc": {"$meta": "randVal"}}`: mongoerr.NotImplemented,
		`{"a": {"b": 1}}`:               17312,
		`{"$natural": 1, "a": 1}`:       mongoerr.BadValue,
		`{"$natural": 2}`:               15975,
		`{"$a": 1}`:                     16410,
		`{"a..b": 1}`:                   15998,
		`{"": 1}`:                       40352,
	}
	for spec, code := range tests {
		_, err := CompileSort(raw(t, spec))
		if got := mongoerr.CodeOf(err); err == nil || got != code {
			t.Errorf("CompileSort(%s) = %v (code %d), want code %d", spec, err, got, code)
		}
	}
}

func TestSortCompare(t *testing.T) {
	tests := []struct {
		spec, a, b string
		want       int
	}{
		{`{"a": 1}`, `{"a": 1}`, `{"a": 2}`, -1},
		{`{"a": -1}`, `{"a": 1}`, `{"a": 2}`, 1},
		{`{"a": 1}`, `{"a": 1}`, `{"a": 1.0}`, 0},
		{`{"a": 1}`, `{}`, `{"a": null}`, 0},
		{`{"a": -1}`, `{}`, `{"a": null}`, 0},
		{`{"a": 1}`, `{"a": []}`, `{"a": null}`, -1},
		{`{"a": -1}`, `{"a": []}`, `{"a": null}`, 1},
		{`{"a": 1}`, `{"a": [3, 1]}`, `{"a": 2}`, -1},
		{`{"a": -1}`, `{"a": [3, 1]}`, `{"a": 2}`, -1},
		{`{"a": 1}`, `{"a": [1]}`, `{"a": 1}`, 0},
		{`{"a": 1}`, `{"a": [[1]]}`, `{"a": {"b": 1}}`, 1},
		{`{"a": 1}`, `{"a": "x"}`, `{"a": 5}`, 1},
		{`{"a.b": 1}`, `{"a": [{"b": 3}, {"b": 1}]}`, `{"a": {"b": 2}}`, -1},
		{`{"a.b": -1}`, `{"a": [{"b": 3}, {"b": 1}]}`, `{"a": {"b": 2}}`, -1},
		{`{"a.b": 1}`, `{"a": [{"b": 3}, {"c": 1}]}`, `{"a": {"b": 2}}`, -1},
		{`{"a.b": 1}`, `{"a": [1, 2]}`, `{"a": {"b": null}}`, 0},
		{`{"a.b": 1}`, `{"a": []}`, `{}`, 0},
		{`{"a.b": 1}`, `{"a": [{"b": []}]}`, `{}`, -1},
		{`{"a.1": 1}`, `{"a": [9, 2]}`, `{"a": [1, 3]}`, -1},
		{`{"a.1": 1}`, `{"a": [9]}`, `{"a": [1, 3]}`, -1},
		{`{"a.0": 1}`, `{"a": [[2, 1]]}`, `{"a": [[3]]}`, -1},
		{`{"a": 1, "b": -1}`, `{"a": 1, "b": 1}`, `{"a": 1, "b": 2}`, 1},
		{`{"a": 1, "b": -1}`, `{"a": 0, "b": 1}`, `{"a": 1, "b": 2}`, -1},
	}
	for _, tt := range tests {
		s, err := CompileSort(raw(t, tt.spec))
		if err != nil {
			t.Fatal(err)
		}
		a, b := raw(t, tt.a), raw(t, tt.b)
		if got := s.Compare(a, b); got != tt.want {
			t.Errorf("%s: Compare(%s, %s) = %d, want %d", tt.spec, tt.a, tt.b, got, tt.want)
		}
		if got := s.Compare(b, a); got != -tt.want {
			t.Errorf("%s: Compare(%s, %s) = %d, want %d", tt.spec, tt.b, tt.a, got, -tt.want)
		}
	}
}
