package server

import (
	"context"
	"math"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/diag"
	"github.com/lethedb/lethe/mongoerr"
)

func (s *Server) adminCommands() []commandDef {
	return []commandDef{
		{name: "ping", handle: noop},
		{name: "buildInfo", aliases: []string{"buildinfo"}, handle: s.buildInfo},
		{name: "getCmdLineOpts", handle: s.getCmdLineOpts, adminOnly: true},
		{name: "getLog", handle: s.getLog, adminOnly: true},
		{name: "hostInfo", handle: s.hostInfo},
		{name: "whatsmyuri", handle: whatsMyURI},
		{name: "serverStatus", handle: s.serverStatus},
		{name: "listCommands", handle: s.listCommands},
		{name: "getFreeMonitoringStatus", handle: freeMonitoringStatus, adminOnly: true},
	}
}

func (s *Server) buildInfo(context.Context, *Request) (bson.Raw, error) {
	return command.OK(
		bson.E{Key: "version", Value: mongoVersion},
		bson.E{Key: "gitVersion", Value: gitVersion()},
		bson.E{Key: "modules", Value: bson.A{}},
		bson.E{Key: "allocator", Value: "system"},
		bson.E{Key: "javascriptEngine", Value: "none"},
		bson.E{Key: "sysInfo", Value: "deprecated"},
		bson.E{Key: "versionArray", Value: bson.A{int32(7), int32(0), int32(0), int32(0)}},
		bson.E{Key: "bits", Value: int32(64)},
		bson.E{Key: "debug", Value: false},
		bson.E{Key: "maxBsonObjectSize", Value: int32(maxBSONObjectSize)},
		bson.E{Key: "buildEnvironment", Value: buildEnvironment()},
		bson.E{Key: "storageEngines", Value: bson.A{"lethe"}},
		bson.E{Key: "lethe", Value: bson.D{{Key: "version", Value: Version}}},
	)
}

// gitVersion is the commit the binary was built from, when the build
// recorded it.
func gitVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, kv := range info.Settings {
			if kv.Key == "vcs.revision" {
				return kv.Value
			}
		}
	}
	return "unknown"
}

// getCmdLineOpts reports the command line and, as "parsed", the settings it
// gave in MongoDB's configuration layout, which tools read.
func (s *Server) getCmdLineOpts(context.Context, *Request) (bson.Raw, error) {
	argv := bson.A{}
	for _, a := range s.cfg.CmdLine {
		argv = append(argv, a)
	}
	netOpts := bson.D{}
	if host, port, err := net.SplitHostPort(s.cfg.Listen); err == nil {
		netOpts = append(netOpts, bson.E{Key: "bindIp", Value: host})
		if n, err := strconv.Atoi(port); err == nil {
			netOpts = append(netOpts, bson.E{Key: "port", Value: int32(n)})
		}
	}
	if s.cfg.MaxConns > 0 {
		netOpts = append(netOpts, bson.E{Key: "maxIncomingConnections", Value: int32(s.cfg.MaxConns)})
	}
	parsed := bson.D{
		{Key: "net", Value: netOpts},
		{Key: "storage", Value: bson.D{{Key: "dbPath", Value: s.cfg.DataDir}}},
	}
	if s.rs != nil {
		parsed = append(parsed, bson.E{Key: "replication", Value: bson.D{{Key: "replSet", Value: s.rs.Name()}}})
	}
	return command.OK(
		bson.E{Key: "argv", Value: argv},
		bson.E{Key: "parsed", Value: parsed},
	)
}

// getLog returns recent log lines ("global"), the warnings logged while
// starting ("startupWarnings"), or the names of both ("*").
func (s *Server) getLog(_ context.Context, req *Request) (bson.Raw, error) {
	v := req.Body.Index(0).Value()
	name, isString := v.StringValueOK()
	if !isString {
		return nil, command.WrongType("getLog", "getLog", v.Type, "string")
	}
	var lines []string
	var total int64
	switch name {
	case "*":
		return command.OK(bson.E{Key: "names", Value: bson.A{"global", "startupWarnings"}})
	case "global":
		lines, total = s.recent.Recent()
	case "startupWarnings":
		lines = s.recent.StartupWarnings()
		total = int64(len(lines))
	default:
		return nil, mongoerr.New(mongoerr.OperationFailed, "No log named '%s'", name)
	}
	log := make(bson.A, len(lines))
	for i, l := range lines {
		log[i] = l
	}
	return command.OK(bson.E{Key: "totalLinesWritten", Value: numberValue(total)}, bson.E{Key: "log", Value: log})
}

