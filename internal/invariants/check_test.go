package invariants

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	Check(true, "never")
	defer func() {
		p := recover()
		if Enabled != (p != nil) {
			t.Fatalf("Enabled %v, panic %v", Enabled, p)
		}
		if p != nil && !strings.Contains(p.(string), "invariant broken: x 1") {
			t.Fatalf("panic %q", p)
		}
	}()
	Check(false, "x %d", 1)
}
