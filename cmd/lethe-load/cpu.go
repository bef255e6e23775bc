package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A cpuClock reads the CPU time (user and system) a server process has
// used so far; the difference of two readings is what it spent between
// them.
type cpuClock struct {
	// what says whose CPU it is, for the report.
	what string
	read func() (time.Duration, error)
}

// selfCPU is this process's CPU time. With the in-process server, that is
// the server's and the load clients' (the driver's encoding, decoding and
// pool) together: they share the process and cannot be told apart without
// profiling, so the figure is an upper bound of the server's, comparable
// between runs of the same client code but not with a separate server's.
// --server-bin runs the server as a child process to measure it alone.
func selfCPU() cpuClock {
	return cpuClock{what: "this process (in-process server and load clients together)", read: func() (time.Duration, error) {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			return 0, fmt.Errorf("getrusage: %w", err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
	}}
}

// clockTicks is Linux's USER_HZ, the unit of /proc/<pid>/stat's times. It
// is 100 on every architecture Linux runs Go on; reading it would need
// sysconf(_SC_CLK_TCK), that is cgo. At 10 ms a tick, a workload of a few
// seconds on a busy server still counts hundreds of ticks.
const clockTicks = 100

// pidCPU is the CPU time of process pid, all its threads, read from
// /proc/<pid>/stat (Linux only).
func pidCPU(pid int) cpuClock {
	path := fmt.Sprintf("/proc/%d/stat", pid)
	return cpuClock{what: fmt.Sprintf("server process %d", pid), read: func() (time.Duration, error) {
		raw, err := os.ReadFile(path)
		if err != nil {
			return 0, fmt.Errorf("read the server's CPU time: %w", err)
		}
		return parseProcStat(string(raw))
	}}
}

// parseProcStat returns utime+stime of a /proc/<pid>/stat line. The
// command name, field 2, is in parentheses and may hold spaces and
// parentheses itself, so the fields are counted from the last ")": after
// it come field 3 (state) onwards, and utime and stime are fields 14 and 15.
func parseProcStat(line string) (time.Duration, error) {
	end := strings.LastIndexByte(line, ')')
	if end < 0 {
		return 0, fmt.Errorf("malformed /proc stat line %q", line)
	}
	fields := strings.Fields(line[end+1:])
	const utime, stime = 14 - 3, 15 - 3
	if len(fields) <= stime {
		return 0, fmt.Errorf("malformed /proc stat line %q: %d fields after the name", line, len(fields))
	}
	var ticks int64
	for _, f := range fields[utime : stime+1] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("malformed /proc stat line %q: %w", line, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// measure is measureFor over --duration with the server's CPU time over
// the window added to the sample.
func (e *env) measure(ctx context.Context, newOp func(client int) op) (sample, error) {
	return e.measureFor(ctx, e.cfg.duration, newOp)
}

// measureFor is measure over d.
func (e *env) measureFor(ctx context.Context, d time.Duration, newOp func(client int) op) (sample, error) {
	total, _, err := e.measureKinds(ctx, d, 1, func(client int) kindOp {
		do := newOp(client)
		return func(ctx context.Context) (int, error) { return 0, do(ctx) }
	})
	return total, err
}

// measureKinds runs measureKinds for d, or until every client's op says
// noMoreOps when d is 0, and adds the server's CPU time over it to the
// total sample (the kinds share one server, so their CPU cannot be told
// apart).
func (e *env) measureKinds(ctx context.Context, d time.Duration, kinds int, newOp func(client int) kindOp) (sample, []sample, error) {
	var stop <-chan struct{} // nil: never closed
	if d > 0 {
		window, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		stop = window.Done()
	}
	before, err := e.cpuNow()
	if err != nil {
		return sample{}, nil, err
	}
	total, byKind, err := measureKinds(ctx, e.cfg.clients, stop, kinds, newOp)
	if err != nil {
		return sample{}, nil, err
	}
	after, err := e.cpuNow()
	if err != nil {
		return sample{}, nil, err
	}
	total.cpu = after - before
	return total, byKind, nil
}

// cpuNow reads the server's CPU clock, 0 when there is none.
func (e *env) cpuNow() (time.Duration, error) {
	if e.cpu.read == nil {
		return 0, nil
	}
	return e.cpu.read()
}
