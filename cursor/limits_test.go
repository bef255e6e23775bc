package cursor

import "testing"

// A client's shares of the cursors follow the server's bounds unless
// set: lowering --max-cursors alone must not let one client take all.
func TestCursorLimitShares(t *testing.T) {
	for _, tc := range []struct {
		in, want Limits
	}{
		{Limits{}, Limits{Total: 10_000, PerConn: 1_000, Memory: 100 << 20, PerClient: 2_500, MemoryPerClient: 50 << 20}},
		{Limits{Total: 400, Memory: 8 << 20}, Limits{Total: 400, PerConn: 1_000, Memory: 8 << 20, PerClient: 100, MemoryPerClient: 4 << 20}},
		{Limits{Total: -1, Memory: -1}, Limits{Total: -1, PerConn: 1_000, Memory: -1, PerClient: 2_500, MemoryPerClient: 50 << 20}},
		{Limits{Total: 400, PerClient: -1}, Limits{Total: 400, PerConn: 1_000, Memory: 100 << 20, PerClient: -1, MemoryPerClient: 50 << 20}},
	} {
		got := tc.in
		got.SetDefaults()
		if got != tc.want {
			t.Errorf("%+v: %+v, want %+v", tc.in, got, tc.want)
		}
	}
}
