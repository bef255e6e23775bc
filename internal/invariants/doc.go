// Package invariants holds cheap assertions of what must always hold on the
// write path: a writer's locks paired with its transaction, its commits
// within their caps, a collection's catalog state never coming back from
// dropped. They are compiled in only with the build tag "lethe_invariants",
// which `make test` sets, so production builds pay nothing; a broken
// invariant panics with a message that says which. (Not "invariants":
// pebble reads that tag too, and turns on its own costly checks and
// randomized behaviour.)
package invariants
