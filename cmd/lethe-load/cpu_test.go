package main

import (
	"os"
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	// A command name with spaces and a parenthesis, as a process may
	// name itself: fields count from the last ")". utime 250 and stime
	// 50 ticks are 3 s.
	line := "4242 (le the) x) S 1 4242 4242 0 -1 4194560 1200 0 0 0 250 50 0 0 20 0 12 0 100 2000000 3000 18446744073709551615\n"
	got, err := parseProcStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if want := 3 * time.Second; got != want {
		t.Errorf("parseProcStat = %v, want %v", got, want)
	}
	for _, bad := range []string{"", "4242 (lethe) S 1 2", "4242 (lethe) S 1 2 3 4 5 6 7 8 9 10 x 50"} {
		if _, err := parseProcStat(bad); err == nil {
			t.Errorf("parseProcStat(%q) succeeded, want an error", bad)
		}
	}
}

// Both clocks read this process, which has run the test so far: they
// must agree to a few ticks, and move forward with work.
func TestCPUClocks(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	self, proc := selfCPU(), pidCPU(os.Getpid())
	a, err := self.read()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(50 * time.Millisecond)
	for x := 0; time.Now().Before(deadline); x++ {
		_ = x * x
	}
	b, err := self.read()
	if err != nil {
		t.Fatal(err)
	}
	if b <= a {
		t.Errorf("self CPU did not move over 50 ms of work: %v then %v", a, b)
	}
	p, err := proc.read()
	if err != nil {
		t.Fatal(err)
	}
	if d := p - b; d < -30*time.Millisecond || d > 30*time.Millisecond {
		t.Errorf("/proc says %v of CPU, getrusage %v", p, b)
	}
}
