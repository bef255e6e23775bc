package integration

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/lethedb/lethe/server"
	"github.com/lethedb/lethe/wire"
)

// cmdError runs cmd on db, expecting it to fail, and returns the error.
func cmdError(t *testing.T, client *mongo.Client, db string, cmd bson.D) mongo.CommandError {
	t.Helper()
	_, err := client.Database(db).RunCommand(testCtx(t), cmd).Raw()
	var ce mongo.CommandError
	if !errors.As(err, &ce) {
		t.Fatalf("%v: got %v, want a command error", cmd, err)
	}
	return ce
}

// wantError checks a command error's code and code name.
func wantError(t *testing.T, ce mongo.CommandError, code int32, name string) {
	t.Helper()
	if ce.Code != code || ce.Name != name {
		t.Errorf("error %d %s %q, want code %d %s", ce.Code, ce.Name, ce.Message, code, name)
	}
}

func lookup(t *testing.T, doc bson.Raw, path ...string) bson.RawValue {
	t.Helper()
	v, err := doc.LookupErr(path...)
	if err != nil {
		t.Fatalf("%s not in %s", strings.Join(path, "."), doc)
	}
	return v
}

func TestPingBuildInfoHello(t *testing.T) {
	ts := startServer(t)
	if err := ts.Client.Ping(testCtx(t), nil); err != nil {
		t.Fatalf("ping: %v", err)
	}

	info := run(t, ts.Client.Database("admin"), bson.D{{Key: "buildInfo", Value: 1}})
	if v := lookup(t, info, "version").StringValue(); v != "7.0.0" {
		t.Errorf("buildInfo.version = %q", v)
	}
	if v := lookup(t, info, "lethe", "version").StringValue(); v != server.Version {
		t.Errorf("buildInfo.lethe.version = %q, want %q", v, server.Version)
	}
	var arr []int32
	if err := lookup(t, info, "versionArray").Unmarshal(&arr); err != nil || !slices.Equal(arr, []int32{7, 0, 0, 0}) {
		t.Errorf("versionArray = %v (%v)", arr, err)
	}

	hello := run(t, ts.Client.Database("test"), bson.D{{Key: "hello", Value: 1}})
	for field, want := range map[string]int32{
		"maxBsonObjectSize": 16777216, "maxMessageSizeBytes": 48000000, "maxWriteBatchSize": 100000,
		"minWireVersion": 0, "maxWireVersion": 21, "logicalSessionTimeoutMinutes": 30,
	} {
		if got := lookup(t, hello, field).AsInt64(); got != int64(want) {
			t.Errorf("hello.%s = %d, want %d", field, got, want)
		}
	}
	if !lookup(t, hello, "isWritablePrimary").Boolean() || lookup(t, hello, "readOnly").Boolean() {
		t.Errorf("hello = %s", hello)
	}
	if got := lookup(t, hello, "localTime").Time(); !got.Equal(testEpoch) {
		t.Errorf("hello.localTime = %v, want the manual clock's %v", got, testEpoch)
	}
	lookup(t, hello, "connectionId")

	legacy := run(t, ts.Client.Database("admin"), bson.D{{Key: "isMaster", Value: 1}, {Key: "helloOk", Value: true}})
	if !lookup(t, legacy, "ismaster").Boolean() || !lookup(t, legacy, "helloOk").Boolean() {
		t.Errorf("isMaster = %s", legacy)
	}
	if _, err := legacy.LookupErr("isWritablePrimary"); err == nil {
		t.Errorf("isMaster reply has isWritablePrimary: %s", legacy)
	}
}

