package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestGrowthCheckpoints(t *testing.T) {
	tests := []struct {
		docs int
		want []int
	}{
		{10_000, []int{10_000}},
		{100_000, []int{100_000}},
		{300_000, []int{100_000, 300_000}},
		{1_000_000, []int{100_000, 1_000_000}},
		{10_000_000, []int{100_000, 1_000_000, 10_000_000}},
		{25_000_000, []int{100_000, 1_000_000, 10_000_000, 25_000_000}},
	}
	for _, tt := range tests {
		if got := growthCheckpoints(tt.docs); !slices.Equal(got, tt.want) {
			t.Errorf("growthCheckpoints(%d) = %v, want %v", tt.docs, got, tt.want)
		}
	}
	for n, want := range map[int]string{100_000: "100k", 10_000_000: "10M", 300_000: "300k", 1_500_000: "1500k", 12_345: "12345", 999: "999"} {
		if got := countLabel(n); got != want {
			t.Errorf("countLabel(%d) = %q, want %q", n, got, want)
		}
	}
}

// Every document is growthDocSize bytes, with its own key and padding.
func TestGrowthDocs(t *testing.T) {
	pads, err := newGrowthPads()
	if err != nil {
		t.Fatal(err)
	}
	keys := make(map[int64]bool)
	pad := make(map[string]bool)
	for _, id := range []int64{0, 1, 2, 99_999, 9_999_999, growthInsertBase + 1} {
		doc := pads.doc(id)
		raw, err := bson.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if len(raw) != growthDocSize {
			t.Errorf("document %d is %d bytes, want %d", id, len(raw), growthDocSize)
		}
		keys[growthKey(id)] = true
		pad[doc[len(doc)-1].Value.(string)] = true
	}
	if len(keys) != 6 || len(pad) != 6 {
		t.Errorf("6 documents have %d keys and %d paddings, want 6 of each", len(keys), len(pad))
	}
}

func TestParseProcStatus(t *testing.T) {
	text := "Name:\tlethe\nVmPeak:\t 2000000 kB\nVmHWM:\t  524288 kB\nVmRSS:\t  262144 kB\nThreads:\t12\n"
	m, err := parseProcStatus(text)
	if err != nil {
		t.Fatal(err)
	}
	if m.rss != 256<<20 || m.hwm != 512<<20 {
		t.Errorf("parseProcStatus = %+v, want RSS 256 MiB, HWM 512 MiB", m)
	}
	for _, bad := range []string{"Name:\tlethe\n", "VmHWM:\t1 kB\nVmRSS:\tmany kB\n", "VmHWM:\t1 kB\nVmRSS:\t1 MB\n"} {
		if _, err := parseProcStatus(bad); err == nil {
			t.Errorf("parseProcStatus(%q) succeeded", bad)
		}
	}
	// This process's own, where /proc is.
	if _, err := os.Stat("/proc/self/status"); err == nil {
		if m, err := readProcMem(os.Getpid()); err != nil || m.rss <= 0 || m.hwm < m.rss {
			t.Errorf("readProcMem(self) = %+v, %v", m, err)
		}
	}
}