func (s *Server) hostInfo(context.Context, *Request) (bson.Raw, error) {
	hostname, _ := os.Hostname()
	system := bson.D{
		{Key: "currentTime", Value: s.clock.Now()},
		{Key: "hostname", Value: hostname},
		{Key: "cpuAddrSize", Value: int32(strconv.IntSize)},
		{Key: "numCores", Value: int32(runtime.NumCPU())},
		{Key: "cpuArch", Value: runtime.GOARCH},
		{Key: "numaEnabled", Value: false},
	}
	if total, ok := diag.MemTotalMB(); ok {
		system = append(system, bson.E{Key: "memSizeMB", Value: total}, bson.E{Key: "memLimitMB", Value: total})
	}
	return command.OK(
		bson.E{Key: "system", Value: system},
		bson.E{Key: "os", Value: bson.D{{Key: "type", Value: osType()}, {Key: "name", Value: runtime.GOOS}}},
		bson.E{Key: "extra", Value: bson.D{}},
	)
}

func whatsMyURI(_ context.Context, req *Request) (bson.Raw, error) {
	return command.OK(bson.E{Key: "you", Value: req.Conn.remote})
}

func freeMonitoringStatus(context.Context, *Request) (bson.Raw, error) {
	return command.OK(bson.E{Key: "state", Value: "disabled"})
}

// serverStatus reports the server's state. As in MongoDB, {section: 0} leaves
// a section out.
func (s *Server) serverStatus(_ context.Context, req *Request) (bson.Raw, error) {
	var skip []string
	for key, v := range command.Args(req.Body) {
		include, err := command.Bool("serverStatus", string(key), v)
		if err != nil {
			return nil, err
		}
		if !include {
			skip = append(skip, string(key))
		}
	}
	hostname, _ := os.Hostname()
	if addr, ok := s.Addr().(*net.TCPAddr); ok {
		hostname = net.JoinHostPort(hostname, strconv.Itoa(addr.Port))
	}
	now := s.clock.Now()
	uptime := time.Since(s.started)
	open := s.openConns()
	openCursors, cursorHeld := s.cursors.Usage()
	available := int64(math.MaxInt32) - int64(open)
	if limit := s.connLimit(); limit > 0 {
		available = int64(limit - open)
	}
	sections := []bson.E{
		{Key: "host", Value: hostname},
		{Key: "version", Value: mongoVersion},
		{Key: "process", Value: "lethe"},
		{Key: "pid", Value: int64(os.Getpid())},
		{Key: "uptime", Value: uptime.Seconds()},
		{Key: "uptimeMillis", Value: uptime.Milliseconds()},
		{Key: "uptimeEstimate", Value: int64(uptime.Seconds())},
		{Key: "localTime", Value: now},
		{Key: "connections", Value: bson.D{
			{Key: "current", Value: int32(open)},
			{Key: "available", Value: int32(available)},
			{Key: "totalCreated", Value: s.listener().Accepted()},
			{Key: "rejected", Value: s.listener().Rejected()},
			{Key: "awaitingTopologyChanges", Value: s.topo.awaiting.Load()},
		}},
		{Key: "network", Value: s.stats.Network()},
		{Key: "logicalSessionRecordCache", Value: bson.D{
			{Key: "activeSessionsCount", Value: int32(s.sessions.Len())},
		}},
		{Key: "opcounters", Value: s.stats.Opcounters()},
		{Key: "catalogStats", Value: s.catalog.Stats()},
		{Key: "mem", Value: diag.MemDoc()},
		{Key: "metrics", Value: bson.D{
			{Key: "cursor", Value: bson.D{{Key: "open", Value: bson.D{{Key: "total", Value: int64(openCursors)}}}}},
			{Key: "ttl", Value: s.expiry.Metrics()},
		}},
		// As mongod's section, with the backend --store chose.
		{Key: "storageEngine", Value: s.storageEngineSection()},
		{Key: "lethe", Value: s.letheSection(cursorHeld)},
	}
	if s.rs != nil {
		sections = append(sections, bson.E{Key: "repl", Value: s.replStatusSection()})
	}
	ts := s.txns.Stats()
	sections = append(sections, bson.E{Key: "transactions", Value: bson.D{
		{Key: "currentActive", Value: ts.CurrentActive},
		{Key: "currentInactive", Value: ts.CurrentInactive},
		{Key: "currentOpen", Value: ts.CurrentOpen},
		{Key: "totalAborted", Value: ts.TotalAborted},
		{Key: "totalCommitted", Value: ts.TotalCommitted},
		{Key: "totalStarted", Value: ts.TotalStarted},
	}})
	sections = append(sections, bson.E{Key: "security", Value: s.authz.statusSection()})
	kept := sections[:0]
	for _, e := range sections {
		if !slices.Contains(skip, e.Key) {
			kept = append(kept, e)
		}
	}
	return command.OK(kept...)
}

