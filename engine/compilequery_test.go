package engine

import "time"

// compileQuery compiles spec for tests that do not care about $$NOW, which
// is then the time of compilation.
func compileQuery(spec FindSpec) (*compiledQuery, error) {
	return compileQueryAt(spec, time.Time{}, nil)
}
