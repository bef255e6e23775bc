package server

import (
	"context"
	"testing"

	"github.com/lethedb/lethe/auth"
)

// TestScramIterationsRefused: counts below MongoDB's least are refused;
// usermgmt's TestScramIterationsConfig checks that the others are used.
func TestScramIterationsRefused(t *testing.T) {
	for _, cfg := range []Config{{ScramSHA1Iterations: auth.MinSHA1Iterations - 1}, {ScramSHA256Iterations: auth.MinSHA256Iterations - 1}} {
		cfg.DataDir = t.TempDir()
		if s, err := New(cfg); err == nil {
			s.Shutdown(context.Background())
			t.Errorf("New accepted %+v", cfg)
		}
	}
}
