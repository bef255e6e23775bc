package server

import (
	"context"
	"net"
	"os"
	"strconv"

	"github.com/lethedb/lethe/router"
)

// The face of a server that shares its store with others (package router):
// without a replica-set name, it presents itself as a mongos, with the
// sessions, retryable writes, transactions and change streams drivers
// use through one.

// startRouter makes the server a router: its cluster time moves past the
// times clients bring from the other servers, and hello lists the servers
// on the roster.
func (s *Server) startRouter() {
	s.ctime = router.NewClock(s.ctime, s.clock.Now)
	s.router = router.New(router.Config{Logger: s.log, Roster: func(ctx context.Context) ([]string, error) {
		recs, err := s.eng.Members(ctx)
		if err != nil {
			return nil, err
		}
		addrs := make([]string, len(recs))
		for i, r := range recs {
			addrs[i] = r.Addr
		}
		return addrs, nil
	}})
}

// clustered reports whether the server is a replica-set member or a
// router: what drivers give sessions' transaction numbers, read and write
// concerns and change streams, and what answers with $clusterTime and
// operationTime.
func (s *Server) clustered() bool { return s.rs != nil || s.router != nil }

// advertised is the address the server names itself by, to clients in
// hello and to the other servers on the roster: Config.AdvertiseAddr, or
// else the address listened on, with the machine's host name in place of
// an unspecified IP (0.0.0.0, ::), which no client could connect to.
func advertised(configured string, ln net.Addr) string {
	if configured != "" {
		return configured
	}
	addr := ln.String()
	if a, ok := ln.(*net.TCPAddr); ok && a.IP.IsUnspecified() {
		if h, err := os.Hostname(); err == nil {
			addr = net.JoinHostPort(h, strconv.Itoa(a.Port))
		}
	}
	return addr
}
