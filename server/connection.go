package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/conn"
	"github.com/lethedb/lethe/engine/members"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/tlsnet"
)

// The transport is package conn's: it accepts, reads frames and writes
// replies. The server is its Dispatcher: for each connection it keeps a
// Conn, the client's state between commands (who it is, its running
// command), and answers the requests conn decodes.

// netState is the listener and the server's side of the open connections.
type netState struct {
	mu    sync.Mutex
	ln    *conn.Listener // nil before Start
	conns map[*Conn]struct{}

	closing atomic.Bool   // set once by Shutdown
	stopped chan struct{} // closed when Shutdown has finished
	err     error         // Shutdown's result, valid once stopped is closed

	// ctx is the handlers' context, canceled when Shutdown stops waiting.
	ctx    context.Context
	cancel context.CancelFunc
}

// Conn is the server's side of one client connection. Only the
// connection's goroutine touches its fields, so the request path takes no
// locks, except ops, which currentOp and killOp read under its lock (see
// ops.go).
type Conn struct {
	id     int64
	srv    *Server
	tr     *conn.Conn // the transport; nil for a Conn a test makes without a socket
	remote string
	// appName is the application name the client gave in hello, which
	// failCommand may filter on.
	appName string

	req Request
	ops opState // the running command's cancellation, see ops.go

	auth  connAuth     // who the client is, see auth.go
	owner sessionOwner // its sessions' owner, see sessionowner.go
	// lastLsid is the session of the last command that had one, packed,
	// which the next one most likely shares (see requestSession).
	lastLsid string
}

// ID is the connectionId that hello reports.
func (c *Conn) ID() int64 { return c.id }

// RemoteAddr is the client's address, host:port.
func (c *Conn) RemoteAddr() string { return c.remote }

// IsTLS reports whether the client connected over TLS.
func (c *Conn) IsTLS() bool { return c.tr != nil && c.tr.IsTLS() }

// PeerSubject is the subject of the certificate the client presented and
// the server verified; false without one.
func (c *Conn) PeerSubject() (string, bool) {
	if c.tr == nil {
		return "", false
	}
	return c.tr.PeerSubject()
}

// negotiateCompression appends hello's "compression", the compressors the
// transport will use with this client.
func (c *Conn) negotiateCompression(dst []byte, offered bson.RawArray) []byte {
	if c.tr == nil {
		return dst
	}
	return c.tr.NegotiateCompression(dst, offered)
}

// Open is the server's part of a new connection (conn.Dispatcher).
func (s *Server) Open(tc *conn.Conn) conn.Handler {
	c := &Conn{id: tc.ID(), srv: s, tr: tc, remote: tc.RemoteAddr()}
	c.req.Conn = c
	s.net.mu.Lock()
	s.net.conns[c] = struct{}{}
	ctx := s.net.ctx
	s.net.mu.Unlock()
	c.startOps(ctx)
	return c
}

// Serve runs one command of the connection (conn.Handler).
func (c *Conn) Serve(tr *conn.Request) conn.Reply {
	req := &c.req
	req.DB, req.Body, req.Sequences = tr.DB, tr.Body, tr.Sequences
	req.exhaustAllowed, req.streamFrom, req.streamNext, req.closeConn = tr.ExhaustAllowed, tr.StreamFrom, -1, false
	reply := c.dispatch(req)
	return conn.Reply{Doc: reply, StreamNext: req.streamNext, Close: req.closeConn}
}

// ErrorReply answers a request the transport could not pass on
// (conn.Handler).
func (c *Conn) ErrorReply(e *mongoerr.Error) bson.Raw { return c.req.ErrorReply(e) }

// HoldsCursors reports whether the connection has open cursors, which
// keep it from the idle timeout (conn.Handler).
func (c *Conn) HoldsCursors() bool { return c.srv.cursors.OpenBy(c.id) > 0 }

// Trim lets go of reply buffers grown by an unusually large reply, so
// that an idle connection does not pin their memory (conn.Handler).
func (c *Conn) Trim() {
	c.req.TrimReply()
	if cap(c.req.decorated) > command.MaxKeptReplyBytes {
		c.req.decorated = nil
	}
}

// Closed forgets the connection once it has ended: its command's context
// and its cursors (conn.Handler).
func (c *Conn) Closed(string) {
	s := c.srv
	c.stopOps()
	s.cursors.ConnClosed(c.id)
	s.net.mu.Lock()
	delete(s.net.conns, c)
	s.net.mu.Unlock()
}