// TestCompression checks that each compressor is negotiated and really used
// in both directions, through serverStatus.network.compression, which counts
// the bytes through each compressor.
func TestCompression(t *testing.T) {
	for _, name := range []string{"none", "snappy", "zlib", "zstd"} {
		t.Run("compressor="+name, func(t *testing.T) {
			ts := startServer(t)
			opts := options.Client()
			if name != "none" {
				opts.SetCompressors([]string{name})
			}
			client := ts.NewClient(t, opts)
			if err := client.Ping(testCtx(t), nil); err != nil {
				t.Fatalf("ping: %v", err)
			}
			run(t, client.Database("admin"), bson.D{{Key: "buildInfo", Value: 1}})
			run(t, client.Database("admin"), bson.D{{Key: "hello", Value: 1}})
			status := run(t, client.Database("admin"), bson.D{{Key: "serverStatus", Value: 1}})
			for _, c := range []string{"snappy", "zlib", "zstd"} {
				for _, dir := range []string{"compressor", "decompressor"} {
					n := lookup(t, status, "network", "compression", c, dir, "bytesIn").AsInt64()
					if c == name && n == 0 {
						t.Errorf("%s.%s.bytesIn = 0: compression not used", c, dir)
					}
					if c != name && n != 0 {
						t.Errorf("%s.%s.bytesIn = %d, want 0", c, dir, n)
					}
				}
			}
		})
	}
}

// TestCompressionNegotiation speaks the protocol by hand: hello keeps the
// offered compressors the server has, in the client's order, and a reply is
// compressed exactly when its request was, with a negotiated compressor.
func TestCompressionNegotiation(t *testing.T) {
	ts := startServer(t)
	c := dialRaw(t, ts)
	hello := c.command(bson.D{{Key: "hello", Value: 1}, {Key: "compression", Value: bson.A{"lz4", "zstd", "snappy"}}, {Key: "$db", Value: "admin"}})
	var got []string
	if err := lookup(t, hello, "compression").Unmarshal(&got); err != nil || !slices.Equal(got, []string{"zstd", "snappy"}) {
		t.Fatalf("compression = %v (%v), want [zstd snappy]", got, err)
	}

	ping := c.msgFrame(bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}})
	for _, tc := range []struct {
		comp       wire.Compressor
		compressed bool
	}{
		{wire.CompressorZstd, true},
		{wire.CompressorSnappy, true},
		{wire.CompressorZlib, false}, // not negotiated: the reply goes plain
	} {
		frame, err := wire.Compress(ping, tc.comp)
		if err != nil {
			t.Fatal(err)
		}
		c.send(frame)
		m := c.receive()
		if got := m.Compressor != wire.CompressorNoop; got != tc.compressed || (got && m.Compressor != tc.comp) {
			t.Errorf("request with %s: reply compressor %s", tc.comp, m.Compressor)
		}
		if ok := lookup(t, bson.Raw(m.Msg.Body), "ok").AsFloat64(); ok != 1 {
			t.Errorf("request with %s: reply %s", tc.comp, bson.Raw(m.Msg.Body))
		}
	}
}

// TestLegacyHello sends isMaster as OP_QUERY, as drivers do before they know
// the server speaks OP_MSG, and any other command that way, which MongoDB
// refuses.
func TestLegacyHello(t *testing.T) {
	ts := startServer(t)
	c := dialRaw(t, ts)
	query := func(ns string, cmd bson.D) bson.Raw {
		t.Helper()
		c.nextID++
		c.send(wire.AppendQuery(nil, c.nextID, 0, &wire.Query{FullCollectionName: ns, NumberToReturn: -1, Query: marshalDoc(t, cmd)}))
		m := c.receive()
		if m.Reply == nil || len(m.Reply.Documents) != 1 || m.Header.ResponseTo != c.nextID {
			t.Fatalf("reply to OP_QUERY: %+v", m)
		}
		return bson.Raw(m.Reply.Documents[0])
	}
	reply := query("admin.$cmd", bson.D{{Key: "isMaster", Value: 1}, {Key: "client", Value: bson.D{{Key: "driver", Value: bson.D{{Key: "name", Value: "test"}}}}}})
	if !lookup(t, reply, "ismaster").Boolean() || lookup(t, reply, "maxWireVersion").AsInt64() != 21 {
		t.Errorf("isMaster over OP_QUERY = %s", reply)
	}
	reply = query("admin.$cmd", bson.D{{Key: "$query", Value: bson.D{{Key: "ismaster", Value: 1}}}, {Key: "$readPreference", Value: bson.D{{Key: "mode", Value: "primary"}}}})
	if !lookup(t, reply, "ismaster").Boolean() {
		t.Errorf("wrapped ismaster over OP_QUERY = %s", reply)
	}
	reply = query("admin.$cmd", bson.D{{Key: "ping", Value: 1}})
	if code := lookup(t, reply, "code").AsInt64(); code != 352 {
		t.Errorf("ping over OP_QUERY = %s, want code 352", reply)
	}
	// The connection goes on with OP_MSG.
	if ok := lookup(t, c.command(bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}}), "ok").AsFloat64(); ok != 1 {
		t.Error("ping over OP_MSG after the legacy hello failed")
	}
}

