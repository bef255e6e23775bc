package engine

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/kv/kvtest"
	"github.com/lethedb/lethe/engine/kv/pebblekv"
	"github.com/lethedb/lethe/engine/kv/tikvkv"
	"github.com/lethedb/lethe/oplog"
)

// The model tests run against every kv backend, each behind the kv
// contract checker; -model.backend (or LETHE_MODEL_BACKEND) picks one.
var modelBackendFlag = flag.String("model.backend", "", "run the model tests on this kv backend only: pebble or tikv-mock (also LETHE_MODEL_BACKEND)")

// modelServersFlag runs the concurrent model on the TiKV mock with its
// workers spread over that many servers sharing the store only (issue 22);
// also LETHE_MODEL_SERVERS.
var modelServersFlag = flag.Int("model.servers", 0, "run the concurrent model on the TiKV mock over this many servers only; by default over 1, then 3 (also LETHE_MODEL_SERVERS)")

// modelServerCounts are the numbers of servers the concurrent model runs
// on over backend: on the TiKV mock one, then three sharing the store,
// unless a flag or the environment names one count; one on the others.
func modelServerCounts(backend string) []int {
	if backend != "tikv-mock" {
		return []int{1}
	}
	if n := *modelServersFlag; n > 0 {
		return []int{n}
	}
	if n, err := strconv.Atoi(os.Getenv("LETHE_MODEL_SERVERS")); err == nil && n > 0 {
		return []int{n}
	}
	return []int{1, 3}
}

// modelBackends are the backends a model test runs on: every one, unless
// a flag or the environment picks one.
func modelBackends() []string {
	if b := *modelBackendFlag; b != "" {
		return []string{b}
	}
	if b := os.Getenv("LETHE_MODEL_BACKEND"); b != "" {
		return []string{b}
	}
	return []string{"pebble", "tikv-mock"}
}

// openModelEngine opens an engine for the model in dir on backend, with
// the store wrapped in the contract checker.
func openModelEngine(backend, dir string, opts Options) (*Engine, error) {
	var store kv.Store
	switch backend {
	case "pebble":
		s, err := pebblekv.Open(dir, pebblekv.Options{Logger: opts.Logger, LogsDeletes: oplog.IsEntryKey})
		if err != nil {
			return nil, err
		}
		store = s
	case "tikv-mock":
		// client-go logs every lock it meets; the engine's logger, or none.
		logger := opts.Logger
		if logger == nil {
			logger = zap.NewNop()
		}
		s, err := tikvMockCluster(dir).Open(tikvkv.Options{Logger: logger})
		if err != nil {
			return nil, err
		}
		store = s
		// The roster's and the reaper's leases run on real time, as the
		// server runs them on the store's: the model moves its own clock
		// by hand, backwards too, which would run them out.
		if opts.Cluster.Now == nil {
			opts.Cluster.Now = time.Now
		}
		// The model changes the catalog every few milliseconds, and each
		// change through one server waits for the others' next poll
		// (twice when it fences its collection): at the default poll the
		// run would mostly wait.
		if opts.Cluster.CatalogPoll == 0 {
			opts.Cluster.CatalogPoll = 5 * time.Millisecond
		}
	default:
		return nil, fmt.Errorf("model: unknown kv backend %q", backend)
	}
	opts.Store = kvtest.Contract(store)
	return Open(dir, opts)
}

// tikvMockClusters are the mock TiKV clusters of the model's directories:
// a restart opens a new front-end on the same cluster, as a Lethe process
// restarting against a real one would. They live as long as the test
// process (in memory, a few per run).
var tikvMockClusters sync.Map // dir -> *tikvkv.MockCluster

func tikvMockCluster(dir string) *tikvkv.MockCluster {
	if c, ok := tikvMockClusters.Load(dir); ok {
		return c.(*tikvkv.MockCluster)
	}
	c, err := tikvkv.NewMockCluster(tikvkv.FamilySplits("")...)
	if err != nil {
		panic(err)
	}
	actual, _ := tikvMockClusters.LoadOrStore(dir, c)
	return actual.(*tikvkv.MockCluster)
}