func TestFlagInt(t *testing.T) {
	args := []string{"--oplog", "--cache-size-mb=64", "-oplog-size-mb", "128", "--cache-size-mb", "32", "--pprof-listen=127.0.0.1:1"}
	if got := flagInt(args, "cache-size-mb", 256); got != 32 {
		t.Errorf("cache-size-mb = %d, want the last one given, 32", got)
	}
	if got := flagInt(args, "oplog-size-mb", 1024); got != 128 {
		t.Errorf("oplog-size-mb = %d, want 128", got)
	}
	if got := flagInt(args, "max-conns", 7); got != 7 {
		t.Errorf("max-conns = %d, want the default 7", got)
	}
	cfg, err := parseFlags([]string{"--server-bin=lethe", "--server-args= --oplog  --cache-size-mb=64 ", "--workloads=growth"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.serverArgs, []string{"--oplog", "--cache-size-mb=64"}) || cfg.growthDocs != 10_000_000 {
		t.Errorf("--server-args = %q, --growth-docs = %d", cfg.serverArgs, cfg.growthDocs)
	}
}

func TestMeasureDir(t *testing.T) {
	dir := t.TempDir()
	for name, size := range map[string]int{"000002.log": 3000, "000004.sst": 5000, "sub/000005.sst": 1000, "LETHE-BALLAST": 700, "MANIFEST-000001": 20} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, err := measureDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d.wal != 3000 || d.walFiles != 1 || d.sst != 6000 || d.ballast != 700 || d.other != 20 || d.total() != 9720 || d.allocated <= 0 {
		t.Errorf("measureDir = %+v", d)
	}
}

// The verdict is on the figures relative to ping: a checkpoint where the
// machine was twice as slow for everything passes.
func TestGrowthVerdicts(t *testing.T) {
	s := func(ops uint64, p50 time.Duration) sample {
		h := newHistogram()
		for range ops {
			h.record(p50)
		}
		return sample{ops: ops, elapsed: time.Second, latency: h}
	}
	first := growthPoint{label: "100k", samples: map[string]sample{"ping": s(1000, time.Millisecond), "insert": s(500, 2*time.Millisecond)},
		vsPing: map[string][]float64{"insert": {0.5, 0.5, 0.4}}, p50VsPing: map[string][]float64{"insert": {2, 2, 3}}}
	slower := growthPoint{label: "10M", samples: map[string]sample{"ping": s(500, 2*time.Millisecond), "insert": s(250, 4*time.Millisecond)},
		vsPing: map[string][]float64{"insert": {0.5, 0.6, 0.5}}, p50VsPing: map[string][]float64{"insert": {2, 2, 2}}}
	g := &growthRun{points: []growthPoint{first, slower}}
	vs := g.verdicts()
	if len(vs) != 1 || vs[0].kind != "insert" || !vs[0].pass || vs[0].slowdown != 2 || vs[0].slowdownVsPing != 1 || vs[0].p50Growth < 1.95 {
		t.Fatalf("verdicts = %+v, want insert passing, 2x slower raw, 1x against ping", vs)
	}
	collapsed := slower
	collapsed.vsPing = map[string][]float64{"insert": {0.1, 0.1, 0.2}}
	g.points[1] = collapsed
	if vs := g.verdicts(); vs[0].pass || vs[0].slowdownVsPing != 5 {
		t.Errorf("verdicts = %+v, want insert failing at 5x slower against ping", vs)
	}
}

func TestSmokeGrowth(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts a server")
	}
	cfg := smokeConfig(t, "growth")
	cfg.serverBin = buildLethe(t)
	cfg.serverArgs = []string{"--oplog", "--cache-size-mb=32"}
	cfg.growthDocs = 2000
	cfg.rounds = 2
	cfg.duration = 200 * time.Millisecond
	rep := runSmoke(t, cfg)
	g := rep.Growth
	if g == nil || len(g.Points) != 1 || g.Restarted == nil || g.CacheMiB != 32 || g.OplogMiB != 1024 {
		t.Fatalf("growth report = %+v", g)
	}
	p := g.Points[0]
	if p.Loaded != 2000 || p.Docs != 2000 || p.RSS <= 0 || p.DiskAllocated <= 0 || p.DataSize < 2000*growthDocSize || p.OplogEntries < 2000 {
		t.Errorf("checkpoint = %+v", p)
	}
	for _, kind := range growthKinds {
		if s, ok := p.Requests[kind]; !ok || s.Ops == 0 || s.P50 <= 0 {
			t.Errorf("%s: %+v", kind, s)
		}
	}
	if r := g.Restarted; r.Docs != 2000 || r.WAL > p.WAL+p.SST {
		t.Errorf("after the restart = %+v", r)
	}
	// Without an oplog the workload says what to do rather than measure
	// a log that never fills.
	cfg.serverArgs = nil
	var out io.Writer = io.Discard
	if err := run(t.Context(), cfg, out, testLog{t}); err == nil {
		t.Error("growth ran against a server without an oplog")
	}
}