func TestCommandErrors(t *testing.T) {
	ts := startServer(t)

	ce := cmdError(t, ts.Client, "test", bson.D{{Key: "noSuchThing", Value: 1}})
	wantError(t, ce, 59, "CommandNotFound")
	if ce.Message != "no such command: 'noSuchThing'" {
		t.Errorf("message %q", ce.Message)
	}
	// atlasVersion is how shells tell Atlas apart; it must not exist here.
	wantError(t, cmdError(t, ts.Client, "admin", bson.D{{Key: "atlasVersion", Value: 1}}), 59, "CommandNotFound")

	ce = cmdError(t, ts.Client, "admin", bson.D{{Key: "hello", Value: 1}, {Key: "compression", Value: "snappy"}})
	wantError(t, ce, 14, "TypeMismatch")
	if want := "BSON field 'hello.compression' is the wrong type 'string', expected type 'array'"; ce.Message != want {
		t.Errorf("message %q, want %q", ce.Message, want)
	}
	wantError(t, cmdError(t, ts.Client, "admin", bson.D{{Key: "endSessions", Value: 1}}), 14, "TypeMismatch")
	wantError(t, cmdError(t, ts.Client, "admin", bson.D{{Key: "getLog", Value: 1}}), 14, "TypeMismatch")
	wantError(t, cmdError(t, ts.Client, "admin", bson.D{{Key: "getParameter", Value: bson.D{{Key: "bogus", Value: true}}}}), 40415, "Location40415")
	wantError(t, cmdError(t, ts.Client, "admin", bson.D{{Key: "ping", Value: 1}, {Key: "maxTimeMS", Value: "soon"}}), 2, "BadValue")

	ce = cmdError(t, ts.Client, "test", bson.D{{Key: "getCmdLineOpts", Value: 1}})
	wantError(t, ce, 13, "Unauthorized")
	if want := "getCmdLineOpts may only be run against the admin database."; ce.Message != want {
		t.Errorf("message %q, want %q", ce.Message, want)
	}

	// Generic arguments every driver may send are accepted anywhere.
	run(t, ts.Client.Database("test"), bson.D{
		{Key: "ping", Value: 1}, {Key: "comment", Value: "hi"}, {Key: "maxTimeMS", Value: 1000},
		{Key: "readConcern", Value: bson.D{{Key: "level", Value: "local"}}}, {Key: "apiVersion", Value: "1"},
	})
}

// TestMissingDB sends an OP_MSG without $db, which MongoDB refuses.
func TestMissingDB(t *testing.T) {
	ts := startServer(t)
	c := dialRaw(t, ts)
	reply := c.command(bson.D{{Key: "ping", Value: 1}})
	if code := lookup(t, reply, "code").AsInt64(); code != 40571 {
		t.Errorf("reply %s, want code 40571", reply)
	}
}

