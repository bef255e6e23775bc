// Command lethe runs the Lethe server: a MongoDB wire-protocol compatible
// document server with time-to-live at its heart.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/lethedb/lethe/auth"
	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/kv/pebblekv"
	"github.com/lethedb/lethe/engine/kv/tikvkv"
	"github.com/lethedb/lethe/server"
	"github.com/lethedb/lethe/session"
)

// shutdownGrace is how long in-flight requests get to finish after SIGINT or
// SIGTERM before their connections are cut.
const shutdownGrace = 30 * time.Second

func main() {
	if err := run(os.Args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "lethe:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("lethe", flag.ContinueOnError)
	fs.Usage = func() { usage(fs) }
	listen := fs.String("listen", "127.0.0.1:27017", "address to serve the MongoDB protocol on, host:port; beyond loopback it needs --auth or --insecure-no-auth-remote")
	authOn := fs.Bool("auth", false, "turn on access control (mongod's --auth): clients must authenticate")
	insecureRemote := fs.Bool("insecure-no-auth-remote", false, "allow --listen on a non-loopback address without --auth, so that anyone who reaches it may read, change and drop every database")
	tlsf := tlsFlags{
		certFile: fs.String("tls-cert-file", "", "PEM file of the server's TLS certificate chain"),
		keyFile:  fs.String("tls-key-file", "", "PEM file of the TLS certificate's private key"),
		caFile:   fs.String("tls-ca-file", "", "PEM file of the authorities client certificates must be signed by; clients must then present one"),
		mode: fs.String("tls-mode", "disabled", "TLS on the --listen port, as mongod's --tlsMode: disabled; allow or prefer (TLS and plain connections); require (TLS only). "+
			"SIGHUP reloads the certificate, key and CA files"),
		allowWithoutCert: fs.Bool("tls-allow-connections-without-certificates", false,
			"with --tls-ca-file, let clients connect without a certificate (one presented is still verified)"),
	}
	storeFlag := fs.String("store", "pebble", storeHelp)
	pdFlag := fs.String("pd", "", "with --store tikv, the cluster's PD endpoints, `HOST:PORT,...`")
	storePrefix := fs.String("store-prefix", tikvkv.DefaultPrefix, "with a tikv store, the prefix of every key this deployment writes, so that several share one cluster")
	dataDir := fs.String("data-dir", "./data", "directory of the pebble store; created if missing")
	logLevel := fs.String("log-level", "info", "least severe log level: debug, info, warn or error")
	logFormat := fs.String("log-format", "console", "log format: console or json")
	maxConns := fs.Int("max-conns", 0, "most client connections open at once; 0 means no limit")
	messageTimeout := fs.Duration("message-timeout", server.DefaultMessageTimeout,
		"time a client gets to send its first message after connecting, the rest of a message once it has begun, and to take in a reply; 0 means no limit")
	idleTimeout := fs.Duration("idle-timeout", 0,
		"close connections without open cursors that send nothing for this long; 0 means never, as in MongoDB (drivers keep pooled connections open)")
	maxCursors := fs.Int("max-cursors", server.DefaultMaxCursors, "most cursors open at once, in all; 0 means no limit")
	maxCursorsPerConn := fs.Int("max-cursors-per-conn", server.DefaultMaxCursorsPerConn,
		"most open cursors one connection may have opened; 0 means no limit")
	maxCursorMemory := fs.Int64("max-cursor-memory-mib", server.DefaultMaxCursorMemory>>20,
		"most MiB of results (aggregations, sorted finds) open cursors may hold in memory; 0 means no limit")
	maxCursorsPerClient := fs.Int("max-cursors-per-client", server.DefaultMaxCursorsPerClient,
		"most open cursors one client (its user with --auth, else its address) may have opened; a quarter of --max-cursors unless given; 0 means no limit")
	maxCursorMemoryPerClient := fs.Int64("max-cursor-memory-per-client-mib", server.DefaultMaxCursorMemoryPerClient>>20,
		"most MiB of results one client's open cursors may hold in memory; half of --max-cursor-memory-mib unless given; 0 means no limit")
	maxSessions := fs.Int("max-sessions", session.DefaultMax,
		"most logical sessions kept at once (mongod's maxSessions); beyond, TooManyLogicalSessions")
	maxSessionsPerClient := fs.Int("max-sessions-per-client", session.DefaultMaxPerClient,
		"most logical sessions one client (its user with --auth, else its address) may keep, a tenth of --max-sessions unless given; beyond, its new ones get TooManyLogicalSessions")
	clockFlag := fs.String("clock", "system", "time source for expiry: system, or manual for tests (time moves only by advanceClock)")
	metricsListen := fs.String("metrics-listen", "", "address to serve Prometheus /metrics on, host:port; off when empty")
	pprofListen := fs.String("pprof-listen", "", "loopback address to serve Go's profiler (/debug/pprof/) on, host:port; off when empty")
	cacheSize := fs.Int64("cache-size-mb", server.DefaultCacheSize>>20, "MiB of the store's block cache, the bulk of the server's memory beyond what requests hold")
	minFreeDisk := fs.Int64("min-free-disk", pebblekv.DefaultMinFreeDisk>>20, "MiB kept free on the data directory's filesystem: below it, writes that add data fail with OutOfDiskSpace while reads and deletes work; 0 turns this off")
	var oplogOn optionalBool
	fs.Var(&oplogOn, "oplog", "keep the oplog (local.oplog.rs), which replica-set mode and change streams read; on by default with --repl-set only, as mongod keeps one only as a replica-set member")
	oplogSize := fs.Int64("oplog-size-mb", server.DefaultOplogMaxBytes>>20, "MiB the oplog may hold, change streams' pre-images included; the oldest entries are trimmed in the background (as mongod's --oplogSize); 0 means no bound")
	oplogHours := fs.Float64("oplog-max-hours", 0, "hours an oplog entry is kept at most; 0 means no time bound")
	testCommands := fs.Bool("enable-test-commands", false, "enable configureFailPoint (failCommand), for drivers' tests of their error handling; as mongod's enableTestCommands, never in production")
	replSet := fs.String("repl-set", "", "name of the one-member replica set to present as the primary of (mongod's --replSet); off (a standalone server) when empty")
	advertiseAddr := fs.String("advertise-addr", "", "host:port clients reach this server at: the replica set names its member by it in hello and rs.conf(), and on a shared store (--store tikv) it is this server's entry on the roster of servers, which every server's hello lists; the --listen address when empty, with the host name for 0.0.0.0")
	sha1Iters := fs.Int("scram-sha1-iterations", auth.DefaultSHA1Iterations,
		fmt.Sprintf("PBKDF2 iterations of the SCRAM-SHA-1 credentials created or changed from now on (mongod's scramIterationCount); at least %d", auth.MinSHA1Iterations))
	sha256Iters := fs.Int("scram-sha256-iterations", auth.DefaultSHA256Iterations,
		fmt.Sprintf("PBKDF2 iterations of the SCRAM-SHA-256 credentials created or changed from now on (mongod's scramSHA256IterationCount); at least %d", auth.MinSHA256Iterations))
	mechanisms := fs.String("auth-mechanisms", "MONGODB-X509,SCRAM-SHA-1,SCRAM-SHA-256",
		"authentication mechanisms clients may use, comma-separated (mongod's authenticationMechanisms); SCRAM-SHA-256 alone turns SHA-1 away")
	version := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *version {
		fmt.Println("lethe", server.Version)
		return nil
	}

	if *maxSessions < 1 || *maxSessionsPerClient < 1 {
		return fmt.Errorf("--max-sessions and --max-sessions-per-client must be at least 1")
	}
	// A client's share not given follows the server's bound: the server
	// derives it (a tenth of the sessions, a quarter of the cursors, half
	// of their memory), so that lowering the bound alone keeps shares.
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	perClientFlag := func(name string, v int) int {
		if !given[name] {
			return 0
		}
		return noLimitIfZero(v)
	}
	store, err := parseStore(*storeFlag, *pdFlag)
	if err != nil {
		return err
	}
	if *storePrefix == "" {
		return fmt.Errorf("--store-prefix: want a prefix, not an empty one")
	}
	if err := checkBinding(*listen, *authOn, *insecureRemote); err != nil {
		return err
	}
	ep, err := tlsf.endpoint()
	if err != nil {
		return err
	}

	level, err := zapcore.ParseLevel(*logLevel)
	if err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	atom := zap.NewAtomicLevelAt(level)
	log, err := newLogger(*logFormat, atom)
	if err != nil {
		return err
	}
	defer log.Sync()

	cfg := server.Config{
		Listen:         *listen,
		DataDir:        *dataDir,
		Logger:         log,
		MaxConns:       *maxConns,
		MessageTimeout: *messageTimeout,
		IdleTimeout:    *idleTimeout,
		Cursors: server.CursorLimits{
			Total:           noLimitIfZero(*maxCursors),
			PerConn:         noLimitIfZero(*maxCursorsPerConn),
			Memory:          int64(noLimitIfZero(int(*maxCursorMemory))) << 20,
			PerClient:       perClientFlag("max-cursors-per-client", *maxCursorsPerClient),
			MemoryPerClient: int64(perClientFlag("max-cursor-memory-per-client-mib", int(*maxCursorMemoryPerClient))) << 20,
		},
		MaxSessions:           *maxSessions,
		MaxSessionsPerClient:  perClientFlag("max-sessions-per-client", *maxSessionsPerClient),
		CmdLine:               args,
		LogLevel:              &atom,
		EnableTestCommands:    *testCommands,
		ReplSet:               *replSet,
		AdvertiseAddr:         *advertiseAddr,
		TLS:                   ep,
		Auth:                  *authOn,
		ScramSHA1Iterations:   *sha1Iters,
		ScramSHA256Iterations: *sha256Iters,
		AuthMechanisms:        parseMechanisms(*mechanisms),
	}
	if *sha1Iters < auth.MinSHA1Iterations {
		return fmt.Errorf("--scram-sha1-iterations: want at least %d, not %d", auth.MinSHA1Iterations, *sha1Iters)
	}
	if *sha256Iters < auth.MinSHA256Iterations {
		return fmt.Errorf("--scram-sha256-iterations: want at least %d, not %d", auth.MinSHA256Iterations, *sha256Iters)
	}
	if cfg.MessageTimeout == 0 {
		cfg.MessageTimeout = -1 // Config's zero means the default
	}
	switch {
	case *minFreeDisk < 0:
		return fmt.Errorf("--min-free-disk: want 0 or more MiB, not %d", *minFreeDisk)
	case *minFreeDisk == 0:
		cfg.MinFreeDisk = -1 // off
	default:
		cfg.MinFreeDisk = *minFreeDisk << 20
	}
	if *pprofListen != "" {
		if err := checkPprofAddr(*pprofListen); err != nil {
			return err
		}
	}
	if *cacheSize <= 0 {
		return fmt.Errorf("--cache-size-mb: want more than 0")
	}
	cfg.CacheSize = *cacheSize << 20
	if *oplogSize < 0 || *oplogHours < 0 {
		return fmt.Errorf("--oplog-size-mb and --oplog-max-hours: want 0 or more")
	}
	cfg.NoOplog = !oplogOn.or(*replSet != "")
	cfg.OplogMaxBytes = *oplogSize << 20
	if *oplogSize == 0 {
		cfg.OplogMaxBytes = -1 // no bound
	}
	cfg.OplogMaxAge = time.Duration(*oplogHours * float64(time.Hour))
	switch *clockFlag {
	case "system":
	case "manual":
		cfg.Clock = clock.NewManual(time.Now())
		cfg.ManualClock = true
	default:
		return fmt.Errorf("--clock: want system or manual, not %q", *clockFlag)
	}

	log.Info("starting lethe", zap.String("version", server.Version), zap.String("listen", *listen), zap.Stringer("store", store), zap.String("dataDir", *dataDir))
	if cfg.Store, err = store.open(*storePrefix, log); err != nil {
		return err
	}
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	shutdown := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		return srv.Shutdown(ctx)
	}
	if err := srv.Start(); err != nil {
		return errors.Join(err, shutdown())
	}
	var metrics, profiler *http.Server
	if *metricsListen != "" {
		if metrics, err = serveMetrics(*metricsListen, srv, log); err != nil {
			return errors.Join(err, shutdown())
		}
	}
	if *pprofListen != "" {
		if profiler, err = servePprof(*pprofListen, log); err != nil {
			return errors.Join(err, shutdown())
		}
	}

	stopReload := reloadOnHangup(ep, log)
	defer stopReload()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	select {
	case <-ctx.Done():
		log.Info("signal received, shutting down", zap.Duration("grace", shutdownGrace))
	case <-srv.ShutdownRequested():
		log.Info("shutdown command received, shutting down", zap.Duration("grace", shutdownGrace))
	}
	stop() // a second signal kills the process the usual way
	if metrics != nil {
		metrics.Close()
	}
	if profiler != nil {
		profiler.Close()
	}
	return shutdown()
}