// Start listens on Config.Listen and serves connections in the background,
// one goroutine each, until Shutdown.
func (s *Server) Start() error {
	s.net.mu.Lock()
	defer s.net.mu.Unlock()
	if s.net.ln != nil || s.net.closing.Load() {
		return errors.New("server: already started")
	}
	ln, err := conn.Listen(conn.Config{
		Addr:           s.cfg.Listen,
		TLS:            s.cfg.TLS,
		MaxConns:       s.cfg.MaxConns,
		MessageTimeout: s.cfg.MessageTimeout,
		IdleTimeout:    s.cfg.IdleTimeout,
		Logger:         s.log,
		Traffic:        &s.stats.Traffic,
	}, s)
	if err != nil {
		return err
	}
	s.net.ln = ln
	addr := advertised(s.cfg.AdvertiseAddr, ln.Addr())
	if s.rs != nil {
		s.rs.Advertise(addr)
	}
	if s.cfg.AdvertiseAddr == "" {
		// The lease's next renewal publishes it if this one fails.
		if err := s.eng.SetAdvertise(context.Background(), addr); err != nil {
			s.log.Warn("the address listened on is not yet on the roster", zap.Error(err))
		}
	}
	s.net.conns = make(map[*Conn]struct{})
	s.net.ctx, s.net.cancel = context.WithCancel(context.Background())
	s.sessionsDone = make(chan struct{})
	go func() {
		defer close(s.sessionsDone)
		// Transactions past their lifetime are aborted meanwhile, and the
		// open ones when the server stops, before the store closes.
		txnsDone := make(chan struct{})
		go func() {
			defer close(txnsDone)
			s.txns.Run(s.net.ctx)
		}()
		s.reapRetries(true)
		s.sessions.Run(s.net.ctx)
		<-txnsDone
	}()
	ln.Serve()
	s.log.Info("lethe listening", zap.String("version", Version), zap.String("addr", ln.Addr().String()),
		zap.String("dataDir", s.cfg.DataDir), zap.Int("maxConns", ln.MaxConns()), zap.Bool("manualClock", s.cfg.ManualClock),
		zap.String("replSet", s.cfg.ReplSet), zap.Stringer("tlsMode", s.tlsMode()), zap.Bool("auth", s.cfg.Auth))
	if a, ok := ln.Addr().(*net.TCPAddr); ok && !a.IP.IsLoopback() && !s.cfg.Auth {
		s.log.Warn("listening on a non-loopback address without authentication: anyone who can reach it can read, change and drop every database; listen on 127.0.0.1 or put a firewall in front",
			zap.String("addr", ln.Addr().String()))
	}
	s.recent.EndStartup()
	return nil
}

// tlsMode is the mode the port serves TLS in.
func (s *Server) tlsMode() tlsnet.Mode {
	if s.cfg.TLS == nil {
		return tlsnet.Disabled
	}
	return s.cfg.TLS.Mode()
}

// listener is the transport, nil before Start.
func (s *Server) listener() *conn.Listener {
	s.net.mu.Lock()
	defer s.net.mu.Unlock()
	return s.net.ln
}

// Addr is the address the server listens on, nil before Start.
func (s *Server) Addr() net.Addr {
	if ln := s.listener(); ln != nil {
		return ln.Addr()
	}
	return nil
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
	s.net.mu.Unlock()
	s.log.Info("shutting down")

	var err error
	if ln != nil {
		if lerr := ln.Shutdown(ctx); lerr != nil {
			err = fmt.Errorf("server: shutdown: %w", lerr)
		}
	}
	if s.net.cancel != nil {
		s.net.cancel()
		<-s.sessionsDone
	}
	if cerr := s.eng.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("server: close store: %w", cerr))
	}
	s.stopClock()
	s.net.err = err
	s.log.Info("shut down", zap.Error(err))
	return err
}

// connLimit is the connection limit in force, 0 for none.
func (s *Server) connLimit() int { return s.listener().MaxConns() }

// openConns is the number of open connections.
func (s *Server) openConns() int { return s.listener().Open() }

// connections is a snapshot of the open connections.
func (s *Server) connections() []*Conn {
	s.net.mu.Lock()
	defer s.net.mu.Unlock()
	conns := make([]*Conn, 0, len(s.net.conns))
	for c := range s.net.conns {
		conns = append(conns, c)
	}
	return conns
}

// Collectors returns Prometheus collectors for the server's counters, for
// the registry that --metrics-listen serves.
func (s *Server) Collectors() []prometheus.Collector {
	return append(s.stats.Collectors(listenerConns{s}), s.eng.Reaper().Collectors()...)
}

// listenerConns are the server's connections as the metrics read them; the
// listener is looked up at every read, as it exists only after Start.
type listenerConns struct{ s *Server }

func (c listenerConns) Open() int       { return c.s.openConns() }
func (c listenerConns) Accepted() int64 { return c.s.listener().Accepted() }

// Members reads the roster of the servers sharing this one's store
// (engine.Members): nil when the store is not shared.
func (s *Server) Members(ctx context.Context) ([]members.Record, error) {
	return s.eng.Members(ctx)
}

// Halt stops this server's part among the servers sharing its store, as if
// its process had died: its roster and reaper leases are no longer renewed
// (the others take over its work once they run out) and its reaper stops
// (engine.Halt). It still answers clients. For tests of take-over;
// Shutdown must still be called.
func (s *Server) Halt() { s.eng.Halt() }
