// Lethe-load measures a Lethe server under concurrent load through the
// official MongoDB Go driver, and compares each workload with the ceiling
// set by what lies beneath it: findOne and find with a bare ping round
// trip, insertOne and updateOne with raw synced pebble commits.
//
// Usage:
//
//	lethe-load [flags]
//
// Without --uri it starts a server in this process over a temporary data
// directory. The TTL workload (--ttl-docs) moves the server's clock, so it
// gets its own in-process server with a manual clock, or needs a --uri
// server started with --clock=manual.
//
// Progress goes to standard error, the report to standard output. The exit
// status is 1 when any workload failed; a workload below its target is
// reported, not a failure.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
)

func main() {
	os.Exit(runMain())
}

func runMain() int {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lethe-load:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "lethe-load:", err)
			return 2
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "lethe-load:", err)
			return 2
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(ctx, cfg, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "lethe-load:", err)
		return 1
	}
	return 0
}

// run runs the selected workloads and writes the report to out. A failing
// workload does not stop the others: its error is reported with their
// numbers and returned at the end.
func run(ctx context.Context, cfg config, out, progress io.Writer) error {
	rep := &report{cfg: cfg}
	if cfg.compare != nil {
		rep.compare, rep.failures = runCompare(ctx, cfg, progress)
	} else if len(cfg.workloads) > 0 {
		results, growth, errs := runWorkloads(ctx, cfg, progress)
		rep.results, rep.growth = results, growth
		rep.failures = append(rep.failures, errs...)
	}
	if cfg.ttlDocs > 0 && ctx.Err() == nil {
		fmt.Fprintln(progress, "running ttl")
		if ttl, err := runTTL(ctx, cfg, progress); err != nil {
			rep.failures = append(rep.failures, failure{"ttl", err})
		} else {
			rep.ttl = &ttl
		}
	}

	write := rep.writeText
	if cfg.json {
		write = rep.writeJSON
	}
	if err := write(out); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if n := len(rep.failures); n > 0 {
		return fmt.Errorf("%d failures, listed in the report", n)
	}
	return nil
}

// runWorkloads runs cfg.workloads in turn against one server. It returns
// the growth workload's outcome apart, when that ran (even partly).
func runWorkloads(ctx context.Context, cfg config, progress io.Writer) ([]result, *growthRun, []failure) {
	t, err := openTarget(ctx, cfg, false)
	if err != nil {
		return nil, nil, []failure{{"setup", err}}
	}
	e := &env{cfg: cfg, db: t.client.Database(dbName), progress: progress, cpu: t.cpu, child: t.child}
	var results []result
	var failures []failure
	for _, w := range cfg.workloads {
		if ctx.Err() != nil {
			failures = append(failures, failure{w.name, fmt.Errorf("not run: %w", ctx.Err())})
			continue
		}
		if w.ownServers && cfg.uri != "" {
			failures = append(failures, failure{w.name, errors.New("it starts its own servers: run it without --uri")})
			continue
		}
		fmt.Fprintf(progress, "running %s\n", w.name)
		res, err := w.run(ctx, e)
		// A workload that fails part way may have measured something
		// (growth, some of its checkpoints): it is reported beside the
		// error.
		results = append(results, res...)
		if err != nil {
			failures = append(failures, failure{w.name, err})
		}
	}
	if err := t.close(); err != nil {
		failures = append(failures, failure{"teardown", err})
	}
	return results, e.growth, failures
}
