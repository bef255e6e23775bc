package main

import (
	"fmt"
	"net"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/kv/tikvkv"
)

// storeHelp is --store's line in --help.
const storeHelp = "where the data lives: pebble (on this machine, in --data-dir); tikv (a TiKV cluster, by the PD endpoints --pd names; one server per cluster and --store-prefix for now); " +
	"or tikv-mock (client-go's in-process mock of TiKV: in memory, gone when the process ends, for tests and for trying the distributed mode)"

// storeSpec is a parsed --store.
type storeSpec struct {
	kind string   // "pebble", "tikv" or "tikv-mock"
	pd   []string // the PD endpoints of "tikv"
}

// parseStore reads --store and --pd, which names the PD endpoints of
// --store tikv and of nothing else.
func parseStore(s, pdList string) (storeSpec, error) {
	switch s {
	case "pebble", "tikv-mock":
		if pdList != "" {
			return storeSpec{}, fmt.Errorf("--pd: only --store tikv connects to PD, not --store %s", s)
		}
		return storeSpec{kind: s}, nil
	case "tikv":
		var pd []string
		for _, a := range strings.Split(pdList, ",") {
			a = strings.TrimSpace(a)
			if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
				return storeSpec{}, fmt.Errorf("--pd: %q in %q is not a PD endpoint host:port", a, pdList)
			}
			pd = append(pd, a)
		}
		return storeSpec{kind: "tikv", pd: pd}, nil
	}
	return storeSpec{}, fmt.Errorf("--store: want pebble, tikv or tikv-mock, not %q", s)
}

// open opens the store spec names; nil for pebble, which the engine opens
// itself in the data directory. Client-go's own log lines go to log, from
// warnings up: it logs every lock it meets at info.
func (spec storeSpec) open(prefix string, log *zap.Logger) (kv.Store, error) {
	opts := tikvkv.Options{Prefix: prefix, Logger: log.Named("tikv").WithOptions(zap.IncreaseLevel(zapcore.WarnLevel))}
	var s *tikvkv.Store
	var err error
	switch spec.kind {
	case "tikv":
		s, err = tikvkv.Open(spec.pd, opts)
	case "tikv-mock":
		s, err = tikvkv.OpenMock(opts)
	default:
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// String names the store in the log.
func (spec storeSpec) String() string {
	if spec.kind == "tikv" {
		return "tikv (PD " + strings.Join(spec.pd, ",") + ")"
	}
	return spec.kind
}
