package expr

import (
	"strings"
	"testing"

	"github.com/lethedb/lethe/mongoerr"
)

// A $zip that repeats a default on every row builds far more than its
// inputs hold: it must stop at the size bound rather than build it all.
func TestZipRepeatedDefaultsBounded(t *testing.T) {
	doc := raw(t, `{"s": "`+strings.Repeat("x", 1024)+`"}`)
	ex, err := CompileExpr(value(t, `{"$zip": {"inputs": [{"$range": [0, 100000]}, []],
		"useLongestLength": true, "defaults": [null, "$s"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ex.Eval(doc); mongoerr.CodeOf(err) != mongoerr.BSONObjectTooLarge {
		t.Fatalf("got %v, want BSONObjectTooLarge", err)
	}
}
