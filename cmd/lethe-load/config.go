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
	textDocs   int
	groupDocs  int
	lookupDocs int
	// collatedDocs is how many strings the collated-sort workload sorts.
	collatedDocs int
	// failedLogins is the size of the auth-failures workload's attack.
	failedLogins int
	workloads    []workload
	ttlDocs      int
	ttlWait      time.Duration
	json         bool
	cpuProfile   string
	// ycsbRecords is how many records the YCSB mixes load; ycsbDist
	// their key chooser, zipfian or uniform.
	ycsbRecords int
	ycsbDist    string
	// serverPID is the --uri server's process, whose CPU time is read
	// from /proc; 0 when unknown.
	serverPID int
	// serverBin, when set, is a lethe binary started as a child process
	// to measure instead of the in-process server.
	serverBin string
	// serverArgs are extra flags of the child servers (--server-args).
	serverArgs []string
	// compare holds two lethe binaries to measure against each other, in
	// rounds alternating between them; nil when not comparing.
	compare []string
	rounds  int
	// growthDocs is how many documents the growth workload loads.
	growthDocs int
	// geoDocs is how many points the geo-near workload loads.
	geoDocs int
}

// parseFlags reads the command line. Errors and -help go to errOut.
func parseFlags(args []string, errOut io.Writer) (config, error) {
	var cfg config
	var names, compare string
	fs := flag.NewFlagSet("lethe-load", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.StringVar(&cfg.uri, "uri", "", "`URI` of a running server; empty starts one in this process")
	fs.IntVar(&cfg.clients, "clients", 16, "concurrent clients of every workload")
	fs.DurationVar(&cfg.duration, "duration", 5*time.Second, "how long each workload is measured")
	fs.IntVar(&cfg.docs, "docs", 10000, "documents preloaded for findone, update and find100")
	fs.IntVar(&cfg.indexDocs, "index-docs", 100000, "documents of the index workload")
	fs.IntVar(&cfg.textDocs, "text-docs", 100000, "documents the text workload searches")
	fs.IntVar(&cfg.groupDocs, "group-docs", 1000000, "documents the agg-group workload groups")
	fs.IntVar(&cfg.lookupDocs, "lookup-docs", 100000, "documents of each of the two collections the agg-lookup workload joins")
	fs.IntVar(&cfg.collatedDocs, "collated-docs", 100000, "strings the collated-sort workload sorts")
	fs.IntVar(&cfg.failedLogins, "failed-logins", 10000, "failed logins the auth-failures workload makes while it measures an authenticated client")
	fs.StringVar(&names, "workloads", "basic", "comma-separated `list` of "+workloadHelp()+"; \"basic\" for the default ones, \"all\" for every one, empty for none")
	fs.IntVar(&cfg.ttlDocs, "ttl-docs", 0, "documents of the TTL workload; 0 skips it")
	fs.DurationVar(&cfg.ttlWait, "ttl-wait", 90*time.Second, "longest wait for the reaper to delete the TTL documents")
	fs.BoolVar(&cfg.json, "json", false, "print the report as JSON")
	fs.IntVar(&cfg.ycsbRecords, "ycsb-records", 20000, "records (1 KB each) the YCSB mixes load, once per run")
	fs.StringVar(&cfg.ycsbDist, "ycsb-dist", "zipfian", "which records the YCSB mixes touch: zipfian (YCSB's scrambled Zipfian, constant 0.99) or uniform")
	fs.IntVar(&cfg.serverPID, "server-pid", 0, "process id of the --uri server, to report its CPU time per operation (read from /proc)")
	fs.StringVar(&cfg.serverBin, "server-bin", "", "lethe `binary` to start as a child process and measure instead of the in-process server, so that its CPU time is its own")
	childFlags(fs, &cfg)
	fs.IntVar(&cfg.geoDocs, "geo-docs", 1000000, "points the geo-near workload loads under a 2dsphere index")
	fs.IntVar(&cfg.growthDocs, "growth-docs", 10000000, "documents the growth workload loads, measuring at 100,000, at every tenfold and at the end")
	fs.StringVar(&compare, "compare", "", "two lethe binaries `binA,binB` to start and measure in alternating rounds: each workload's ratio to ping on each, and B's over A's")
	fs.IntVar(&cfg.rounds, "rounds", 3, "rounds of --compare, each measuring every workload and ping on both servers for --duration/rounds")
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
	case cfg.textDocs < 1:
		return cfg, errors.New("--text-docs must be at least 1")
	case cfg.groupDocs < 1:
		return cfg, errors.New("--group-docs must be at least 1")
	case cfg.lookupDocs < 1:
		return cfg, errors.New("--lookup-docs must be at least 1")
	case cfg.collatedDocs < 1:
		return cfg, errors.New("--collated-docs must be at least 1")
	case cfg.failedLogins < 1:
		return cfg, errors.New("--failed-logins must be at least 1")
	case cfg.ttlDocs < 0:
		return cfg, errors.New("--ttl-docs must not be negative")
	case cfg.ttlWait <= 0:
		return cfg, errors.New("--ttl-wait must be positive")
	case cfg.ycsbRecords < 1:
		return cfg, errors.New("--ycsb-records must be at least 1")
	case cfg.ycsbDist != "zipfian" && cfg.ycsbDist != "uniform":
		return cfg, fmt.Errorf("--ycsb-dist must be zipfian or uniform, not %q", cfg.ycsbDist)
	case cfg.serverPID < 0:
		return cfg, errors.New("--server-pid must not be negative")
	case cfg.serverPID > 0 && cfg.uri == "":
		return cfg, errors.New("--server-pid names the --uri server's process: give --uri too")
	case cfg.serverBin != "" && cfg.uri != "":
		return cfg, errors.New("--server-bin starts a server: it does not go with --uri")
	case cfg.rounds < 1:
		return cfg, errors.New("--rounds must be at least 1")
	case cfg.growthDocs < 1:
		return cfg, errors.New("--growth-docs must be at least 1")
	case cfg.geoDocs < 1:
		return cfg, errors.New("--geo-docs must be at least 1")
	case len(cfg.serverArgs) > 0 && cfg.serverBin == "" && compare == "":
		return cfg, errors.New("--server-args are flags of the server --server-bin or --compare starts: give one of them")
	}
	if compare != "" {
		return cfg, parseCompare(&cfg, compare, errOut)
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
				if w.basic || name == "all" && !w.named {
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

// parseCompare reads --compare's two binaries and checks that the rest of
// the command line can be compared. Only workloads that measure the one
// server they are given can be; the others are left out, with a note to
// errOut, so that "basic" and "all" work.
func parseCompare(cfg *config, list string, errOut io.Writer) error {
	bins := strings.Split(list, ",")
	if len(bins) != 2 || bins[0] == "" || bins[1] == "" {
		return fmt.Errorf("--compare wants two binaries, binA,binB, not %q", list)
	}
	if cfg.uri != "" || cfg.serverBin != "" {
		return errors.New("--compare starts its own two servers: it goes with neither --uri nor --server-bin")
	}
	if cfg.ttlDocs > 0 {
		return errors.New("--compare does not run the TTL workload: leave out --ttl-docs")
	}
	cfg.workloads = slices.DeleteFunc(cfg.workloads, func(w workload) bool {
		if (w.ownServers && !w.fromBin) || w.name == "pebble-sync" || w.name == "growth" {
			fmt.Fprintf(errOut, "lethe-load: --compare leaves out %s: it measures servers or a store of its own, not the two compared\n", w.name)
			return true
		}
		return false
	})
	cfg.compare = bins
	return nil
}
