//go:build !invariants

package invariants

// Enabled reports whether the assertions run: with the invariants tag.
const Enabled = false
