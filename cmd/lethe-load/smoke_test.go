package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The smoke tests run the workloads briefly against an in-process server:
// they check that every workload works end to end, not how fast.

func TestSmokeBasic(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	cfg := smokeConfig(t, "basic")
	got := runSmoke(t, cfg)
	want := []string{"ping", "pebble-sync", "insert", "findone", "update", "find100"}
	checkWorkloads(t, got, want)
}

// A short run of every YCSB mix over a small table: each reports its
// total, with the server's CPU per operation, and each kind of operation
// it mixes.
func TestSmokeYCSB(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	cfg := smokeConfig(t, "ping,ycsb-a,ycsb-b,ycsb-c,ycsb-e,ycsb-f")
	cfg.ycsbRecords = 300
	// Long enough for ycsb-e's 5% of inserts to happen.
	cfg.duration = 400 * time.Millisecond
	got := runSmoke(t, cfg)
	checkWorkloads(t, got, []string{"ping", "ycsb-load",
		"ycsb-a", "ycsb-a/read", "ycsb-a/update", "ycsb-b", "ycsb-b/read", "ycsb-b/update",
		"ycsb-c", "ycsb-c/read", "ycsb-e", "ycsb-e/scan", "ycsb-e/insert", "ycsb-f", "ycsb-f/read", "ycsb-f/rmw"})
	for _, w := range got.Workloads {
		total := !strings.Contains(w.Name, "/")
		if total && w.CPUPerOp <= 0 {
			t.Errorf("%s: no CPU per operation", w.Name)
		}
		if w.Name == "ycsb-load" && w.Ops != uint64(cfg.ycsbRecords) {
			t.Errorf("ycsb-load made %d inserts, want %d", w.Ops, cfg.ycsbRecords)
		}
		if total && w.Name != "ping" && w.Ratio <= 0 {
			t.Errorf("%s: no ratio to ping", w.Name)
		}
	}
}

// --compare of one build against itself: both child servers measured in
// every round, every row with figures for both.
func TestSmokeCompare(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts servers")
	}
	bin := buildLethe(t)
	cfg := smokeConfig(t, "findone,ycsb-a")
	cfg.compare = []string{bin, bin}
	cfg.rounds = 2
	cfg.ycsbRecords = 300
	cfg.duration = 400 * time.Millisecond // 200 ms a round
	got := runSmoke(t, cfg)
	if got.Compare == nil {
		t.Fatal("no comparison in the report")
	}
	var names []string
	for _, r := range got.Compare.Rows {
		names = append(names, r.Name)
		for i, srv := range []jsonCmpSrv{r.A, r.B} {
			if srv.OpsPerSec <= 0 || srv.Ratio <= 0 || len(r.RoundRatios[i]) == 0 {
				t.Errorf("%s on server %d: implausible figures %+v, rounds %v", r.Name, i, srv, r.RoundRatios[i])
			}
			if !strings.Contains(r.Name, "/") && srv.CPUPerOp <= 0 {
				t.Errorf("%s on server %d: no CPU per operation", r.Name, i)
			}
		}
		if r.BOverA <= 0 {
			t.Errorf("%s: no B/A", r.Name)
		}
		if r.Name == "ping" && (r.A.Ratio != 1 || len(r.RoundRatios[0]) != 2*cfg.rounds) {
			t.Errorf("ping: ratio %v over %d measurements, want 1 over %d", r.A.Ratio, len(r.RoundRatios[0]), 2*cfg.rounds)
		}
		if r.Name == "findone" && len(r.RoundRatios[0]) != cfg.rounds {
			t.Errorf("findone measured %d times on A, want %d", len(r.RoundRatios[0]), cfg.rounds)
		}
	}
	want := "ping,findone,ycsb-load,ycsb-a,ycsb-a/read,ycsb-a/update"
	if strings.Join(names, ",") != want {
		t.Errorf("compared %v, want %s", names, want)
	}
}

// buildLethe builds the server binary into the test's directory.
func buildLethe(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lethe")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/lethedb/lethe/cmd/lethe")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("build lethe: %v", err)
	}
	return bin
}

func TestSmokeText(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	cfg := smokeConfig(t, "text")
	cfg.textDocs = 2000
	got := runSmoke(t, cfg)
	checkWorkloads(t, got, []string{"text-search"})
}

