package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// config is what the flags ask for.
type config struct {
	uri        string
	clients    int
	duration   time.Duration
	docs       int
	indexDocs  int
	groupDocs  int
	lookupDocs int
	// failedLogins is the size of the auth-failures workload's attack.
	failedLogins int
	workloads    []workload
	ttlDocs      int
	ttlWait      time.Duration
	json         bool
	cpuProfile   string
}

// parseFlags reads the command line. Errors and -help go to errOut.
func parseFlags(args []string, errOut io.Writer) (config, error) {
	var cfg config
	var names string
	fs := flag.NewFlagSet("lethe-load", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.StringVar(&cfg.uri, "uri", "", "`URI` of a running server; empty starts one in this process")
	fs.IntVar(&cfg.clients, "clients", 16, "concurrent clients of every workload")
	fs.DurationVar(&cfg.duration, "duration", 5*time.Second, "how long each workload is measured")
	fs.IntVar(&cfg.docs, "docs", 10000, "documents preloaded for findone, update and find100")
	fs.IntVar(&cfg.indexDocs, "index-docs", 100000, "documents of the index workload")
	fs.IntVar(&cfg.groupDocs, "group-docs", 1000000, "documents the agg-group workload groups")
	fs.IntVar(&cfg.lookupDocs, "lookup-docs", 100000, "documents of each of the two collections the agg-lookup workload joins")
	fs.IntVar(&cfg.failedLogins, "failed-logins", 10000, "failed logins the auth-failures workload makes while it measures an authenticated client")
	fs.StringVar(&names, "workloads", "basic", "comma-separated `list` of "+workloadHelp()+"; \"basic\" for the default ones, \"all\" for every one, empty for none")
	fs.IntVar(&cfg.ttlDocs, "ttl-docs", 0, "documents of the TTL workload; 0 skips it")
	fs.DurationVar(&cfg.ttlWait, "ttl-wait", 90*time.Second, "longest wait for the reaper to delete the TTL documents")
	fs.BoolVar(&cfg.json, "json", false, "print the report as JSON")
	fs.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run (load and in-process server) to `file`")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: lethe-load [flags]\n\nMeasures a Lethe server under concurrent load.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}

	var err error
	if cfg.workloads, err = selectWorkloads(names); err != nil {
		return cfg, err
	}
	switch {
	case cfg.clients < 1:
		return cfg, errors.New("--clients must be at least 1")
	case cfg.duration <= 0:
		return cfg, errors.New("--duration must be positive")
	case cfg.docs < 1:
		return cfg, errors.New("--docs must be at least 1")
	case cfg.indexDocs < 1:
		return cfg, errors.New("--index-docs must be at least 1")
	case cfg.groupDocs < 1:
		return cfg, errors.New("--group-docs must be at least 1")
	case cfg.lookupDocs < 1:
		return cfg, errors.New("--lookup-docs must be at least 1")
	case cfg.failedLogins < 1:
		return cfg, errors.New("--failed-logins must be at least 1")
	case cfg.ttlDocs < 0:
		return cfg, errors.New("--ttl-docs must not be negative")
	case cfg.ttlWait <= 0:
		return cfg, errors.New("--ttl-wait must be positive")
	}
	return cfg, nil
}

// selectWorkloads turns a --workloads list into workloads in their
// canonical order, so that every ceiling is measured before the workloads
// compared with it and repeated names run once.
func selectWorkloads(list string) ([]workload, error) {
	want := make(map[string]bool)
	all := allWorkloads()
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimSpace(name)
		switch name {
		case "":
		case "basic", "all":
			for _, w := range all {
				if w.basic || name == "all" {
					want[w.name] = true
				}
			}
		default:
			if !slices.ContainsFunc(all, func(w workload) bool { return w.name == name }) {
				return nil, fmt.Errorf("unknown workload %q in --workloads (known: %s)", name, workloadHelp())
			}
			want[name] = true
		}
	}
	return slices.DeleteFunc(all, func(w workload) bool { return !want[w.name] }), nil
}

func workloadHelp() string {
	var names []string
	for _, w := range allWorkloads() {
		names = append(names, w.name)
	}
	return strings.Join(names, ", ")
}
