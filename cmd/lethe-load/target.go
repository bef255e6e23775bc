package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/server"
	"github.com/lethedb/lethe/tlsnet"
)

// opTimeout bounds every request, so that a server that stops answering
// fails the run instead of hanging it. An unindexed find over 100,000
// documents under full concurrency is the slowest request the tool makes.
const opTimeout = time.Minute

// target is the server under load and the client that talks to it.
type target struct {
	client *mongo.Client
	// closeServer stops the server the tool started, if it did.
	closeServer func() error
	// cpu reads the server's CPU time; its read is nil when that is
	// unknown (a --uri server without --server-pid).
	cpu cpuClock
	// child is the --server-bin process, nil for other servers.
	child *childServer
}

// openTarget connects to cfg.uri, or starts a server when it is empty: a
// child process of --server-bin, or else one in this process. A manual
// clock lets the TTL workload move the server's time: a child then runs
// with --clock=manual.
func openTarget(ctx context.Context, cfg config, manualClock bool) (*target, error) {
	t := &target{}
	var addr string
	switch {
	case cfg.uri != "":
		if cfg.serverPID > 0 {
			t.cpu = pidCPU(cfg.serverPID)
		}
		return t, t.connect(ctx, cfg, cfg.uri)
	case cfg.serverBin != "":
		args := cfg.serverArgs
		if manualClock {
			args = append(slices.Clone(args), "--clock=manual")
		}
		c, err := startChild(ctx, cfg.serverBin, args)
		if err != nil {
			return nil, fmt.Errorf("start --server-bin: %w", err)
		}
		t.closeServer, t.cpu, t.child, addr = c.stop, c.cpuClock(), c, c.addr
	default:
		a, stop, err := startServer(serverKind{manualClock: manualClock})
		if err != nil {
			return nil, fmt.Errorf("start in-process server: %w", err)
		}
		t.closeServer, t.cpu, addr = stop, selfCPU(), a
	}
	return t, t.connect(ctx, cfg, "mongodb://"+addr+"/?directConnection=true")
}

// connect makes t's client of uri, and stops t's server if it cannot.
func (t *target) connect(ctx context.Context, cfg config, uri string) error {
	// One client shared by every goroutine is how an application uses the
	// driver: the client multiplexes requests over its connection pool. The
	// pool has a connection per load client, plus one so that the TTL
	// workload's statistics poller never waits behind them.
	opts := options.Client().ApplyURI(uri).
		SetMaxPoolSize(uint64(cfg.clients) + 1).
		SetTimeout(opTimeout)
	client, err := mongo.Connect(opts)
	if err != nil {
		return errors.Join(fmt.Errorf("connect: %w", err), t.close())
	}
	t.client = client
	if err := warmUp(ctx, client, cfg.clients); err != nil {
		return errors.Join(err, t.close())
	}
	return nil
}

// pooledClient connects to the in-process server at addr with a pool of
// poolSize connections, opened before it returns (warmUp); extra options
// (credentials, TLS, retryWrites) apply after the defaults. The caller
// disconnects it.
func pooledClient(ctx context.Context, addr string, poolSize int, extra ...*options.ClientOptions) (*mongo.Client, error) {
	base := options.Client().ApplyURI("mongodb://" + addr + "/?directConnection=true").
		SetMaxPoolSize(uint64(poolSize)).SetTimeout(opTimeout)
	client, err := mongo.Connect(append([]*options.ClientOptions{base}, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	if err := warmUp(ctx, client, poolSize); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return nil, errors.Join(err, client.Disconnect(ctx))
	}
	return client, nil
}

// warmUp opens the pool's connections before anything is timed, so that
// the first workload does not pay for connection setup.
func warmUp(ctx context.Context, client *mongo.Client, clients int) error {
	admin := client.Database("admin")
	_, err := measureFor(ctx, clients, 200*time.Millisecond, func(int) op {
		return func(ctx context.Context) error {
			return admin.RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err()
		}
	})
	if err != nil {
		return fmt.Errorf("ping the server: %w", err)
	}
	return nil
}

func (t *target) close() error {
	var errs []error
	if t.client != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := t.client.Disconnect(ctx); err != nil {
			errs = append(errs, fmt.Errorf("disconnect: %w", err))
		}
	}
	if t.closeServer != nil {
		if err := t.closeServer(); err != nil {
			errs = append(errs, fmt.Errorf("stop in-process server: %w", err))
		}
	}
	return errors.Join(errs...)
}

// serverKind is what kind of in-process server a workload measures.
type serverKind struct {
	manualClock bool
	noOplog     bool
	// oplogMaxBytes bounds the oplog (--oplog-size-mb); the server's
	// default if zero.
	oplogMaxBytes int64
	replSet       string // the set's name in replica-set mode; "" standalone
	auth          bool   // access control on (--auth)
	// tls, when set, serves TLS beside plain TCP as its mode says.
	tls *tlsnet.Endpoint
}

// startServer runs a server of kind k on a free loopback port over a fresh
// data directory and returns its address and a function that stops it and
// removes the directory.
func startServer(k serverKind) (addr string, stop func() error, err error) {
	dir, err := os.MkdirTemp("", "lethe-load-server-")
	if err != nil {
		return "", nil, fmt.Errorf("create data directory: %w", err)
	}
	cfg := server.Config{Listen: "127.0.0.1:0", DataDir: dir, Logger: zap.NewNop(), NoOplog: k.noOplog, ReplSet: k.replSet,
		Auth: k.auth, TLS: k.tls, OplogMaxBytes: k.oplogMaxBytes}
	if k.manualClock {
		cfg.Clock = clock.NewManual(time.Now())
		cfg.ManualClock = true
	}
	srv, err := server.New(cfg)
	if err != nil {
		return "", nil, errors.Join(err, os.RemoveAll(dir))
	}
	if err := srv.Start(); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return "", nil, errors.Join(err, srv.Shutdown(ctx), os.RemoveAll(dir))
	}
	stop = func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return errors.Join(srv.Shutdown(ctx), os.RemoveAll(dir))
	}
	return srv.Addr().String(), stop, nil
}
