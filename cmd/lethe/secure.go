package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"

	"github.com/lethedb/lethe/tlsnet"
)

// isLoopback reports whether listening on addr (host:port) is reachable
// from this machine only. A host name other than localhost counts as not:
// what it resolves to may change.
func isLoopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("--listen: %w", err)
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

// checkBinding refuses to listen beyond the loopback interface without
// access control unless the operator says so in as many words: without
// --auth anyone who reaches the port may read, change and drop everything.
func checkBinding(listen string, auth, insecureRemote bool) error {
	loopback, err := isLoopback(listen)
	if err != nil || loopback || auth || insecureRemote {
		return err
	}
	return fmt.Errorf("--listen %s is not a loopback address and --auth is off: anyone who can reach it could read, change and drop every database; "+
		"turn on --auth, listen on 127.0.0.1, or give --insecure-no-auth-remote to serve without access control anyway", listen)
}

// tlsFlags are the TLS flags as given.
type tlsFlags struct {
	certFile, keyFile, caFile, mode *string
	allowWithoutCert                *bool
}

// endpoint builds the TLS endpoint the flags ask for, nil when TLS is
// disabled; it checks their combination and loads the files, so a mistake
// stops the start before the store opens.
func (f tlsFlags) endpoint() (*tlsnet.Endpoint, error) {
	mode, err := tlsnet.ParseMode(*f.mode)
	if err != nil {
		return nil, fmt.Errorf("--tls-mode: want disabled, allow, prefer or require, not %q", *f.mode)
	}
	cfg := tlsnet.Config{CertFile: *f.certFile, KeyFile: *f.keyFile, CAFile: *f.caFile, Mode: mode,
		AllowConnectionsWithoutCertificates: *f.allowWithoutCert}
	switch {
	case mode == tlsnet.Disabled && (cfg.CertFile != "" || cfg.KeyFile != "" || cfg.CAFile != "" || cfg.AllowConnectionsWithoutCertificates):
		return nil, errors.New("--tls-cert-file, --tls-key-file, --tls-ca-file and --tls-allow-connections-without-certificates need --tls-mode allow, prefer or require")
	case mode == tlsnet.Disabled:
		return nil, nil
	case cfg.CertFile == "" || cfg.KeyFile == "":
		return nil, fmt.Errorf("--tls-mode %s needs --tls-cert-file and --tls-key-file", mode)
	case cfg.AllowConnectionsWithoutCertificates && cfg.CAFile == "":
		return nil, errors.New("--tls-allow-connections-without-certificates needs --tls-ca-file: without a CA no client certificate is asked for")
	}
	return tlsnet.New(cfg)
}

// reloadOnHangup reloads ep's certificates on each SIGHUP until stop is
// called, logging the outcome; a failed reload keeps the ones in use.
func reloadOnHangup(ep *tlsnet.Endpoint, log *zap.Logger) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-hup:
			case <-done:
				return
			}
			if ep == nil {
				log.Info("SIGHUP received: TLS is disabled, nothing to reload")
				continue
			}
			if err := ep.Reload(); err != nil {
				log.Error("TLS certificate reload failed", zap.Error(err))
				continue
			}
			cert := ep.Certificate()
			log.Info("TLS certificates reloaded", zap.String("certFile", ep.Config().CertFile),
				zap.String("subject", cert.Subject.String()), zap.Time("notAfter", cert.NotAfter))
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
	}
}