func TestAdminCommands(t *testing.T) {
	ts := startServer(t)
	admin := func(cmd bson.D) bson.Raw { t.Helper(); return run(t, ts.Client.Database("admin"), cmd) }

	fcv := admin(bson.D{{Key: "getParameter", Value: 1}, {Key: "featureCompatibilityVersion", Value: 1}})
	if v := lookup(t, fcv, "featureCompatibilityVersion", "version").StringValue(); v != "7.0" {
		t.Errorf("featureCompatibilityVersion = %q", v)
	}
	all := admin(bson.D{{Key: "getParameter", Value: "*"}})
	lookup(t, all, "featureCompatibilityVersion")
	lookup(t, all, "logLevel")
	details := admin(bson.D{{Key: "getParameter", Value: bson.D{{Key: "showDetails", Value: true}}}, {Key: "logLevel", Value: 1}})
	lookup(t, details, "logLevel", "settableAtRuntime")
	wantError(t, cmdError(t, ts.Client, "admin", bson.D{{Key: "getParameter", Value: 1}, {Key: "noSuchParameter", Value: 1}}), 72, "InvalidOptions")
	wantError(t, cmdError(t, ts.Client, "admin", bson.D{{Key: "setParameter", Value: 1}, {Key: "noSuchParameter", Value: 1}}), 72, "InvalidOptions")

	opts := admin(bson.D{{Key: "getCmdLineOpts", Value: 1}})
	var argv []string
	if err := lookup(t, opts, "argv").Unmarshal(&argv); err != nil || !slices.Equal(argv, []string{"lethe", "--test"}) {
		t.Errorf("argv = %v (%v)", argv, err)
	}
	if dir := lookup(t, opts, "parsed", "storage", "dbPath").StringValue(); dir != ts.Dir {
		t.Errorf("parsed.storage.dbPath = %q", dir)
	}

	var names []string
	if err := lookup(t, admin(bson.D{{Key: "getLog", Value: "*"}}), "names").Unmarshal(&names); err != nil || !slices.Equal(names, []string{"global", "startupWarnings"}) {
		t.Errorf("getLog * names = %v (%v)", names, err)
	}
	warnings := admin(bson.D{{Key: "getLog", Value: "startupWarnings"}})
	if !strings.Contains(lookup(t, warnings, "log").String(), "clock is manual") {
		t.Errorf("startupWarnings lacks the manual clock warning: %s", warnings)
	}
	global := admin(bson.D{{Key: "getLog", Value: "global"}})
	if !strings.Contains(lookup(t, global, "log").String(), "connection accepted") || lookup(t, global, "totalLinesWritten").AsInt64() == 0 {
		t.Errorf("getLog global = %s", global)
	}
	wantError(t, cmdError(t, ts.Client, "admin", bson.D{{Key: "getLog", Value: "nope"}}), 96, "OperationFailed")

	status := admin(bson.D{{Key: "serverStatus", Value: 1}})
	if p := lookup(t, status, "process").StringValue(); p != "lethe" {
		t.Errorf("serverStatus.process = %q", p)
	}
	if cur := lookup(t, status, "connections", "current").AsInt64(); cur < 1 {
		t.Errorf("connections.current = %d", cur)
	}
	if n := lookup(t, status, "opcounters", "command").AsInt64(); n < 3 {
		t.Errorf("opcounters.command = %d", n)
	}
	if got := lookup(t, status, "localTime").Time(); !got.Equal(testEpoch) {
		t.Errorf("localTime = %v", got)
	}
	lookup(t, status, "metrics", "ttl")
	lookup(t, status, "mem", "bits")
	noMetrics := admin(bson.D{{Key: "serverStatus", Value: 1}, {Key: "metrics", Value: 0}})
	if _, err := noMetrics.LookupErr("metrics"); err == nil {
		t.Errorf("serverStatus with metrics: 0 still has metrics")
	}

	if you := lookup(t, admin(bson.D{{Key: "whatsmyuri", Value: 1}}), "you").StringValue(); !strings.HasPrefix(you, "127.0.0.1:") {
		t.Errorf("whatsmyuri = %q", you)
	}
	lookup(t, admin(bson.D{{Key: "connectionStatus", Value: 1}}), "authInfo", "authenticatedUsers")
	lookup(t, admin(bson.D{{Key: "hostInfo", Value: 1}}), "system", "numCores")
	lookup(t, admin(bson.D{{Key: "listCommands", Value: 1}}), "commands", "serverStatus")
	admin(bson.D{{Key: "getFreeMonitoringStatus", Value: 1}})
	admin(bson.D{{Key: "logout", Value: 1}})
}

