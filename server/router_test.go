package server

import (
	"net"
	"os"
	"strings"
	"testing"
)

// TestAdvertised: the address a server names itself by is the one
// configured, else the one listened on, with the host name in place of an
// unspecified IP.
func TestAdvertised(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skip(err)
	}
	for _, c := range []struct {
		configured string
		ln         net.Addr
		want       string
	}{
		{"db1.example:27017", &net.TCPAddr{IP: net.IPv4zero, Port: 27017}, "db1.example:27017"},
		{"", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 27018}, "127.0.0.1:27018"},
		{"", &net.TCPAddr{IP: net.IPv4zero, Port: 27019}, net.JoinHostPort(host, "27019")},
		{"", &net.TCPAddr{IP: net.IPv6unspecified, Port: 27020}, net.JoinHostPort(host, "27020")},
	} {
		if got := advertised(c.configured, c.ln); got != c.want || strings.HasPrefix(got, "0.0.0.0") {
			t.Errorf("advertised(%q, %v) = %q, want %q", c.configured, c.ln, got, c.want)
		}
	}
}
