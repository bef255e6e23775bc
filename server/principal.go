package server

// Whom a connection's sessions and cursors are charged to. Sessions and
// open cursors outlive the connections that made them, so a bound per
// connection does not stop one client from filling a server-wide table by
// opening, leaving and reconnecting. Each client is bounded instead, below
// the server-wide bound, so that no one client can take all of it: with
// access control a client is its authenticated user, whichever
// connections and hosts it comes from; without, it is the address it
// connects from (an IPv6 client by its /64, which one host commonly holds
// whole).

import (
	"net"
)

// principal names the connection's client as the bounds count it, in a
// form fit for an error message: "user app@admin" or "client 10.1.2.3".
func (c *Conn) principal() string {
	if c.userName() != "" {
		return c.owner.client
	}
	if c.owner.addr == "" {
		c.owner.addr = "client " + addressClient(c.remoteHost())
	}
	return c.owner.addr
}

// addressClient is the part of a client's IP address that names it: all
// of an IPv4 address, the /64 prefix of an IPv6 one but a loopback.
func addressClient(host string) string {
	ip := net.ParseIP(host)
	if ip == nil || ip.To4() != nil || ip.IsLoopback() {
		return host
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}
