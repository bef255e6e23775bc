package engine

import (
	"flag"
	"fmt"
	"os"

	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/kv/kvtest"
	"github.com/lethedb/lethe/engine/kv/pebblekv"
	"github.com/lethedb/lethe/oplog"
)

// The model tests run against every kv backend, each behind the kv
// contract checker; -model.backend (or LETHE_MODEL_BACKEND) picks one.
var modelBackendFlag = flag.String("model.backend", "", "run the model tests on this kv backend only: pebble (also LETHE_MODEL_BACKEND)")

// modelBackends are the backends the model tests run on.
func modelBackends() []string {
	if b := *modelBackendFlag; b != "" {
		return []string{b}
	}
	if b := os.Getenv("LETHE_MODEL_BACKEND"); b != "" {
		return []string{b}
	}
	return []string{"pebble"}
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
	default:
		return nil, fmt.Errorf("model: unknown kv backend %q", backend)
	}
	opts.Store = kvtest.Contract(store)
	return Open(dir, opts)
}
