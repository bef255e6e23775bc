package tlsnet

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// recordHandshake is the content type of a TLS handshake record, the first
// byte a TLS client sends. A MongoDB message starts with its length, a
// little-endian int32 of at least 16: its first byte is 0x16 only for a
// message of 22 + 256n bytes, which no client opens a connection with (its
// first message is a hello of a few hundred bytes carrying its metadata).
const recordHandshake = 0x16

// ErrPlainRefused is what reading a plain connection returns under the
// require mode, after closing it.
var ErrPlainRefused = errors.New("tls: plain connection refused: the server requires TLS")

// Listener wraps a listener so that each connection it accepts serves TLS or
// plain TCP as its first byte says. Accept returns at once: the first byte
// is read and the handshake done on the connection's first Read or Write, in
// the goroutine serving it and under the deadlines it sets, so a client that
// sends nothing holds up no one but itself.
type Listener struct {
	net.Listener
	ep  *Endpoint
	log *zap.Logger
}

// Listener wraps ln; log (nil for none) records refused plain connections.
func (e *Endpoint) Listener(ln net.Listener, log *zap.Logger) *Listener {
	if log == nil {
		log = zap.NewNop()
	}
	return &Listener{Listener: ln, ep: e, log: log}
}

// Accept waits for the next connection and returns it as a *Conn.
func (l *Listener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &Conn{raw: nc, l: l}, nil
}

// Conn is an accepted connection whose kind, TLS or plain, is settled by its
// first byte on first use.
type Conn struct {
	raw net.Conn
	l   *Listener

	once  sync.Once
	inner net.Conn // the TLS or plain connection once settled; nil if refused
	err   error    // why the connection could not be settled

	// tls is the TLS connection once its handshake has begun, which Close
	// closes; secured is it once the handshake has succeeded. Both are
	// read from other goroutines.
	tls, secured atomic.Pointer[tls.Conn]
}

// settle reads the first byte and, for TLS, does the handshake.
func (c *Conn) settle() {
	var first [1]byte
	if _, err := c.raw.Read(first[:]); err != nil {
		c.err = err
		return
	}
	pc := &prefixConn{Conn: c.raw, first: first[:]}
	if first[0] != recordHandshake {
		if c.l.ep.cfg.Mode == Require {
			c.l.log.Info("plain connection refused: TLS is required", zap.String("remote", c.raw.RemoteAddr().String()))
			c.raw.Close()
			c.err = ErrPlainRefused
			return
		}
		c.inner = pc
		return
	}
	tc := tls.Server(pc, c.l.ep.ServerConfig())
	c.tls.Store(tc)
	if err := tc.Handshake(); err != nil {
		c.err = fmt.Errorf("tls handshake: %w", err)
		return
	}
	c.inner = tc
	c.secured.Store(tc)
}

// Read reads from the connection, settling it first.
func (c *Conn) Read(b []byte) (int, error) {
	c.once.Do(c.settle)
	if c.err != nil {
		return 0, c.err
	}
	return c.inner.Read(b)
}

// Write writes to the connection, settling it first.
func (c *Conn) Write(b []byte) (int, error) {
	c.once.Do(c.settle)
	if c.err != nil {
		return 0, c.err
	}
	return c.inner.Write(b)
}

// Close closes the connection; it may be called while another goroutine
// settles it, which then fails.
func (c *Conn) Close() error {
	if tc := c.tls.Load(); tc != nil {
		return tc.Close()
	}
	return c.raw.Close()
}

// IsTLS reports whether the connection completed a TLS handshake.
func (c *Conn) IsTLS() bool { return c.secured.Load() != nil }

// Version names the TLS version negotiated, "" before the handshake has
// succeeded.
func (c *Conn) Version() string {
	tc := c.secured.Load()
	if tc == nil {
		return ""
	}
	return tls.VersionName(tc.ConnectionState().Version)
}

func (c *Conn) LocalAddr() net.Addr                { return c.raw.LocalAddr() }
func (c *Conn) RemoteAddr() net.Addr               { return c.raw.RemoteAddr() }
func (c *Conn) SetDeadline(t time.Time) error      { return c.raw.SetDeadline(t) }
func (c *Conn) SetReadDeadline(t time.Time) error  { return c.raw.SetReadDeadline(t) }
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.raw.SetWriteDeadline(t) }

// prefixConn gives back the byte read to tell TLS from plain before reading
// on.
type prefixConn struct {
	net.Conn
	first []byte
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.first) > 0 && len(b) > 0 {
		n := copy(b, p.first)
		p.first = p.first[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}
