package main

import (
	"strings"
	"testing"
)

// Iteration counts below MongoDB's least are refused before anything
// starts.
func TestScramIterationFlagsValidated(t *testing.T) {
	for _, args := range [][]string{
		{"lethe", "--scram-sha1-iterations", "4999", "--data-dir", t.TempDir()},
		{"lethe", "--scram-sha256-iterations", "4095", "--data-dir", t.TempDir()},
	} {
		err := run(args)
		if err == nil || !strings.Contains(err.Error(), "iterations") {
			t.Errorf("%v: %v", args[1:3], err)
		}
	}
}