func TestSmokeIndexAndTTL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	cfg := smokeConfig(t, "index")
	cfg.indexDocs = 2000
	cfg.ttlDocs = 2000
	got := runSmoke(t, cfg)
	checkWorkloads(t, got, []string{"find-unindexed", "find-indexed"})
	if got.TTL == nil {
		t.Fatal("no ttl section in the report")
	}
	if got.TTL.Idle.Ops == 0 || got.TTL.Reaping.Ops == 0 {
		t.Errorf("ttl findOne ran %d ops idle and %d while reaping, want some of each", got.TTL.Idle.Ops, got.TTL.Reaping.Ops)
	}
	if !got.TTL.Complete || got.TTL.Deleted != int64(cfg.ttlDocs) {
		t.Errorf("reaper deleted %d of %d documents (complete: %v)", got.TTL.Deleted, cfg.ttlDocs, got.TTL.Complete)
	}
}

// The TTL workload measures the --server-bin binary, started with a
// manual clock, not a server of the tool's own build: comparing two builds'
// reapers depends on it.
func TestTTLRunsOnTheServerBin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts a server")
	}
	cfg := smokeConfig(t, "")
	cfg.serverBin = buildLethe(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	target, err := openTarget(ctx, cfg, true)
	if err != nil {
		t.Fatal(err)
	}
	defer target.close()
	if target.child == nil {
		t.Fatal("the TTL workload's server is not the --server-bin child")
	}
	if err := target.client.Database("admin").RunCommand(ctx, bson.D{{Key: "advanceClock", Value: 1}}).Err(); err != nil {
		t.Fatalf("advanceClock on the child: %v", err)
	}
}

func TestSmokeAggregation(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	cfg := smokeConfig(t, "agg-group,agg-lookup")
	cfg.groupDocs = 2000
	cfg.lookupDocs = 1000
	got := runSmoke(t, cfg)
	checkWorkloads(t, got, []string{"agg-group", "agg-lookup"})
}

func TestSmokeRetryCost(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	got := runSmoke(t, smokeConfig(t, "retry-cost"))
	checkWorkloads(t, got, []string{"insert-retryable", "insert-not-retryable"})
}

func TestSmokeTxn(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	got := runSmoke(t, smokeConfig(t, "txn"))
	checkWorkloads(t, got, []string{"txn-1", "txn-10", "txn-100", "insert-alone", "insert-beside-txns"})
}

func TestSmokeAuthAndTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers")
	}
	cfg := smokeConfig(t, "auth-connect,auth-failures,auth-overhead,tls")
	cfg.failedLogins = 400
	got := runSmoke(t, cfg)
	checkWorkloads(t, got, []string{
		"plain-connect", "auth-connect", "auth-connect-cached",
		"findone-quiet", "findone-attacked", "findone-attacked-one-host", "findone-conn-churn",
		"failed-logins", "failed-logins-one-host", "conn-churn",
		"findone-auth", "findone-noauth", "insert-auth", "insert-noauth",
		"findone-tls", "findone-plain", "insert-tls", "insert-plain",
	})
	for _, w := range got.Workloads {
		if (w.Name == "failed-logins" || w.Name == "conn-churn") && w.Ops != uint64(cfg.failedLogins) {
			t.Errorf("%s counted %d connections, want %d", w.Name, w.Ops, cfg.failedLogins)
		}
	}
}

func smokeConfig(t *testing.T, workloads string) config {
	t.Helper()
	selected, err := selectWorkloads(workloads)
	if err != nil {
		t.Fatal(err)
	}
	return config{
		clients:   2,
		duration:  200 * time.Millisecond,
		docs:      500,
		indexDocs: 1000,
		workloads: selected,
		ttlWait:   10 * time.Second,
		json:      true,
		// The flags' defaults, which parseFlags would set.
		ycsbRecords: 20000,
		ycsbDist:    "zipfian",
		rounds:      3,
	}
}

func runSmoke(t *testing.T, cfg config) jsonReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	err := run(ctx, cfg, &out, testLog{t})
	t.Logf("report:\n%s", out.String())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	var rep jsonReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("decode the JSON report: %v", err)
	}
	return rep
}

func checkWorkloads(t *testing.T, rep jsonReport, want []string) {
	t.Helper()
	var got []string
	for _, w := range rep.Workloads {
		got = append(got, w.Name)
		if w.Ops == 0 || w.OpsPerSec <= 0 || w.P99 < w.P50 || w.P50 <= 0 {
			t.Errorf("workload %s: implausible numbers %+v", w.Name, w.jsonSample)
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("workloads reported = %v, want %v", got, want)
	}
}

// testLog sends the tool's progress lines to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func TestSmokeCollatedSort(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	cfg := smokeConfig(t, "collated-sort")
	cfg.collatedDocs = 2000
	got := runSmoke(t, cfg)
	checkWorkloads(t, got, []string{"collated-sort", "simple-sort"})
}
