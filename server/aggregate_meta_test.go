package server

import (
	"testing"
)

// Commands file their latency by MongoDB's kinds.
func TestLatencyKind(t *testing.T) {
	for name, want := range map[string]string{
		"find": "reads", "getMore": "reads", "aggregate": "reads", "count": "reads", "distinct": "reads",
		"insert": "writes", "update": "writes", "delete": "writes", "findAndModify": "writes",
		"createIndexes": "commands", "collStats": "commands", "drop": "commands",
	} {
		got := map[int]string{0: "reads", 1: "writes", 2: "commands"}[int(latencyKind(name))]
		if got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
}
