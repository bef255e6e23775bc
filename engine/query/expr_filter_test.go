package query

import "testing"

// A runtime error makes $expr not match, rather than match everything.
func TestExprRuntimeErrorDoesNotMatch(t *testing.T) {
	doc := raw(t, `{"a": 2, "s": "x"}`)
	if mustCompile(t, `{"$expr": {"$not": [{"$add": ["$a", "$s"]}]}}`).Match(doc) {
		t.Error("$expr with a runtime error matched")
	}
}
