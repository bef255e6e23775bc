package conn

import (
	"go.uber.org/zap"

	"github.com/lethedb/lethe/tlsnet"
)

// IsTLS reports whether the client connected over TLS. It is settled once
// the connection's first request has been read.
func (c *Conn) IsTLS() bool {
	tc, ok := c.nc.(*tlsnet.Conn)
	return ok && tc.IsTLS()
}

// PeerSubject is the subject of the certificate the client presented and
// the server verified, as MONGODB-X509 names users in $external; false
// without one.
func (c *Conn) PeerSubject() (string, bool) {
	return tlsnet.PeerSubject(c.nc)
}

// logTLS records, once a connection's first bytes have arrived, that it is
// TLS and whose certificate it presented.
func (c *Conn) logTLS() {
	tc, ok := c.nc.(*tlsnet.Conn)
	if !ok || !tc.IsTLS() {
		return
	}
	fields := []zap.Field{zap.Int64("conn", c.id), zap.String("remote", c.remote), zap.String("tlsVersion", tc.Version())}
	if subject, ok := c.PeerSubject(); ok {
		fields = append(fields, zap.String("peerSubject", subject))
	}
	c.l.log.Info("accepted TLS connection", fields...)
}
