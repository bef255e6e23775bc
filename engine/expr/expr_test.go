package expr

import (
	"bytes"
	"testing"

	"github.com/lethedb/lethe/mongoerr"
)

func TestExprEval(t *testing.T) {
	doc := raw(t, `{"a": 2, "b": {"$numberLong": "3"}, "c": 1.5, "i": 2147483647, "l": {"$numberLong": "9223372036854775807"},
		"d": {"$date": "2020-01-01T00:00:00Z"}, "arr": [{"v": 1}, {"v": [2, 3]}, 4, [{"v": 5}]], "s": "x"}`)
	tests := []struct {
		expr, want string
	}{
		{`"$a"`, `2`},
		{`"$missing"`, ``},
		{`"$arr.v"`, `[1, [2, 3]]`},
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
		{`{"$sum": [1, 2]}`, `3`},
		{`{"$sum": [[1, {"$numberLong": "2"}, "x"]]}`, `{"$numberLong": "3"}`},
		{`{"$sum": [2147483647, 1]}`, `{"$numberLong": "2147483648"}`},
		{`{"$sum": "x"}`, `0`},
		{`{"$avg": [[1, 2]]}`, `1.5`},
		{`{"$avg": [{"$numberDecimal": "1"}, 2]}`, `{"$numberDecimal": "1.5"}`},
		{`{"$max": [[1, "a", null]]}`, `"a"`},
		{`{"$min": [null]}`, `null`},
		{`{"$ifNull": ["$missing", null, "z"]}`, `"z"`},
		{`{"$ifNull": ["$missing", "$missing"]}`, ``},
		{`{"x": "$a", "y": "$missing"}`, `{"x": 2}`},
		{`["$a", "$missing"]`, `[2, null]`},
		{`{"$literal": {"$add": 1}}`, `{"$add": 1}`},
		{`{"$and": []}`, `true`},
		{`{"$or": []}`, `false`},
		{`{"$add": [{"$numberDecimal": "1.1"}, 2]}`, `{"$numberDecimal": "3.1"}`},
		{`{"$add": [{"$numberDecimal": "1"}, 0.1]}`, `{"$numberDecimal": "1.100000000000000"}`},
		{`{"$multiply": [{"$numberDecimal": "1.5"}, {"$numberDecimal": "2.0"}]}`, `{"$numberDecimal": "3.00"}`},
		{`{"$multiply": [1.5, {"$numberDecimal": "2"}]}`, `{"$numberDecimal": "3.00000000000000"}`},
		{`{"$divide": [{"$numberDecimal": "1"}, 3]}`, `{"$numberDecimal": "0.3333333333333333333333333333333333"}`},
		{`{"$divide": [{"$numberDecimal": "1"}, 4]}`, `{"$numberDecimal": "0.25"}`},
		{`{"$divide": [{"$numberDecimal": "10"}, {"$numberDecimal": "2"}]}`, `{"$numberDecimal": "5"}`},
		{`{"$divide": [{"$numberDecimal": "2"}, {"$numberDecimal": "3"}]}`, `{"$numberDecimal": "0.6666666666666666666666666666666667"}`},
		{`{"$add": [{"$numberDecimal": "9999999999999999999999999999999999"}, 1]}`, `{"$numberDecimal": "1.000000000000000000000000000000000E+34"}`},
		{`{"$mod": [{"$numberDecimal": "7.5"}, 2]}`, `{"$numberDecimal": "1.5"}`},
		{`{"$subtract": [{"$numberDecimal": "-0"}, {"$numberDecimal": "0"}]}`, `{"$numberDecimal": "-0"}`},
		{`{"$abs": {"$numberDecimal": "-1.50"}}`, `{"$numberDecimal": "1.50"}`},
		{`{"$add": [0.4, "$d", 0.4]}`, `{"$date": "2020-01-01T00:00:00Z"}`},
		{`{"$add": [0.4, 0.4, "$d"]}`, `{"$date": "2020-01-01T00:00:00.001Z"}`},
		{`{"$abs": {"$numberInt": "-2147483648"}}`, `{"$numberLong": "2147483648"}`},
		{`{"$mod": [{"$numberLong": "-9223372036854775808"}, -1]}`, `{"$numberLong": "0"}`},
		{`{"$toDecimal": 2.5}`, `{"$numberDecimal": "2.50000000000000"}`},
		{`{"$toString": 2.5}`, `"2.5"`},
		{`{"$toString": 1e20}`, `"1e+20"`},
		{`{"$toString": 0.00001}`, `"1e-05"`},
		{`{"$toString": 0.0001}`, `"0.0001"`},
		{`{"$toString": -0.0}`, `"-0"`},
		{`{"$toString": "$d"}`, `"2020-01-01T00:00:00.000Z"`},
		{`{"$toString": {"$numberDecimal": "1E+3"}}`, `"1E+3"`},
		{`{"$toLower": 123456789.0}`, `"1.23457e+08"`},
		{`{"$toUpper": "héllo"}`, `"HéLLO"`},
		{`{"$substrCP": ["héllo", 1, 3]}`, `"éll"`},
		{`{"$indexOfCP": ["abc", "", 3]}`, `-1`},
		{`{"$indexOfBytes": ["abc", "", 3]}`, `3`},
		{`{"$indexOfCP": ["", ""]}`, `0`},
		{`{"$split": ["a--b--", "--"]}`, `["a", "b", ""]`},
		{`{"$ltrim": {"input": "xxaxx", "chars": "x"}}`, `"axx"`},
		{`{"$mergeObjects": [{"x": 1, "y": 2}, null, {"x": 3}]}`, `{"x": 3, "y": 2}`},
		{`{"$let": {"vars": {"CURRENT": {"x": 7}}, "in": "$x"}}`, `7`},
		{`{"$map": {"input": [1, 2], "in": "$$this.x"}}`, `[null, null]`},
		{`{"$toInt": "-42"}`, `-42`},
		{`{"$toLong": 3.9}`, `{"$numberLong": "3"}`},
		{`{"$toDate": "2021-02-03T04:05:06.789+01:00"}`, `{"$date": "2021-02-03T03:05:06.789Z"}`},
		{`{"$convert": {"input": "abc", "to": "int", "onError": "bad"}}`, `"bad"`},
		{`{"$size": [[1, 2, 3]]}`, `3`},
		{`{"$sum": [1, 2]}`, `3`},
		{`{"$sum": [[1, {"$numberLong": "2"}, "x"]]}`, `{"$numberLong": "3"}`},
		{`{"$sum": [2147483647, 1]}`, `{"$numberLong": "2147483648"}`},
		{`{"$sum": "x"}`, `0`},
		{`{"$avg": [[1, 2]]}`, `1.5`},
		{`{"$avg": [{"$numberDecimal": "1"}, 2]}`, `{"$numberDecimal": "1.5"}`},
		{`{"$max": [[1, "a", null]]}`, `"a"`},
		{`{"$min": [null]}`, `null`},
		{`"$$REMOVE"`, ``},
		{`{"$arrayElemAt": [[1, 2], 5]}`, ``},
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
		if got.Type != want.Type || !bytes.Equal(got.Data, want.Data) {
			t.Errorf("Eval(%s) = %s, want %s", tt.expr, got, want)
		}
	}
}

