package main

import (
	"testing"
	"time"
)

func TestJudge(t *testing.T) {
	rate := func(opsPerSec uint64) sample {
		return sample{ops: opsPerSec, elapsed: time.Second, latency: newHistogram()}
	}
	rep := &report{results: []result{
		{name: "ping", sample: rate(1000)},
		{name: "findone", sample: rate(600), ceiling: "ping", target: 0.6},
		{name: "find100", sample: rate(200), ceiling: "ping"},
		{name: "insert", sample: rate(100), ceiling: "pebble-sync", target: 0.5},
	}}
	tests := []struct {
		name        string
		wantRatio   float64
		wantVerdict string
	}{
		{"ping", 0, ""},
		{"findone", 0.6, "PASS"},
		{"find100", 0.2, ""},
		{"insert", 0, ""}, // its ceiling was not measured
	}
	for i, tt := range tests {
		j := rep.judge(rep.results[i])
		if j.ratio != tt.wantRatio || j.verdict != tt.wantVerdict {
			t.Errorf("judge(%s) = %+v, want ratio %v verdict %q", tt.name, j, tt.wantRatio, tt.wantVerdict)
		}
	}
	rep.results[1].sample = rate(599)
	if j := rep.judge(rep.results[1]); j.verdict != "BELOW" {
		t.Errorf("judge(findone at 0.599x) verdict = %q, want BELOW", j.verdict)
	}
}

func TestFormatLatency(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0µs"},
		{412 * time.Microsecond, "412µs"},
		{1234 * time.Microsecond, "1.23ms"},
		{56789 * time.Microsecond, "56.8ms"},
		{2500 * time.Millisecond, "2.5s"},
	}
	for _, tt := range tests {
		if got := formatLatency(tt.d); got != tt.want {
			t.Errorf("formatLatency(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}
