package accum

import (
	"testing"

	"github.com/lethedb/lethe/mongoerr"
)

func TestPushAccumulatorLimit(t *testing.T) {
	a := &pushAcc{op: "$push"}
	if _, err := a.gathered(maxAccumulatorBytes); err != nil {
		t.Fatal(err)
	}
	if _, err := a.gathered(1); mongoerr.CodeOf(err) != mongoerr.ExceededMemoryLimit {
		t.Errorf("$push past 100 MiB: %v, want ExceededMemoryLimit", err)
	}
}
