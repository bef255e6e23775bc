package conn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/lethedb/lethe/tlsnet"
)

// Config configures a Listener.
type Config struct {
	Addr string           // host:port; port 0 picks a free one
	TLS  *tlsnet.Endpoint // nil serves plain TCP only
	// MaxConns bounds the open connections; 0 means only the file
	// descriptor limit does.
	MaxConns int
	// MessageTimeout bounds how long a client may take to send its first
	// message after connecting, to send the rest of a message once its
	// first byte has arrived, and to take in a reply (that one with up to
	// an eighth more, see Conn.write); 0 means no limit.
	MessageTimeout time.Duration
	// IdleTimeout closes a connection that has sent nothing for this long
	// and holds no cursor; 0 means never.
	IdleTimeout time.Duration
	Logger      *zap.Logger
	// Traffic receives the byte and request counts; it must outlive the
	// Listener.
	Traffic *Traffic
}

// Listener accepts connections and serves each in its own goroutine
// until Shutdown.
type Listener struct {
	cfg     Config
	d       Dispatcher
	log     *zap.Logger
	traffic *Traffic

	mu    sync.Mutex
	ln    net.Listener
	conns map[*Conn]struct{}
	// maxConns is the connection limit in force: Config.MaxConns, within
	// what the file descriptor limit allows while leaving the store its
	// files. 0 means none.
	maxConns int
	accepted atomic.Int64 // connections ever accepted; also the source of connection IDs
	rejected atomic.Int64 // connections refused for the limit

	closing atomic.Bool // set once by Shutdown; no new connection or request starts after it
	// wg counts the accept loop and the connection goroutines.
	wg sync.WaitGroup
}

// Listen listens on cfg.Addr; Serve then accepts.
func Listen(cfg Config, d Dispatcher) (*Listener, error) {
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("server: listen on %s: %w", cfg.Addr, err)
	}
	if cfg.TLS != nil {
		ln = cfg.TLS.Listener(ln, cfg.Logger)
	}
	l := &Listener{cfg: cfg, d: d, log: cfg.Logger, traffic: cfg.Traffic, ln: ln, conns: make(map[*Conn]struct{}), maxConns: cfg.MaxConns}
	if fdMax := fdConnLimit(); fdMax > 0 && (l.maxConns == 0 || l.maxConns > fdMax) {
		if l.maxConns > fdMax {
			l.log.Warn("--max-conns too high for the file descriptor limit", zap.Int("maxConns", l.maxConns), zap.Int("limit", fdMax))
		}
		l.maxConns = fdMax
	}
	return l, nil
}

// Serve accepts connections in the background until Shutdown.
func (l *Listener) Serve() {
	l.wg.Add(1)
	go l.acceptLoop()
}

// Addr is the address listened on.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Shutdown stops accepting connections and lets the requests in flight
// finish: a connection waiting for its next request wakes at once; one
// serving a request answers it first, then finds its read deadline passed.
// If ctx ends first, it closes the remaining connections and returns
// ctx's error without waiting further.
func (l *Listener) Shutdown(ctx context.Context) error {
	l.mu.Lock()
	l.closing.Store(true)
	for c := range l.conns {
		// The deadline stays, so no request slips in.
		c.nc.SetReadDeadline(time.Unix(1, 0))
	}
	l.mu.Unlock()
	l.ln.Close()
	idle := make(chan struct{})
	go func() {
		l.wg.Wait()
		close(idle)
	}()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		l.mu.Lock()
		for c := range l.conns {
			c.nc.Close()
		}
		l.mu.Unlock()
		return ctx.Err()
	}
}

func (l *Listener) acceptLoop() {
	defer l.wg.Done()
	var backoff time.Duration
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			if l.closing.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			// Typically out of file descriptors: wait for some to free up.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			l.log.Warn("accept failed", zap.Error(err), zap.Duration("retryIn", backoff))
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		l.openConn(nc)
	}
}

func (l *Listener) openConn(nc net.Conn) {
	l.mu.Lock()
	if l.closing.Load() {
		l.mu.Unlock()
		nc.Close()
		return
	}
	if limit := l.maxConns; limit > 0 && len(l.conns) >= limit {
		l.mu.Unlock()
		l.rejected.Add(1)
		l.log.Warn("connection refused: too many open connections",
			zap.String("remote", nc.RemoteAddr().String()), zap.Int("connectionCount", limit), zap.Int("maxConns", limit))
		nc.Close()
		return
	}
	c := newConn(l, nc, l.accepted.Add(1))
	l.conns[c] = struct{}{}
	open := len(l.conns)
	l.wg.Add(1)
	l.mu.Unlock()

	l.log.Info("connection accepted", zap.Int64("conn", c.id), zap.String("remote", c.remote), zap.Int("open", open))
	go c.serve()
}

func (l *Listener) closeConn(c *Conn, reason string) {
	c.nc.Close()
	if c.h != nil {
		c.h.Closed(reason)
	}
	l.mu.Lock()
	delete(l.conns, c)
	open := len(l.conns)
	l.mu.Unlock()
	l.log.Info("connection ended", zap.Int64("conn", c.id), zap.String("remote", c.remote),
		zap.String("reason", reason), zap.Int("open", open))
	l.wg.Done()
}

// MaxConns is the connection limit in force, 0 for none (and for a nil
// Listener, before the server starts).
func (l *Listener) MaxConns() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.maxConns
}

// Open is the number of open connections.
func (l *Listener) Open() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// Accepted is the number of connections ever accepted.
func (l *Listener) Accepted() int64 {
	if l == nil {
		return 0
	}
	return l.accepted.Load()
}

// Rejected is the number of connections refused for the limit.
func (l *Listener) Rejected() int64 {
	if l == nil {
		return 0
	}
	return l.rejected.Load()
}
