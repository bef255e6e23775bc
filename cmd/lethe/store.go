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
const storeHelp = "where the data lives: pebble (on this machine, in --data-dir); tikv://PD:PORT,PD:PORT,... (a TiKV cluster, by its PD endpoints; one server per cluster and --store-prefix for now); " +
	"or tikv-mock (client-go's in-process mock of TiKV: in memory, gone when the process ends, for tests and for trying the distributed mode)"

// storeSpec is a parsed --store.
type storeSpec struct {
	kind string   // "pebble", "tikv" or "tikv-mock"
	pd   []string // the PD endpoints of "tikv"
}

// parseStore reads --store.
func parseStore(s string) (storeSpec, error) {
	switch {
	case s == "pebble" || s == "tikv-mock":
		return storeSpec{kind: s}, nil
	case strings.HasPrefix(s, "tikv://"):
		var pd []string
		for _, a := range strings.Split(strings.TrimPrefix(s, "tikv://"), ",") {
			a = strings.TrimSpace(a)
			if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
				return storeSpec{}, fmt.Errorf("--store: %q in %q is not a PD endpoint host:port", a, s)
			}
			pd = append(pd, a)
		}
		return storeSpec{kind: "tikv", pd: pd}, nil
	}
	return storeSpec{}, fmt.Errorf("--store: want pebble, tikv-mock or tikv://PD:PORT,..., not %q", s)
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
		return "tikv://" + strings.Join(spec.pd, ",")
	}
	return spec.kind
}
