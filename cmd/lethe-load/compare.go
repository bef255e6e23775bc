package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// --compare measures two builds of the server against each other on one
// machine. On a shared, noisy machine two runs minutes apart differ by
// more than most changes do, so the builds are measured in the same run,
// in alternating rounds (roundOrder: AB, BA, AB, ...), and each round's
// figure is a ratio to the same server's ping of the same round: what
// the machine's load does to both a workload and its ping cancels out,
// leaving what the build does to the workload. Running both servers at
// once, each with its own clients, would also expose both to the same
// load, but on two cores the four would fight each other for them, and
// any unfairness of the scheduler would land on one build only.

// comparison is what a --compare run measured: a row per result name, in
// the order first measured.
type comparison struct {
	bins [2]string
	rows []*compareRow
}

// compareRow is one result's figures, one per round, for each server.
type compareRow struct {
	name string
	// ops is ops/s, ratio the ratio to ping of the same server and round,
	// cpu the server's CPU per operation (0 when not measured); each is
	// indexed by server (0 is A) then round.
	ops, ratio [2][]float64
	cpu        [2][]time.Duration
}

func (c *comparison) row(name string) *compareRow {
	for _, r := range c.rows {
		if r.name == name {
			return r
		}
	}
	r := &compareRow{name: name}
	c.rows = append(c.rows, r)
	return r
}

func (r *compareRow) add(server int, s, ping sample) {
	r.ops[server] = append(r.ops[server], s.opsPerSec())
	ratio := 0.0
	if p := ping.opsPerSec(); p > 0 {
		ratio = s.opsPerSec() / p
	}
	r.ratio[server] = append(r.ratio[server], ratio)
	r.cpu[server] = append(r.cpu[server], s.cpuPerOp())
}

// runCompare starts the two binaries of --compare and measures each
// selected workload on both in cfg.rounds rounds of --duration/rounds
// each, with a ping measured on the same server right before every
// measurement of a workload.
func runCompare(ctx context.Context, cfg config, progress io.Writer) (*comparison, []failure) {
	cmp := &comparison{bins: [2]string{cfg.compare[0], cfg.compare[1]}}
	roundCfg := cfg
	roundCfg.duration = cfg.duration / time.Duration(cfg.rounds)
	var envs [2]*env
	for i, bin := range cmp.bins {
		c, err := startChild(ctx, bin, cfg.serverArgs)
		if err != nil {
			return cmp, []failure{{"setup", fmt.Errorf("start %s: %w", "AB"[i:i+1], err)}}
		}
		t := &target{closeServer: c.stop, cpu: pidCPU(c.pid())}
		defer func() {
			if err := t.close(); err != nil {
				fmt.Fprintf(progress, "lethe-load: stop %s: %v\n", bin, err)
			}
		}()
		if err := t.connect(ctx, cfg, "mongodb://"+c.addr+"/?directConnection=true"); err != nil {
			t.closeServer = nil // connect stopped it
			return cmp, []failure{{"setup", err}}
		}
		envs[i] = &env{cfg: roundCfg, db: t.client.Database(dbName), progress: progress, cpu: t.cpu}
	}

	var failures []failure
	for _, w := range cfg.workloads {
		if w.name == "ping" {
			continue // measured beside every other one
		}
		if err := compareWorkload(ctx, cmp, envs, w, cfg.rounds, progress); err != nil {
			failures = append(failures, failure{w.name, err})
		}
	}
	if len(cfg.workloads) == 1 && cfg.workloads[0].name == "ping" {
		// ping alone: measure it in rounds all the same.
		if err := compareWorkload(ctx, cmp, envs, workload{name: "ping", run: runPing}, cfg.rounds, progress); err != nil {
			failures = append(failures, failure{"ping", err})
		}
	}
	return cmp, failures
}

// compareWorkload measures w on both servers in rounds, each time after
// the same server's ping.
func compareWorkload(ctx context.Context, cmp *comparison, envs [2]*env, w workload, rounds int, progress io.Writer) error {
	for r := range rounds {
		for _, i := range roundOrder(r, 2) {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("not run: %w", err)
			}
			fmt.Fprintf(progress, "running %s on %s, round %d of %d\n", w.name, "AB"[i:i+1], r+1, rounds)
			pings, err := runPing(ctx, envs[i])
			if err != nil {
				return fmt.Errorf("ping on %s: %w", "AB"[i:i+1], err)
			}
			ping := pings[0].sample
			cmp.row("ping").add(i, ping, ping)
			if w.name == "ping" {
				continue
			}
			e := envs[i]
			if w.fromBin {
				// Its own server, from this side's binary.
				own := *e
				own.cfg.serverBin = cmp.bins[i]
				e = &own
			}
			results, err := w.run(ctx, e)
			if err != nil {
				return fmt.Errorf("on %s: %w", "AB"[i:i+1], err)
			}
			for _, res := range results {
				cmp.row(res.name).add(i, res.sample, ping)
			}
		}
	}
	return nil
}

