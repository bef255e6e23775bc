package router

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"
)

// Msg is what a mongos says in hello's msg, and what drivers recognize
// one by (the SDAM specification's ServerType Mongos).
const Msg = "isdbgrid"

// RosterAge is how long a roster read serves hellos before the next one
// reads it again: drivers call hello on every new connection and every
// heartbeat, and the roster changes only when a server joins or its lease
// runs out.
const RosterAge = time.Second

// rosterTimeout bounds one roster read, so that a slow store does not hold
// up a handshake: the last roster read is answered instead.
const rosterTimeout = 2 * time.Second

// Config configures a Router.
type Config struct {
	// Roster reads the advertised addresses of the live servers sharing
	// the store, this one included.
	Roster func(ctx context.Context) ([]string, error)
	Logger *zap.Logger
}

// Router is the mongos-like face of one of the servers sharing a store.
type Router struct {
	cfg Config

	// readMu makes concurrent hellos wait for one roster read.
	readMu sync.Mutex

	mu    sync.Mutex
	hosts []string  // sorted; nil before the first read
	read  time.Time // when hosts was read (wall clock)
}

// New returns a Router.
func New(cfg Config) *Router {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return &Router{cfg: cfg}
}

// AppendHello appends what a mongos's hello starts with, in its order,
// before topologyVersion: isWritablePrimary (ismaster for legacy, the
// isMaster spelling) and msg (MongosHelloResponse::appendToBuilder).
func (r *Router) AppendHello(dst []byte, legacy bool) []byte {
	if legacy {
		dst = bsoncore.AppendBooleanElement(dst, "ismaster", true)
	} else {
		dst = bsoncore.AppendBooleanElement(dst, "isWritablePrimary", true)
	}
	return bsoncore.AppendStringElement(dst, "msg", Msg)
}

// AppendHosts appends hosts, the addresses of the live servers sharing the
// store, as last read from the roster (at most RosterAge ago, unless the
// store could not be read). A mongos has no such field: it is Lethe's, for
// operators and tools; drivers ignore the hosts of a mongos.
func (r *Router) AppendHosts(ctx context.Context, dst []byte) []byte {
	hosts := r.Hosts(ctx)
	idx, dst := bsoncore.AppendArrayElementStart(dst, "hosts")
	for i, h := range hosts {
		dst = bsoncore.AppendStringElement(dst, strconv.Itoa(i), h)
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, idx)
	return dst
}

// Hosts returns the live servers' addresses, sorted, reading the roster
// again when the last read is older than RosterAge.
func (r *Router) Hosts(ctx context.Context) []string {
	if hosts, fresh := r.cached(); fresh {
		return hosts
	}
	r.readMu.Lock()
	defer r.readMu.Unlock()
	if hosts, fresh := r.cached(); fresh {
		return hosts // read while this one waited
	}
	rctx, cancel := context.WithTimeout(ctx, rosterTimeout)
	defer cancel()
	addrs, err := r.cfg.Roster(rctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil && ctx.Err() != nil {
		// The hello itself ended (its client left): no news of the store.
		return r.hosts
	}
	if err != nil {
		// The last roster is the best answer there is until the next
		// read, a RosterAge later, so that a store that is down costs
		// one failed read (and one log line) a second, not one a hello.
		r.cfg.Logger.Warn("router: the roster of servers could not be read for hello", zap.Error(err))
		if r.hosts == nil {
			r.hosts = []string{}
		}
		r.read = time.Now()
		return r.hosts
	}
	hosts := make([]string, 0, len(addrs))
	for _, a := range addrs {
		if a != "" {
			hosts = append(hosts, a)
		}
	}
	slices.Sort(hosts)
	r.hosts, r.read = slices.Compact(hosts), time.Now()
	return r.hosts
}

// cached is the roster last read, and whether it is recent enough.
func (r *Router) cached() ([]string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hosts, r.hosts != nil && time.Since(r.read) < RosterAge
}
