package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"go.uber.org/zap"
)

// servePprof serves Go's profiler (net/http/pprof: /debug/pprof/...) on
// addr, so that a running server can be profiled with `go tool pprof`. The
// profiler has no access control and shows the server's internals, so only
// a loopback address is accepted: reach it from elsewhere through an SSH
// tunnel.
func servePprof(addr string, log *zap.Logger) (*http.Server, error) {
	if err := checkPprofAddr(addr); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof-listen: %w", err)
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("profiler server stopped", zap.Error(err))
		}
	}()
	log.Info("serving the profiler", zap.String("addr", ln.Addr().String()))
	return hs, nil
}

// checkPprofAddr refuses a --pprof-listen address beyond loopback.
func checkPprofAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--pprof-listen: %w", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--pprof-listen %s: the profiler has no access control, so it serves only on a loopback address", addr)
	}
	return nil
}