// median is the middle value of xs (the mean of the middle two when
// their number is even); 0 for none. The median, not the mean, so that
// one round disturbed by another process does not move the figure.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// bOverA is the median over rounds of B's figure over A's in the same
// round (the rounds both have; 0 where A's is 0).
func bOverA(a, b []float64) float64 {
	var q []float64
	for k := range min(len(a), len(b)) {
		if a[k] > 0 {
			q = append(q, b[k]/a[k])
		}
	}
	return median(q)
}

func seconds(ds []time.Duration) []float64 {
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = d.Seconds()
	}
	return xs
}

// figures are one row's summary, as the report prints it.
type compareFigures struct {
	ops, ratio [2]float64
	cpu        [2]time.Duration
	// speed is B's ratio to ping over A's (for ping itself, B's ops/s
	// over A's); cpu B's CPU per operation over A's.
	speed, cpu2 float64
}

func (r *compareRow) figures() compareFigures {
	var f compareFigures
	for i := range 2 {
		f.ops[i] = median(r.ops[i])
		f.ratio[i] = median(r.ratio[i])
		f.cpu[i] = time.Duration(median(seconds(r.cpu[i])) * float64(time.Second))
	}
	f.speed = bOverA(r.ratio[0], r.ratio[1])
	if r.name == "ping" {
		f.speed = bOverA(r.ops[0], r.ops[1])
	}
	f.cpu2 = bOverA(seconds(r.cpu[0]), seconds(r.cpu[1]))
	return f
}

func (c *comparison) writeText(w io.Writer, cfg config) error {
	fmt.Fprintf(w, "lethe-load --compare: %d clients, %d rounds of %v per workload and server\n", cfg.clients, cfg.rounds, (cfg.duration / time.Duration(cfg.rounds)).Round(time.Millisecond))
	fmt.Fprintf(w, "  A = %s\n  B = %s\n", c.bins[0], c.bins[1])
	fmt.Fprintln(w, "ratio: ops/s over the same server's ping of the same round; B/A: median over rounds of B's ratio over A's")
	fmt.Fprintln(w, "(of ops/s for ping); cpu/op: CPU time of each server's process per operation; medians over rounds")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workload\tA ops/s\tA ratio\tA cpu/op\tB ops/s\tB ratio\tB cpu/op\tB/A\tB/A cpu")
	for _, r := range c.rows {
		f := r.figures()
		fmt.Fprintf(tw, "%s\t%s\t%.3f\t%s\t%s\t%.3f\t%s\t%.3f\t%s\n", r.name,
			opsText(f.ops[0]), f.ratio[0], cpuDuration(f.cpu[0]),
			opsText(f.ops[1]), f.ratio[1], cpuDuration(f.cpu[1]), f.speed, ratioText(f.cpu2))
	}
	return tw.Flush()
}

func cpuDuration(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return formatLatency(d)
}

func ratioText(x float64) string {
	if x <= 0 {
		return ""
	}
	return fmt.Sprintf("%.3f", x)
}

// The JSON form of a comparison.
type (
	jsonComparison struct {
		A      string       `json:"a"`
		B      string       `json:"b"`
		Rounds int          `json:"rounds"`
		Rows   []jsonCmpRow `json:"workloads"`
	}
	jsonCmpRow struct {
		Name        string       `json:"name"`
		A           jsonCmpSrv   `json:"a"`
		B           jsonCmpSrv   `json:"b"`
		BOverA      float64      `json:"b_over_a"`
		CPUBOverA   float64      `json:"cpu_b_over_a,omitempty"`
		RoundRatios [2][]float64 `json:"round_ratios"`
	}
	jsonCmpSrv struct {
		OpsPerSec float64 `json:"ops_per_sec"`
		Ratio     float64 `json:"ratio"`
		CPUPerOp  float64 `json:"cpu_us_per_op,omitempty"`
	}
)

func (c *comparison) toJSON(rounds int) *jsonComparison {
	out := &jsonComparison{A: c.bins[0], B: c.bins[1], Rounds: rounds, Rows: []jsonCmpRow{}}
	micros := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	for _, r := range c.rows {
		f := r.figures()
		out.Rows = append(out.Rows, jsonCmpRow{
			Name:        r.name,
			A:           jsonCmpSrv{OpsPerSec: f.ops[0], Ratio: f.ratio[0], CPUPerOp: micros(f.cpu[0])},
			B:           jsonCmpSrv{OpsPerSec: f.ops[1], Ratio: f.ratio[1], CPUPerOp: micros(f.cpu[1])},
			BOverA:      f.speed,
			CPUBOverA:   f.cpu2,
			RoundRatios: r.ratio,
		})
	}
	return out
}
