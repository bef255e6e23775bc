package main

import (
	"bytes"
	"encoding/json"
	"strings"
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

// The report shows p999 once a sample has enough operations to have one,
// and the server's CPU per operation when it was measured, in the text and
// the JSON.
func TestReportP999AndCPU(t *testing.T) {
	h := newHistogram()
	for i := range 2000 {
		h.record(time.Duration(i+1) * time.Microsecond) // 1 µs to 2 ms
	}
	small := newHistogram()
	small.record(time.Millisecond)
	rep := &report{cfg: config{clients: 1, duration: time.Second}, results: []result{
		{name: "ping", sample: sample{ops: 2000, elapsed: time.Second, latency: h, cpu: 100 * time.Millisecond}},
		{name: "few", sample: sample{ops: 1, elapsed: time.Second, latency: small}},
	}}
	var text bytes.Buffer
	if err := rep.writeText(&text); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(text.String(), "\n")
	var ping, few, header string
	for _, l := range lines {
		switch f := strings.Fields(l); {
		case len(f) == 0:
		case f[0] == "workload":
			header = l
		case f[0] == "ping":
			ping = l
		case f[0] == "few":
			few = l
		}
	}
	if !strings.Contains(header, "p999") || !strings.Contains(header, "cpu/op") {
		t.Errorf("header %q lacks p999 or cpu/op", header)
	}
	// p999 of 1..2000 µs is the 1998th value, 1.998 ms, to the
	// histogram's bucket: 2 ms printed. CPU: 100 ms over 2000 ops.
	if f := strings.Fields(ping); len(f) < 6 || f[4] != "2ms" || f[5] != "50µs" {
		t.Errorf("ping row %q: want p999 2ms and cpu/op 50µs", ping)
	}
	if f := strings.Fields(few); len(f) < 5 || f[4] != "-" {
		t.Errorf("row of one op %q: want p999 -", few)
	}
	if !strings.Contains(text.String(), "in-process server and load clients together") {
		t.Errorf("report does not say whose CPU it counts:\n%s", text.String())
	}

	var js bytes.Buffer
	if err := rep.writeJSON(&js); err != nil {
		t.Fatal(err)
	}
	var got jsonReport
	if err := json.Unmarshal(js.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	p, f := got.Workloads[0], got.Workloads[1]
	if p.P999 < 1990 || p.P999 > 2010 || p.CPUPerOp != 50 {
		t.Errorf("ping JSON p999 %v µs, cpu %v µs/op; want about 1998 and 50", p.P999, p.CPUPerOp)
	}
	if f.P999 != 0 || f.CPUPerOp != 0 {
		t.Errorf("few JSON p999 %v, cpu %v; want both left out", f.P999, f.CPUPerOp)
	}
}