// listCommands lists the commands by name, with the properties drivers look
// at.
func (s *Server) listCommands(context.Context, *Request) (bson.Raw, error) {
	var names []string
	for key, c := range s.commands {
		if key == c.name {
			names = append(names, key)
		}
	}
	sort.Strings(names)
	cmds := make(bson.D, 0, len(names))
	for _, name := range names {
		cmds = append(cmds, bson.E{Key: name, Value: bson.D{
			{Key: "help", Value: ""},
			{Key: "requiresAuth", Value: s.requiresAuth(name)},
			{Key: "secondaryOk", Value: true},
			{Key: "adminOnly", Value: s.commands[name].adminOnly},
		}})
	}
	return command.OK(bson.E{Key: "commands", Value: cmds})
}

// numberValue is n as an int32 when it fits, as MongoDB reports counters.
func numberValue(n int64) any {
	if n >= math.MinInt32 && n <= math.MaxInt32 {
		return int32(n)
	}
	return n
}

// osType is the operating system's name as MongoDB spells it, "Linux".
func osType() string {
	return strings.ToUpper(runtime.GOOS[:1]) + runtime.GOOS[1:]
}

// buildEnvironment is buildInfo's description of how the binary was built,
// with mongod's field names; tools print it and some read target_os and
// target_arch. Lethe is built by the Go toolchain, named where mongod names
// its C++ compiler.
func buildEnvironment() bson.D {
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64", "386": "i386"}[runtime.GOARCH]
	if arch == "" {
		arch = runtime.GOARCH
	}
	return bson.D{
		{Key: "distmod", Value: ""},
		{Key: "distarch", Value: arch},
		{Key: "cc", Value: runtime.Version()},
		{Key: "ccflags", Value: ""},
		{Key: "cxx", Value: runtime.Version()},
		{Key: "cxxflags", Value: ""},
		{Key: "linkflags", Value: ""},
		{Key: "target_arch", Value: arch},
		{Key: "target_os", Value: strings.ToLower(runtime.GOOS)},
		{Key: "cppdefines", Value: ""},
	}
}

// letheSection is serverStatus's section of what only Lethe has.
func (s *Server) letheSection(cursorHeld int64) bson.D {
	d := bson.D{
		{Key: "version", Value: Version},
		// Bytes of results open cursors hold, against --max-cursor-memory-mib.
		{Key: "cursorMemory", Value: cursorHeld},
	}
	// The block cache of an embedded store: whether what reads touch fits
	// in --cache-size-mb (a miss reads the block from the file).
	if c, ok := s.eng.CacheStats(); ok {
		d = append(d, bson.E{Key: "blockCache", Value: bson.D{
			{Key: "maxBytes", Value: c.Capacity},
			{Key: "bytes", Value: c.Size},
			{Key: "hits", Value: c.Hits},
			{Key: "misses", Value: c.Misses},
		}})
	}
	return d
}

// storageEngineSection is serverStatus's storageEngine: the kv backend
// (pebble, tikv or tikv-mock) in mongod's shape.
func (s *Server) storageEngineSection() bson.D {
	name, persistent, readOnly := s.eng.StorageEngine()
	return bson.D{
		{Key: "name", Value: name},
		{Key: "supportsCommittedReads", Value: true},
		{Key: "supportsSnapshotReadConcern", Value: true},
		{Key: "readOnly", Value: readOnly},
		{Key: "persistent", Value: persistent},
	}
}
