package usermgmt

import (
	"testing"

	"github.com/lethedb/lethe/auth"
)

// The iteration counts of new credentials are the configured ones (the
// server refuses counts below MongoDB's least: server's
// TestScramIterationsRefused).
func TestScramIterationsConfig(t *testing.T) {
	s := New(Config{ScramSHA1Iterations: 6000, ScramSHA256Iterations: 5000})
	creds, err := s.credentials("u", "pw", nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if n := creds[auth.ScramSHA1].IterationCount; n != 6000 {
		t.Errorf("SCRAM-SHA-1 iterations %d", n)
	}
	if n := creds[auth.ScramSHA256].IterationCount; n != 5000 {
		t.Errorf("SCRAM-SHA-256 iterations %d", n)
	}
}
