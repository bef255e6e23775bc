package integration

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/kv/tikvkv"
	"github.com/lethedb/lethe/server"
)

// testLease is the roster lease of the servers of a test cluster: short,
// so that a killed server's lease runs out within a test.
const testLease = 2 * time.Second

// startCluster starts n Lethe servers in this process over one TiKV mock
// cluster, as n stateless front-ends of one deployment, sharing one manual
// clock (expiry; their leases run on the store's time). Each has a client
// of its own; all shut down when the test ends.
func startCluster(t *testing.T, n int) []*testServer {
	t.Helper()
	mock, err := tikvkv.NewMockCluster(tikvkv.FamilySplits("")...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mock.Close() })
	clk := clock.NewManual(testEpoch)
	var out []*testServer
	for i := 0; i < n; i++ {
		core, logs := observer.New(zapcore.InfoLevel)
		ts := &testServer{Clock: clk, Dir: t.TempDir(), Logs: logs, mock: mock}
		ts.cfg = server.Config{
			Listen:      "127.0.0.1:0",
			DataDir:     ts.Dir,
			Logger:      zap.New(core),
			Clock:       clk,
			ManualClock: true,
			MemberLease: testLease,
			CmdLine:     []string{"lethe", "--test"},
		}
		ts.start(t)
		t.Cleanup(func() { ts.stop(t) })
		out = append(out, ts)
	}
	return out
}

// manyServersTests are TestManyServers' subtests, each in the file of
// what it checks.
var manyServersTests = []struct {
	name string
	run  func(*testing.T)
}{
	{"Roster", testManyServersRoster},
	{"Catalog", testManyServersCatalog},
	{"IndexBuild", testManyServersIndexBuild},
	{"ConcurrentUnique", testManyServersConcurrentUnique},
	{"KillMidLoad", testManyServersKillMidLoad},
	{"TTLSameInstant", testManyServersTTLSameInstant},
	{"TTLPurgedOnce", testManyServersTTLPurgedOnce},
	{"TTLTakeOver", testManyServersTTLTakeOver},
	{"RetryableWrites", testManyServersRetryableWrites},
	{"Transactions", testManyServersTransactions},
	{"SessionEndedElsewhere", testManyServersSessionEndedElsewhere},
	{"ConcurrentRetries", testManyServersConcurrentRetries},
	{"ChangeStreamOrder", testManyServersChangeStreamOrder},
	{"ChangeStreamResume", testManyServersChangeStreamResume},
	{"ChangeStreamTTL", testManyServersChangeStreamTTL},
	{"Hello", testManyServersHello},
	{"DriverTopology", testManyServersDriverTopology},
	{"Cursors", testManyServersCursors},
	{"RetryElsewhere", testManyServersRetryElsewhere},
	{"Clients", testManyServersClients},
	{"PinnedServerDies", testManyServersPinnedServerDies},
	{"Advertise", testManyServersAdvertise},
}

// TestManyServers runs three servers over one store, with clients on each
// (issue 22): each subtest starts its own cluster.
func TestManyServers(t *testing.T) {
	for _, tc := range manyServersTests {
		t.Run(tc.name, tc.run)
	}
}

// testManyServersRoster: every server's roster lists all three at the
// addresses they listen on.
func testManyServersRoster(t *testing.T) {
	servers := startCluster(t, 3)
	for i, ts := range servers {
		recs, err := ts.Srv.Members(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		addrs := map[string]bool{}
		for _, r := range recs {
			addrs[r.Addr] = true
		}
		for j, other := range servers {
			if !addrs[other.Srv.Addr().String()] {
				t.Errorf("server %d's roster %v lacks server %d at %s", i, recs, j, other.Srv.Addr())
			}
		}
	}
}
