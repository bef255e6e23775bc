package invariants

import "fmt"

// Check panics with the formatted message when ok is false and the
// assertions are compiled in. Callers guard costly arguments with Enabled.
func Check(ok bool, format string, args ...any) {
	if Enabled && !ok {
		panic("invariant broken: " + fmt.Sprintf(format, args...))
	}
}
