package integration

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestFailPointAppNameMatchesHandshake checks that failCommand filtered by
// appName fires on a connection's first hello, whose client metadata names
// the application, as mongod's does: the drivers' specification tests
// (SDAM "hello-network-error", CMAP handshake errors) configure failCommand
// on hello with appName to fail exactly that handshake.
func TestFailPointAppNameMatchesHandshake(t *testing.T) {
	ts := startServer(t, withTestCommands())
	ctx := testCtx(t)
	setFailPoint(t, ts, bson.D{{Key: "failCommands", Value: bson.A{"hello", "isMaster"}}, {Key: "appName", Value: "handshakeApp"},
		{Key: "errorCode", Value: 91}}, bson.D{{Key: "times", Value: 1}})
	// Polling with a long interval: after its handshake the monitor sends
	// no other hello during the test, so only handshakes can match.
	client := ts.NewClient(t, options.Client().SetAppName("handshakeApp").
		SetServerMonitoringMode(options.ServerMonitoringModePoll).SetHeartbeatInterval(time.Minute))
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	// The first handshake fails (the monitor's or the pool's); the driver
	// reconnects, so the ping may or may not see it.
	_ = client.Ping(pingCtx, nil)
	if n := setFailPoint(t, ts, bson.D{}, "off"); n != 1 {
		t.Errorf("failCommand fired %d times on handshakes of appName handshakeApp, want 1", n)
	}
	// Another application's handshakes never matched.
	setFailPoint(t, ts, bson.D{{Key: "failCommands", Value: bson.A{"hello", "isMaster"}}, {Key: "appName", Value: "handshakeApp"},
		{Key: "errorCode", Value: 91}}, "alwaysOn")
	other := ts.NewClient(t, options.Client().SetAppName("other"))
	if err := other.Ping(ctx, nil); err != nil {
		t.Errorf("ping of another application: %v", err)
	}
	setFailPoint(t, ts, bson.D{}, "off")
}
