package tikvkv

import (
	"context"
	"testing"
	"time"
)

// TestPhysicalTimeIsTheTSOs: the shared clock reads the mock PD's
// timestamps, whose physical part is its wall clock in milliseconds.
func TestPhysicalTimeIsTheTSOs(t *testing.T) {
	s, err := OpenMock(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := time.Now().Add(-time.Second)
	at, err := s.PhysicalTime(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if at.Before(before) || at.After(time.Now().Add(time.Second)) {
		t.Fatalf("PhysicalTime = %v, want about %v", at, time.Now())
	}
}
