package integration

import "testing"

// TestNodeDriverTextSearch runs a Node.js application's text search: a
// text index, a $text find sorted by its score, an aggregation projecting
// the score, and the error without a text index.
func TestNodeDriverTextSearch(t *testing.T) {
	runNodeScript(t, "textsearch.mjs", startServer(t).URI)
}
