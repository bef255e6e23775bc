package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// report is everything one run measured, and what failed.
type report struct {
	cfg     config
	results []result
	ttl     *ttlResult
	// growth is the growth workload's outcome, when it ran.
	growth *growthRun
	// compare is --compare's comparison, which replaces results.
	compare  *comparison
	failures []failure
}

type failure struct {
	workload string
	err      error
}

// judgement compares a result with its ceiling, when that was measured.
type judgement struct {
	ratio   float64 // ops/s over the ceiling's; 0 when there is no ceiling
	verdict string  // PASS or BELOW when there is a target
}

func (r *report) judge(res result) judgement {
	for _, c := range r.results {
		if c.name != res.ceiling || c.sample.opsPerSec() == 0 {
			continue
		}
		j := judgement{ratio: res.sample.opsPerSec() / c.sample.opsPerSec()}
		if res.target > 0 {
			j.verdict = "BELOW"
			if j.ratio >= res.target {
				j.verdict = "PASS"
			}
		}
		return j
	}
	return judgement{}
}

// opsText shows a rate to the unit, or to the hundredth below ten, so
// that a workload of whole pipelines taking seconds does not read 0.
func opsText(ops float64) string {
	if ops < 10 {
		return fmt.Sprintf("%.2f", ops)
	}
	return fmt.Sprintf("%.0f", ops)
}

func (r *report) serverName() string {
	switch {
	case r.cfg.uri != "":
		return "external"
	case r.cfg.serverBin != "":
		return "child-process"
	}
	return "in-process"
}

// cpuSource says whose CPU time the cpu/op column counts, "" when none.
func cpuSource(cfg config) string {
	switch {
	case cfg.uri != "" && cfg.serverPID > 0:
		return fmt.Sprintf("of server process %d", cfg.serverPID)
	case cfg.uri != "":
		return ""
	case cfg.serverBin != "":
		return "of the --server-bin child process alone"
	default:
		return "of this whole process: in-process server and load clients together"
	}
}

// ranYCSB tells whether the report has YCSB mixes, whose shape the
// header then gives.
func (r *report) ranYCSB() bool {
	return slices.ContainsFunc(r.results, func(res result) bool { return strings.HasPrefix(res.name, "ycsb-") })
}

// p999Ops is the fewest operations whose 99.9th percentile the report
// shows: with fewer, it would be the slowest one or two, not a percentile.
const p999Ops = 1000

// p999Text is s's 99.9th percentile, or "-" when s has too few operations.
func p999Text(s sample) string {
	if s.ops < p999Ops {
		return "-"
	}
	return formatLatency(s.latency.quantile(0.999))
}

// cpuText is s's server CPU time per operation, "" when not measured.
func cpuText(s sample) string {
	if c := s.cpuPerOp(); c > 0 {
		return formatLatency(c)
	}
	return ""
}

func (r *report) writeText(w io.Writer) error {
	if r.compare != nil {
		if err := r.compare.writeText(w, r.cfg); err != nil {
			return err
		}
		r.writeFailures(w)
		return nil
	}
	fmt.Fprintf(w, "lethe-load: %s server, %d clients, %v per workload, %d preloaded documents\n",
		r.serverName(), r.cfg.clients, r.cfg.duration, r.cfg.docs)
	if r.ranYCSB() {
		fmt.Fprintf(w, "ycsb: %d records of 1 KB, %s keys\n", r.cfg.ycsbRecords, r.cfg.ycsbDist)
	}
	if src := cpuSource(r.cfg); src != "" {
		fmt.Fprintf(w, "cpu/op: CPU time (user+system) per operation %s\n", src)
	}
	fmt.Fprintln(w)
	if len(r.results) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "workload\tops/s\tp50\tp99\tp999\tcpu/op\tvs ceiling\ttarget")
		for _, res := range r.results {
			j := r.judge(res)
			ratio, target := "", ""
			if j.ratio > 0 {
				ratio = fmt.Sprintf("%.2fx %s", j.ratio, res.ceiling)
			}
			if res.target > 0 {
				target = strings.TrimSpace(fmt.Sprintf(">= %gx %s", res.target, j.verdict))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", res.name, opsText(res.sample.opsPerSec()),
				formatLatency(res.sample.latency.quantile(0.5)), formatLatency(res.sample.latency.quantile(0.99)),
				p999Text(res.sample), cpuText(res.sample), ratio, target)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if r.growth != nil {
		if err := r.growth.writeText(w, r.cfg.clients, r.cfg.rounds, r.cfg.duration); err != nil {
			return err
		}
	}
	if t := r.ttl; t != nil {
		fmt.Fprintf(w, "\nTTL: %d documents, ttl spread over 1..%d s\n", t.docs, maxTTL)
		fmt.Fprintf(w, "  load                       %.0f docs/s (%v)\n", float64(t.docs)/t.load.Seconds(), t.load.Round(time.Millisecond))
		fmt.Fprintf(w, "  findOne p99, reaper idle   %s (p50 %s, %d ops)\n",
			formatLatency(t.idle.latency.quantile(0.99)), formatLatency(t.idle.latency.quantile(0.5)), t.idle.ops)
		fmt.Fprintf(w, "  findOne p99, reaper busy   %s (p50 %s, %d ops)\n",
			formatLatency(t.reaping.latency.quantile(0.99)), formatLatency(t.reaping.latency.quantile(0.5)), t.reaping.ops)
		fmt.Fprintf(w, "  reaper deletion rate       %.0f docs/s (%d docs in %v", t.deletedPerSec(), t.deleted, t.deleting.Round(time.Millisecond))
		if !t.complete {
			fmt.Fprintf(w, "; %d not deleted within --ttl-wait=%v", int64(t.docs)-t.deleted, r.cfg.ttlWait)
		}
		fmt.Fprintln(w, ")")
	}
	r.writeFailures(w)
	return nil
}

