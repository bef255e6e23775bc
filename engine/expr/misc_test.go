package expr

import (
	"context"
	"errors"
	"testing"

	"github.com/lethedb/lethe/mongoerr"
)

// The operators of this slice that build values from their inputs stop at
// MaxValueBytes instead of building a larger value.
func TestBuildersStopAtValueLimit(t *testing.T) {
	doc := bigDoc(t, 1<<20)
	for _, expr := range []string{
		// A million empty matches, of some 40 bytes each.
		`{"$regexFindAll": {"input": "$s", "regex": ""}}`,
		`{"$regexFindAll": {"input": "$s", "regex": "^|x"}}`,
		// 1 MiB with 32 bytes around each byte.
		`{"$replaceAll": {"input": "$s", "find": "", "replacement": "0123456789abcdef0123456789abcdef"}}`,
		`{"$replaceAll": {"input": "$s", "find": "x", "replacement": "0123456789abcdef0123456789abcdef"}}`,
	} {
		if code := mongoerr.CodeOf(evalErr(t, doc, expr)); code != mongoerr.BSONObjectTooLarge {
			t.Errorf("%s: code %d, want %d", expr, code, mongoerr.BSONObjectTooLarge)
		}
	}
}

// A long $regexFindAll stops when its request ends.
func TestRegexFindAllHonoursContext(t *testing.T) {
	e, err := CompileExpr(value(t, `{"$regexFindAll": {"input": "$s", "regex": "x"}}`))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.EvalContext(ctx, bigDoc(t, 1000)); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// $rand draws a new value for every evaluation.
func TestRandVaries(t *testing.T) {
	e, err := CompileExpr(value(t, `{"$rand": {}}`))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[float64]bool{}
	for range 20 {
		v, err := e.Eval(raw(t, `{}`))
		if err != nil {
			t.Fatal(err)
		}
		f := v.Double()
		if f < 0 || f >= 1 {
			t.Fatalf("$rand gave %v", f)
		}
		seen[f] = true
	}
	if len(seen) < 2 {
		t.Fatalf("$rand gave the same value 20 times")
	}
}
