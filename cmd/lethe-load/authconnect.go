package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/xdg-go/scram"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The user the authentication workloads create and log in as. The server
// derives its SCRAM-SHA-256 credential with the default 15,000 iterations.
const (
	benchUser     = "lethe-load"
	benchPassword = "lethe-load-password"
)

// connectRounds is how many times auth-connect measures each way of
// connecting, in an order that changes every round: one round per way,
// so that each comes once in each place.
const connectRounds = 3

// runAuthConnect measures connection setup: from dialing to the answer to
// the first command that needs authentication, handshake included, one
// new connection per operation, so that ops/s is handshakes per second. It
// starts its own servers, one with access control on, and compares, in
// alternating rounds of the same run:
//
//   - plain-connect: hello and the command without credentials, against a
//     second server with access control off (the ceiling);
//   - auth-connect: a SCRAM-SHA-256 login as a new client does it,
//     deriving the salted password (PBKDF2, 15,000 iterations) first;
//   - auth-connect-cached: the same login with the derived keys cached, as
//     a driver's pool does for each connection after its first.
//
// The login is the drivers': the first SCRAM step rides in hello
// (speculative authentication), the proof in one saslContinue.
func runAuthConnect(ctx context.Context, e *env) ([]result, error) {
	authAddr, stopAuth, err := startAuthServer(ctx)
	if err != nil {
		return nil, err
	}
	defer stopAuth()
	plainAddr, stopPlain, err := startServer(serverKind{})
	if err != nil {
		return nil, err
	}
	defer stopPlain()

	cached, err := scram.SHA256.NewClient(benchUser, benchPassword, "")
	if err != nil {
		return nil, fmt.Errorf("scram client: %w", err)
	}
	find := bsoncore.NewDocumentBuilder().
		AppendString("find", "connect").
		AppendInt32("limit", 1).
		AppendBoolean("singleBatch", true).
		AppendString("$db", e.db.Name()).
		Build()
	connect := func(addr string, login func(*rawConn) error) op {
		return func(ctx context.Context) error {
			c, err := dialRaw(ctx, addr, nil)
			if err != nil {
				return err
			}
			defer c.close()
			if err := login(c); err != nil {
				return err
			}
			_, err = c.command(find)
			return err
		}
	}
	variants := []func(int) op{
		func(int) op {
			return connect(plainAddr, (*rawConn).hello)
		},
		func(int) op {
			return connect(authAddr, func(c *rawConn) error {
				fresh, err := scram.SHA256.NewClient(benchUser, benchPassword, "")
				if err != nil {
					return fmt.Errorf("scram client: %w", err)
				}
				return c.scramLogin(fresh, benchUser)
			})
		},
		func(int) op {
			return connect(authAddr, func(c *rawConn) error { return c.scramLogin(cached, benchUser) })
		},
	}
	round := e.cfg.duration / connectRounds
	samples, err := alternate(connectRounds, len(variants), func(i int) (sample, error) {
		return measureFor(ctx, e.cfg.clients, round, variants[i])
	})
	if err != nil {
		return nil, err
	}
	return []result{
		{name: "plain-connect", sample: samples[0]},
		{name: "auth-connect", sample: samples[1], ceiling: "plain-connect"},
		{name: "auth-connect-cached", sample: samples[2], ceiling: "plain-connect"},
	}, nil
}

// alternate measures n variants of a workload in rounds and merges each
// one's samples. The orders form a balanced Latin square (Williams'
// design) when rounds is n and n is even: each variant comes once in each
// place and after each other variant once, so that neither going first
// nor following a variant that leaves work behind (closed connections to
// reap, garbage to collect) favours one of them.
func alternate(rounds, n int, measure func(variant int) (sample, error)) ([]sample, error) {
	samples := make([]sample, n)
	for r := range rounds {
		for _, i := range roundOrder(r, n) {
			s, err := measure(i)
			if err != nil {
				return nil, err
			}
			samples[i] = mergeSamples(samples[i], s)
		}
	}
	return samples, nil
}

// roundOrder is the order of n variants in round r: the first round's is
// 0, 1, n-1, 2, n-2, ..., and round r adds r to each, modulo n.
func roundOrder(r, n int) []int {
	order := []int{0}
	for lo, hi := 1, n-1; len(order) < n; lo, hi = lo+1, hi-1 {
		order = append(order, lo)
		if len(order) < n {
			order = append(order, hi)
		}
	}
	for k := range order {
		order[k] = (order[k] + r) % n
	}
	return order
}

// startAuthServer starts an in-process server with access control on and
// creates benchUser, with the root role, through the localhost exception.
func startAuthServer(ctx context.Context) (addr string, stop func() error, err error) {
	addr, stop, err = startServer(serverKind{auth: true})
	if err != nil {
		return "", nil, err
	}
	client, err := mongo.Connect(options.Client().
		ApplyURI("mongodb://" + addr + "/?directConnection=true").
		SetTimeout(opTimeout))
	if err != nil {
		return "", nil, errors.Join(fmt.Errorf("connect: %w", err), stop())
	}
	defer client.Disconnect(context.Background())
	err = client.Database("admin").RunCommand(ctx, bson.D{
		{Key: "createUser", Value: benchUser},
		{Key: "pwd", Value: benchPassword},
		{Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "root"}, {Key: "db", Value: "admin"}}}},
		{Key: "mechanisms", Value: bson.A{"SCRAM-SHA-256"}},
	}).Err()
	if err != nil {
		return "", nil, errors.Join(fmt.Errorf("create the first user through the localhost exception: %w", err), stop())
	}
	return addr, stop, nil
}

// authClient connects to addr as benchUser with SCRAM-SHA-256, with a pool
// of poolSize connections opened before it returns.
func authClient(ctx context.Context, addr string, poolSize int) (*mongo.Client, error) {
	client, err := pooledClient(ctx, addr, poolSize, options.Client().
		SetAuth(options.Credential{AuthMechanism: "SCRAM-SHA-256", AuthSource: "admin", Username: benchUser, Password: benchPassword}))
	if err != nil {
		return nil, fmt.Errorf("as %s: %w", benchUser, err)
	}
	return client, nil
}
