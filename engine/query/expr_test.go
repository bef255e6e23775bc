package query

import (
	"testing"

	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/mongoerr"
)

func TestExprEval(t *testing.T) {
	doc := raw(t, `{"a": 2, "b": {"$numberLong": "3"}, "c": 1.5, "i": 2147483647, "l": {"$numberLong": "9223372036854775807"},
		"d": {"$date": "2020-01-01T00:00:00Z"}, "arr": [{"v": 1}, {"v": [2, 3]}, 4, [{"v": 5}]], "s": "x"}`)
	tests := []struct {
		expr, want string
	}{
		{`"$a"`, `2`},
		{`"$missing"`, ``},
		{`"$arr.v"`, `[1, [2, 3], [5]]`},
		{`{"$add": ["$a", "$a"]}`, `4`},
		{`{"$add": ["$a", "$b"]}`, `{"$numberLong": "5"}`},
		{`{"$add": ["$a", "$c"]}`, `3.5`},
		{`{"$add": ["$i", 1]}`, `{"$numberLong": "2147483648"}`},
		{`{"$add": ["$l", 1]}`, `9.223372036854775808e18`},
		{`{"$add": ["$d", 1000]}`, `{"$date": "2020-01-01T00:00:01Z"}`},
		{`{"$add": []}`, `0`},
		{`{"$add": ["$a", null]}`, `null`},
		{`{"$multiply": ["$i", 2]}`, `{"$numberLong": "4294967294"}`},
		{`{"$multiply": ["$l", 2]}`, `1.8446744073709552e19`},
		{`{"$subtract": ["$a", "$b"]}`, `{"$numberLong": "-1"}`},
		{`{"$subtract": ["$d", {"$date": "2019-12-31T00:00:00Z"}]}`, `{"$numberLong": "86400000"}`},
		{`{"$subtract": ["$d", 1000]}`, `{"$date": "2019-12-31T23:59:59Z"}`},
		{`{"$divide": ["$a", 4]}`, `0.5`},
		{`{"$mod": ["$b", 2]}`, `{"$numberLong": "1"}`},
		{`{"$mod": [7.5, 2]}`, `1.5`},
		{`{"$abs": -3}`, `3`},
		{`{"$cmp": ["$s", "$a"]}`, `1`},
		{`{"$in": ["$a", [1, 2]]}`, `true`},
		{`{"$size": [[1, 2, 3]]}`, `3`},
		{`{"$ifNull": ["$missing", null, "z"]}`, `"z"`},
		{`{"$ifNull": ["$missing", "$missing"]}`, ``},
		{`{"x": "$a", "y": "$missing"}`, `{"x": 2}`},
		{`["$a", "$missing"]`, `[2, null]`},
		{`{"$literal": {"$add": 1}}`, `{"$add": 1}`},
		{`{"$and": []}`, `true`},
		{`{"$or": []}`, `false`},
	}
	for _, tt := range tests {
		e, err := CompileExpr(value(t, tt.expr))
		if err != nil {
			t.Errorf("CompileExpr(%s): %v", tt.expr, err)
			continue
		}
		got, err := e.Eval(doc)
		if err != nil {
			t.Errorf("Eval(%s): %v", tt.expr, err)
			continue
		}
		if tt.want == "" {
			if got.Type != 0 {
				t.Errorf("Eval(%s) = %s, want missing", tt.expr, got)
			}
			continue
		}
		want := value(t, tt.want)
		if got.Type != want.Type || keycodec.Compare(got, want) != 0 {
			t.Errorf("Eval(%s) = %s, want %s", tt.expr, got, want)
		}
	}
}

func TestExprEvalErrors(t *testing.T) {
	doc := raw(t, `{"a": 2, "s": "x", "l": {"$numberLong": "-9223372036854775808"}, "d": {"$date": "2020-01-01T00:00:00Z"}}`)
	tests := map[string]mongoerr.Code{
		`{"$add": ["$a", "$s"]}`:                 codeAddType,
		`{"$add": ["$d", "$d"]}`:                 codeAddTwoDates,
		`{"$multiply": ["$s", 2]}`:               codeMultiplyType,
		`{"$subtract": ["$a", "$d"]}`:            codeSubtractType,
		`{"$divide": ["$a", 0]}`:                 codeDivideByZero,
		`{"$divide": ["$s", 1]}`:                 codeDivideType,
		`{"$mod": ["$a", 0]}`:                    codeModByZero,
		`{"$abs": "$s"}`:                         codeAbsType,
		`{"$abs": "$l"}`:                         codeAbsOverflow,
		`{"$size": "$a"}`:                        codeSizeType,
		`{"$in": ["$a", "$a"]}`:                  codeInType,
		`{"$add": [{"$numberDecimal": "1"}, 1]}`: mongoerr.NotImplemented,
	}
	for expr, code := range tests {
		e, err := CompileExpr(value(t, expr))
		if err != nil {
			t.Errorf("CompileExpr(%s): %v", expr, err)
			continue
		}
		if _, err := e.Eval(doc); mongoerr.CodeOf(err) != code {
			t.Errorf("Eval(%s) = %v, want code %d", expr, err, code)
		}
	}
	// A runtime error makes $expr not match, rather than match everything.
	if mustCompile(t, `{"$expr": {"$not": [{"$add": ["$a", "$s"]}]}}`).Match(doc) {
		t.Error("$expr with a runtime error matched")
	}
}