// usage lists the flags, limits and timeouts among them, and then the
// limits no flag changes, so that an operator sees every bound in one place.
func usage(fs *flag.FlagSet) {
	out := fs.Output()
	fmt.Fprintf(out, "Usage: lethe [flags]\n\nLethe serves the MongoDB protocol over a local store (or a TiKV cluster, --store), with time-to-live at its heart.\n\nFlags:\n")
	fs.PrintDefaults()
	fmt.Fprintf(out, "\nLimits no flag changes (MongoDB's unless noted):\n")
	for _, l := range server.FixedLimits() {
		fmt.Fprintf(out, "  %-24s %s\n", l.Name, l.Value)
	}
	fmt.Fprintf(out, "  %-24s %v for requests in flight after SIGINT or SIGTERM (Lethe's)\n", "shutdown grace", shutdownGrace)
}

// noLimitIfZero maps a flag's 0, "no limit", to the negative value that
// means it in server.Config, where 0 takes the default.
func noLimitIfZero(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

func newLogger(format string, level zap.AtomicLevel) (*zap.Logger, error) {
	var enc zapcore.Encoder
	switch format {
	case "console":
		cfg := zap.NewDevelopmentEncoderConfig()
		cfg.EncodeTime = zapcore.ISO8601TimeEncoder
		enc = zapcore.NewConsoleEncoder(cfg)
	case "json":
		enc = zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	default:
		return nil, fmt.Errorf("--log-format: want console or json, not %q", format)
	}
	return zap.New(zapcore.NewCore(enc, zapcore.Lock(os.Stderr), level), zap.ErrorOutput(zapcore.Lock(os.Stderr))), nil
}

// serveMetrics serves the Go runtime's, the process's and the server's
// metrics on addr in the background.
func serveMetrics(addr string, srv *server.Server, log *zap.Logger) (*http.Server, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(srv.Collectors()...)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen: %w", err)
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", zap.Error(err))
		}
	}()
	log.Info("serving metrics", zap.String("addr", ln.Addr().String()))
	return hs, nil
}

// parseMechanisms splits --auth-mechanisms; server.New refuses names it
// does not know.
func parseMechanisms(list string) []auth.Mechanism {
	mechs := []auth.Mechanism{}
	for _, m := range strings.Split(list, ",") {
		if m = strings.TrimSpace(m); m != "" {
			mechs = append(mechs, auth.Mechanism(m))
		}
	}
	return mechs
}

// optionalBool is a boolean flag that knows whether it was given, for a
// default that depends on other flags.
type optionalBool struct {
	set, value bool
}

func (b *optionalBool) String() string {
	if b == nil || !b.set {
		return "auto"
	}
	return strconv.FormatBool(b.value)
}

func (b *optionalBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	b.set, b.value = true, v
	return nil
}

// IsBoolFlag lets the flag be given alone, as --oplog.
func (b *optionalBool) IsBoolFlag() bool { return true }

// or is the flag's value if given, else def.
func (b *optionalBool) or(def bool) bool {
	if b.set {
		return b.value
	}
	return def
}
