package server

import "testing"

// A client without a user is its address; an IPv6 client its /64, which
// one host commonly holds whole, so that it cannot take a share per
// address.
func TestAddressClient(t *testing.T) {
	for _, tc := range []struct{ host, want string }{
		{"127.0.0.2", "127.0.0.2"},
		{"10.1.2.3", "10.1.2.3"},
		{"::1", "::1"},
		{"2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64"},
		{"2001:db8:1:2::1", "2001:db8:1:2::/64"},
		{"::ffff:10.1.2.3", "::ffff:10.1.2.3"},
		{"not-an-ip", "not-an-ip"},
	} {
		if got := addressClient(tc.host); got != tc.want {
			t.Errorf("addressClient(%q) = %q, want %q", tc.host, got, tc.want)
		}
	}
}
