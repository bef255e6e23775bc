package server

import (
	"context"
	"testing"

	"github.com/lethedb/lethe/auth"
)

// The iteration counts of new credentials are the configured ones, and
// counts below MongoDB's least are refused.
func TestScramIterationsConfig(t *testing.T) {
	for _, cfg := range []Config{{ScramSHA1Iterations: auth.MinSHA1Iterations - 1}, {ScramSHA256Iterations: auth.MinSHA256Iterations - 1}} {
		cfg.DataDir = t.TempDir()
		if s, err := New(cfg); err == nil {
			s.Shutdown(context.Background())
			t.Errorf("New accepted %+v", cfg)
		}
	}
	s, err := New(Config{DataDir: t.TempDir(), ScramSHA1Iterations: 6000, ScramSHA256Iterations: 5000})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
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
