package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// netState is the listener and the open connections.
type netState struct {
	mu    sync.Mutex
	ln    net.Listener
	conns map[*Conn]struct{}
	// maxConns is the connection limit in force: Config.MaxConns, within
	// what the file descriptor limit allows while leaving the store its
	// files. 0 means none.
	maxConns int
	rejected atomic.Int64 // connections refused for the limit

	closing atomic.Bool   // set once by Shutdown; no new connection or request starts after it
	stopped chan struct{} // closed when Shutdown has finished
	err     error         // Shutdown's result, valid once stopped is closed

	// wg counts the accept loop and the connection goroutines.
	wg sync.WaitGroup
	// ctx is the handlers' context, canceled when Shutdown stops waiting.
	ctx    context.Context
	cancel context.CancelFunc
}

// Start listens on Config.Listen and serves connections in the background,
// one goroutine each, until Shutdown.
func (s *Server) Start() error {
	s.net.mu.Lock()
	defer s.net.mu.Unlock()
	if s.net.ln != nil || s.net.closing.Load() {
		return errors.New("server: already started")
	}
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("server: listen on %s: %w", s.cfg.Listen, err)
	}
	if s.cfg.TLS != nil {
		ln = s.cfg.TLS.Listener(ln, s.log)
	}
	s.net.ln = ln
	if s.rs != nil {
		s.rs.advertise(s.cfg.AdvertiseAddr, ln.Addr())
	}
	s.net.conns = make(map[*Conn]struct{})
	s.net.maxConns = s.cfg.MaxConns
	if fdMax := fdConnLimit(); fdMax > 0 && (s.net.maxConns == 0 || s.net.maxConns > fdMax) {
		if s.net.maxConns > fdMax {
			s.log.Warn("--max-conns too high for the file descriptor limit", zap.Int("maxConns", s.net.maxConns), zap.Int("limit", fdMax))
		}
		s.net.maxConns = fdMax
	}
	s.net.ctx, s.net.cancel = context.WithCancel(context.Background())
	s.sessionsDone = make(chan struct{})
	go func() {
		defer close(s.sessionsDone)
		s.reapRetries(true)
		s.sessions.Run(s.net.ctx)
	}()
	s.net.wg.Add(1)
	go s.acceptLoop(ln)
	s.log.Info("lethe listening", zap.String("version", Version), zap.String("addr", ln.Addr().String()),
		zap.String("dataDir", s.cfg.DataDir), zap.Int("maxConns", s.net.maxConns), zap.Bool("manualClock", s.cfg.ManualClock),
		zap.String("replSet", s.cfg.ReplSet), zap.Stringer("tlsMode", s.tlsMode()), zap.Bool("auth", s.cfg.Auth))
	if a, ok := ln.Addr().(*net.TCPAddr); ok && !a.IP.IsLoopback() && !s.cfg.Auth {
		s.log.Warn("listening on a non-loopback address without authentication: anyone who can reach it can read, change and drop every database; listen on 127.0.0.1 or put a firewall in front",
			zap.String("addr", ln.Addr().String()))
	}
	s.recent.endStartup()
	return nil
}

// Addr is the address the server listens on, nil before Start.
func (s *Server) Addr() net.Addr {
	s.net.mu.Lock()
	defer s.net.mu.Unlock()
	if s.net.ln == nil {
		return nil
	}
	return s.net.ln.Addr()
}

// Shutdown stops accepting connections, lets the requests in flight finish
// and closes the connections and then the store. If ctx ends first, it
// closes the remaining connections, cancels the handlers' context, closes the
// store without waiting further and returns ctx's error. Later calls wait for
// the first to finish and return its result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.net.mu.Lock()
	if s.net.closing.Swap(true) {
		s.net.mu.Unlock()
		select {
		case <-s.net.stopped:
			return s.net.err
		case <-ctx.Done():
			return fmt.Errorf("server: shutdown: %w", ctx.Err())
		}
	}
	s.net.stopped = make(chan struct{})
	defer close(s.net.stopped)
	s.topo.shuttingDown() // answers waiting hellos at once
	ln := s.net.ln
	for c := range s.net.conns {
		// A connection waiting for its next request wakes at once; one
		// serving a request finishes and answers it first, then finds the
		// deadline passed. The deadline stays, so no request slips in.
		c.nc.SetReadDeadline(time.Unix(1, 0))
	}
	s.net.mu.Unlock()
	s.log.Info("shutting down")

	if ln != nil {
		ln.Close()
	}
	idle := make(chan struct{})
	go func() {
		s.net.wg.Wait()
		close(idle)
	}()
	var err error
	select {
	case <-idle:
	case <-ctx.Done():
		err = fmt.Errorf("server: shutdown: %w", ctx.Err())
		s.net.mu.Lock()
		for c := range s.net.conns {
			c.nc.Close()
		}
		s.net.mu.Unlock()
	}
	if s.net.cancel != nil {
		s.net.cancel()
		<-s.sessionsDone
	}
	if cerr := s.eng.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("server: close store: %w", cerr))
	}
	s.net.err = err
	s.log.Info("shut down", zap.Error(err))
	return err
}

func (s *Server) acceptLoop(ln net.Listener) {
	defer s.net.wg.Done()
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.net.closing.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			// Typically out of file descriptors: wait for some to free up.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn("accept failed", zap.Error(err), zap.Duration("retryIn", backoff))
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		s.openConn(nc)
	}
}

func (s *Server) openConn(nc net.Conn) {
	s.net.mu.Lock()
	if s.net.closing.Load() {
		s.net.mu.Unlock()
		nc.Close()
		return
	}
	if limit := s.net.maxConns; limit > 0 && len(s.net.conns) >= limit {
		s.net.mu.Unlock()
		s.net.rejected.Add(1)
		s.log.Warn("connection refused: too many open connections",
			zap.String("remote", nc.RemoteAddr().String()), zap.Int("connectionCount", limit), zap.Int("maxConns", limit))
		nc.Close()
		return
	}
	c := newConn(s, nc, s.stats.connsSeen.Add(1))
	s.net.conns[c] = struct{}{}
	open := len(s.net.conns)
	s.net.wg.Add(1)
	ctx := s.net.ctx
	s.net.mu.Unlock()

	s.log.Info("connection accepted", zap.Int64("conn", c.id), zap.String("remote", c.remote), zap.Int("open", open))
	go c.serve(ctx)
}

func (s *Server) closeConn(c *Conn, reason string) {
	c.nc.Close()
	s.cursors.connClosed(c.id)
	s.net.mu.Lock()
	delete(s.net.conns, c)
	open := len(s.net.conns)
	s.net.mu.Unlock()
	s.log.Info("connection ended", zap.Int64("conn", c.id), zap.String("remote", c.remote),
		zap.String("reason", reason), zap.Int("open", open))
	s.net.wg.Done()
}

// connLimit is the connection limit in force, 0 for none.
func (s *Server) connLimit() int {
	s.net.mu.Lock()
	defer s.net.mu.Unlock()
	return s.net.maxConns
}

// openConns is the number of open connections.
func (s *Server) openConns() int {
	s.net.mu.Lock()
	defer s.net.mu.Unlock()
	return len(s.net.conns)
}
