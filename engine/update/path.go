package update

import (
	"math"
	"slices"
	"strings"
)

// arrayIndex parses a path component as an array index. Indexes too large
// for any array saturate rather than fail, so that they read as out of range.
func arrayIndex(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if n < math.MaxInt32 {
			n = min(n*10+int(c-'0'), math.MaxInt32)
		}
	}
	return n, true
}

// fieldLess orders the children of a path the way MongoDB (5.0 on) applies
// them: by name, except that two numbers without leading zeros compare as
// numbers, so that "a.2" is processed before "a.10".
func fieldLess(a, b string) bool {
	if isPlainNumber(a) && isPlainNumber(b) && len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// isPlainNumber reports whether s starts with a digit and has no leading zero.
func isPlainNumber(s string) bool {
	return s != "" && s[0] >= '0' && s[0] <= '9' && (s[0] != '0' || len(s) == 1)
}

// isPositional reports whether a path component is the positional operator.
func isPositional(part string) bool { return part == "$" }

// arrayFilterID returns the identifier of a "$[<id>]" path component; the
// identifier of "$[]" is empty.
func arrayFilterID(part string) (string, bool) {
	if len(part) >= 3 && strings.HasPrefix(part, "$[") && strings.HasSuffix(part, "]") {
		return part[2 : len(part)-1], true
	}
	return "", false
}

// withPart returns path extended by part, never sharing storage with path.
func withPart(path []string, part string) []string {
	return append(slices.Clip(path), part)
}

func dotted(parts ...[]string) string {
	var all []string
	for _, p := range parts {
		all = append(all, p...)
	}
	return strings.Join(all, ".")
}