func (r *report) writeFailures(w io.Writer) {
	if len(r.failures) > 0 {
		fmt.Fprintln(w)
		for _, f := range r.failures {
			fmt.Fprintf(w, "FAILED %s: %v\n", f.workload, f.err)
		}
	}
}

// formatLatency prints three significant digits in a unit that suits d.
func formatLatency(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.3gms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.3gs", d.Seconds())
	}
}

// The JSON form: latencies in microseconds, rates per second.
type (
	jsonReport struct {
		Server string `json:"server"`
		CPUOf  string `json:"cpu_of,omitempty"`
		// YCSBRecords and YCSBDist are given when YCSB mixes ran.
		YCSBRecords int             `json:"ycsb_records,omitempty"`
		YCSBDist    string          `json:"ycsb_dist,omitempty"`
		Clients     int             `json:"clients"`
		Duration    float64         `json:"duration_s"`
		Docs        int             `json:"docs"`
		Workloads   []jsonWorkload  `json:"workloads"`
		TTL         *jsonTTL        `json:"ttl,omitempty"`
		Growth      *jsonGrowth     `json:"growth,omitempty"`
		Compare     *jsonComparison `json:"compare,omitempty"`
		Errors      []jsonError     `json:"errors,omitempty"`
	}
	jsonWorkload struct {
		Name string `json:"name"`
		jsonSample
		Ceiling string  `json:"ceiling,omitempty"`
		Ratio   float64 `json:"ratio,omitempty"`
		Target  float64 `json:"target,omitempty"`
		Verdict string  `json:"verdict,omitempty"`
	}
	jsonSample struct {
		Ops       uint64  `json:"ops"`
		Seconds   float64 `json:"seconds"`
		OpsPerSec float64 `json:"ops_per_sec"`
		P50       float64 `json:"p50_us"`
		P99       float64 `json:"p99_us"`
		// P999 is omitted below p999Ops operations.
		P999 float64 `json:"p999_us,omitempty"`
		// CPUPerOp is the server's CPU time per operation, when measured.
		CPUPerOp float64 `json:"cpu_us_per_op,omitempty"`
	}
	jsonTTL struct {
		Docs          int        `json:"docs"`
		LoadSeconds   float64    `json:"load_s"`
		Idle          jsonSample `json:"findone_reaper_idle"`
		Reaping       jsonSample `json:"findone_reaper_busy"`
		Deleted       int64      `json:"deleted"`
		DeleteSeconds float64    `json:"delete_s"`
		DeletedPerSec float64    `json:"deleted_per_sec"`
		Complete      bool       `json:"complete"`
	}
	jsonError struct {
		Workload string `json:"workload"`
		Error    string `json:"error"`
	}
)

func (r *report) writeJSON(w io.Writer) error {
	out := jsonReport{
		Server:    r.serverName(),
		CPUOf:     cpuSource(r.cfg),
		Clients:   r.cfg.clients,
		Duration:  r.cfg.duration.Seconds(),
		Docs:      r.cfg.docs,
		Workloads: []jsonWorkload{},
	}
	for _, res := range r.results {
		j := r.judge(res)
		out.Workloads = append(out.Workloads, jsonWorkload{
			Name:       res.name,
			jsonSample: toJSONSample(res.sample),
			Ceiling:    res.ceiling,
			Ratio:      j.ratio,
			Target:     res.target,
			Verdict:    j.verdict,
		})
	}
	if r.ranYCSB() {
		out.YCSBRecords, out.YCSBDist = r.cfg.ycsbRecords, r.cfg.ycsbDist
	}
	if r.compare != nil {
		out.Compare = r.compare.toJSON(r.cfg.rounds)
	}
	if r.growth != nil {
		out.Growth = r.growth.toJSON()
	}
	if t := r.ttl; t != nil {
		out.TTL = &jsonTTL{
			Docs:          t.docs,
			LoadSeconds:   t.load.Seconds(),
			Idle:          toJSONSample(t.idle),
			Reaping:       toJSONSample(t.reaping),
			Deleted:       t.deleted,
			DeleteSeconds: t.deleting.Seconds(),
			DeletedPerSec: t.deletedPerSec(),
			Complete:      t.complete,
		}
	}
	for _, f := range r.failures {
		out.Errors = append(out.Errors, jsonError{Workload: f.workload, Error: f.err.Error()})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func toJSONSample(s sample) jsonSample {
	micros := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	js := jsonSample{
		Ops:       s.ops,
		Seconds:   s.elapsed.Seconds(),
		OpsPerSec: s.opsPerSec(),
		P50:       micros(s.latency.quantile(0.5)),
		P99:       micros(s.latency.quantile(0.99)),
		CPUPerOp:  micros(s.cpuPerOp()),
	}
	if s.ops >= p999Ops {
		js.P999 = micros(s.latency.quantile(0.999))
	}
	return js
}