func TestExprEvalErrors(t *testing.T) {
	doc := raw(t, `{"a": 2, "s": "x", "l": {"$numberLong": "-9223372036854775808"}, "d": {"$date": "2020-01-01T00:00:00Z"}}`)
	tests := map[string]mongoerr.Code{
		`{"$add": ["$a", "$s"]}`:                                  mongoerr.TypeMismatch,
		`{"$add": ["$d", "$d"]}`:                                  codeAddTwoDates,
		`{"$multiply": ["$s", 2]}`:                                mongoerr.TypeMismatch,
		`{"$subtract": ["$a", "$d"]}`:                             mongoerr.TypeMismatch,
		`{"$divide": ["$a", 0]}`:                                  mongoerr.BadValue,
		`{"$divide": ["$s", 1]}`:                                  mongoerr.TypeMismatch,
		`{"$mod": ["$a", 0]}`:                                     codeModByZero,
		`{"$abs": "$s"}`:                                          codeAbsType,
		`{"$abs": "$l"}`:                                          codeAbsOverflow,
		`{"$size": "$a"}`:                                         17124,
		`{"$in": ["$a", "$a"]}`:                                   40081,
		`{"$add": ["$d", 1e300]}`:                                 mongoerr.Overflow,
		`{"$concat": ["a", 1]}`:                                   16702,
		`{"$toUpper": {"a": 1}}`:                                  16007,
		`{"$substrCP": ["a", -1, 1]}`:                             34455,
		`{"$substrBytes": ["é", 1, 1]}`:                           28656,
		`{"$strLenCP": null}`:                                     34471,
		`{"$split": ["a", ""]}`:                                   40087,
		`{"$trim": {"input": 1}}`:                                 50699,
		`{"$indexOfCP": ["a", "b", -1]}`:                          40097,
		`{"$regexMatch": {"input": 1, "regex": "a"}}`:             51104,
		`{"$arrayElemAt": [[1], 1.5]}`:                            28691,
		`{"$concatArrays": [[1], 2]}`:                             28664,
		`{"$slice": [[1], 0, 0]}`:                                 28729,
		`{"$map": {"input": 1, "in": 1}}`:                         16883,
		`{"$reduce": {"input": 1, "initialValue": 0, "in": 1}}`:   40080,
		`{"$mergeObjects": [1]}`:                                  40400,
		`{"$switch": {"branches": [{"case": false, "then": 1}]}}`: 40066,
		`{"$toInt": "abc"}`:                                       mongoerr.ConversionFailure,
		`{"$toInt": 3e10}`:                                        mongoerr.ConversionFailure,
		`{"$toInt": "$d"}`:                                        mongoerr.ConversionFailure,
		`{"$convert": {"input": 1, "to": "nonsense"}}`:            mongoerr.BadValue,
		`{"$mod": [{"$numberDecimal": "1"}, 0]}`:                  codeDecimalModByZero,
		`"$$CLUSTER_TIME"`:                                        51144,
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
}