func TestSessions(t *testing.T) {
	ts := startServer(t)
	reply := run(t, ts.Client.Database("admin"), bson.D{{Key: "startSession", Value: 1}})
	sub, data := lookup(t, reply, "id", "id").Binary()
	if sub != bson.TypeBinaryUUID || len(data) != 16 {
		t.Errorf("startSession id = %s", reply)
	}
	if m := lookup(t, reply, "timeoutMinutes").AsInt64(); m != 30 {
		t.Errorf("timeoutMinutes = %d", m)
	}
	session := bson.D{{Key: "id", Value: bson.Binary{Subtype: sub, Data: data}}}
	for _, cmd := range []string{"refreshSessions", "endSessions", "killSessions"} {
		run(t, ts.Client.Database("admin"), bson.D{{Key: cmd, Value: bson.A{session}}})
	}
	// killAllSessions names users, not sessions.
	run(t, ts.Client.Database("admin"), bson.D{{Key: "killAllSessions", Value: bson.A{bson.D{{Key: "user", Value: ""}, {Key: "db", Value: ""}}}}})

	// A driver session attaches lsid to every command.
	s, err := ts.Client.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.EndSession(testCtx(t))
	err = mongo.WithSession(testCtx(t), s, func(ctx context.Context) error {
		return ts.Client.Database("test").RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err()
	})
	if err != nil {
		t.Errorf("ping in a session: %v", err)
	}
}

// TestSetLogLevel turns debug logging on and off at run time.
func TestSetLogLevel(t *testing.T) {
	level := zap.NewAtomicLevelAt(zapcore.InfoLevel)
	ts := startServer(t, func(c *server.Config) { c.LogLevel = &level })
	was := run(t, ts.Client.Database("admin"), bson.D{{Key: "setParameter", Value: 1}, {Key: "logLevel", Value: 1}})
	if lookup(t, was, "was").AsInt64() != 0 || level.Level() != zapcore.DebugLevel {
		t.Errorf("setParameter logLevel 1: reply %s, level %v", was, level.Level())
	}
	wantError(t, cmdError(t, ts.Client, "admin", bson.D{{Key: "setParameter", Value: 1}, {Key: "logLevel", Value: 9}}), 2, "BadValue")
	run(t, ts.Client.Database("admin"), bson.D{{Key: "setParameter", Value: 1}, {Key: "logLevel", Value: 0}})
	if level.Level() != zapcore.InfoLevel {
		t.Errorf("level %v after logLevel 0", level.Level())
	}
}

// TestRestart checks the harness: the server comes back on the same
// directory and clock.
func TestRestart(t *testing.T) {
	ts := startServer(t)
	ts.Clock.Advance(time.Hour)
	old := ts.URI
	ts.Restart(t)
	if ts.URI == old {
		t.Logf("restarted on the same address %s", old)
	}
	hello := run(t, ts.Client.Database("admin"), bson.D{{Key: "hello", Value: 1}})
	if got := lookup(t, hello, "localTime").Time(); !got.Equal(testEpoch.Add(time.Hour)) {
		t.Errorf("localTime after restart = %v", got)
	}
}
