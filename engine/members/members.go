package members

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/kv"
)

// Prefix is the first byte of the members' key family.
const Prefix = 'm'

// DefaultLease is how long a record stays live after its last renewal.
const DefaultLease = 10 * time.Second

// Key is the key of the record of server id.
func Key(id string) []byte { return append([]byte{Prefix}, id...) }

// epochKey is the roster's epoch: rewritten, with a value of its own, by
// every join and every leave, so that a Roster can tell that the set of
// records changed with one point read. Ids are hex, so the key sorts
// before every record and a scan of the records starts past it.
func epochKey() []byte { return []byte{Prefix} }

// recordsFrom is where a scan of the records starts.
func recordsFrom() []byte { return []byte{Prefix, '0'} }

// Record is what a server publishes about itself.
type Record struct {
	// ID names the server for the life of its process.
	ID string `bson:"id"`
	// Addr is where clients reach it (--advertise-addr).
	Addr string `bson:"addr"`
	// Started and Expires are the store's times, in milliseconds, at which
	// the server joined and at which its lease runs out.
	Started int64 `bson:"started"`
	Expires int64 `bson:"expires"`
	// Catalog is the catalog version the server has loaded: it runs no
	// write under an older one.
	Catalog uint64 `bson:"catalog"`
	// Floor is the lowest oplog timestamp the server may still commit an
	// entry at; 0 while it has nothing to commit, in which case it
	// publishes a floor before it takes a timestamp (oplog.Log.Share).
	Floor uint64 `bson:"floor"`
}

// Live reports whether the record's lease holds at now (milliseconds).
func (r Record) Live(nowMillis int64) bool { return r.Expires > nowMillis }

// Options configure a Member.
type Options struct {
	Store kv.Store
	// Now is the store's shared time.
	Now func() time.Time
	// Addr is the address the server advertises.
	Addr string
	// Lease is how long a renewal holds; DefaultLease if zero. Renewals
	// run every third of it.
	Lease  time.Duration
	Logger *zap.Logger
}

// Member is this server's place on the roster.
type Member struct {
	opts Options
	// renewMu keeps two renewals of the record from racing each other.
	renewMu sync.Mutex

	mu      sync.Mutex
	rec     Record
	renewed time.Time // when the last renewal committed (opts.Now)
	left    bool
}

// Join writes the server's first record under a fresh id.
func Join(ctx context.Context, opts Options) (*Member, error) {
	if opts.Lease <= 0 {
		opts.Lease = DefaultLease
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, fmt.Errorf("members: server id: %w", err)
	}
	m := &Member{opts: opts}
	m.rec = Record{ID: hex.EncodeToString(id[:]), Addr: opts.Addr, Started: opts.Now().UnixMilli()}
	if err := m.renew(ctx, true); err != nil {
		return nil, err
	}
	return m, nil
}

// ID is the server's id on the roster.
func (m *Member) ID() string { return m.rec.ID }

// Lease is the length of a renewal.
func (m *Member) Lease() time.Duration { return m.opts.Lease }

// Update changes the record the next renewal publishes.
func (m *Member) Update(change func(*Record)) {
	m.mu.Lock()
	change(&m.rec)
	m.mu.Unlock()
}

// Published is the record as last set (published or about to be).
func (m *Member) Published() Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rec
}

// errLeft is Renew's error once the member has left.
var errLeft = errors.New("members: the server has left the roster")

// Renew writes the record with a lease from now.
func (m *Member) Renew(ctx context.Context) error { return m.renew(ctx, false) }

// renew writes the record, and with join the roster's epoch too.
func (m *Member) renew(ctx context.Context, join bool) error {
	m.renewMu.Lock()
	defer m.renewMu.Unlock()
	start := m.opts.Now()
	m.mu.Lock()
	if m.left {
		m.mu.Unlock()
		return errLeft
	}
	rec := m.rec
	m.mu.Unlock()
	rec.Expires = start.Add(m.opts.Lease).UnixMilli()
	raw, err := bson.Marshal(rec)
	if err != nil {
		return fmt.Errorf("members: encode record: %w", err)
	}
	tx, err := m.opts.Store.Begin(ctx, kv.TxnOptions{})
	if err != nil {
		return fmt.Errorf("members: renew: %w", err)
	}
	defer tx.Rollback()
	if err := tx.Set(Key(rec.ID), raw); err != nil {
		return err
	}
	if join {
		if err := tx.Set(epochKey(), []byte("join "+rec.ID)); err != nil {
			return err
		}
	}
	if _, err := tx.Commit(ctx, kv.Sync); err != nil {
		return fmt.Errorf("members: renew: %w", err)
	}
	m.mu.Lock()
	if start.After(m.renewed) {
		m.renewed = start
	}
	m.mu.Unlock()
	return nil
}

// Valid reports whether the server's own lease still holds: false once its
// renewals have failed for a whole lease, when the others may have counted
// it out. A server that is not valid must not commit work that assumed it
// was a member (a write under a catalog version the others moved past).
func (m *Member) Valid() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.left && m.opts.Now().Sub(m.renewed) < m.opts.Lease
}

// ValidFor reports whether the server's own lease holds for at least d
// more. A commit that the others must not see once they count the server
// out checks it with d a bound on the commit's time, so that it lands
// before the lease runs out, whatever the rounding of the record's expiry
// and the skew of the servers' shared clocks.
func (m *Member) ValidFor(d time.Duration) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.left && m.opts.Now().Add(d).Sub(m.renewed) < m.opts.Lease
}

// Run renews the lease every third of it until ctx ends.
func (m *Member) Run(ctx context.Context) {
	clock.Every(ctx, m.opts.Lease/3, nil, func(ctx context.Context) {
		if err := m.Renew(ctx); err != nil && ctx.Err() == nil {
			m.opts.Logger.Warn("members: lease renewal failed", zap.Error(err))
		}
	})
}

// Leave deletes the record, so that the others need not wait out its
// lease. The member renews no more.
func (m *Member) Leave(ctx context.Context) error {
	m.mu.Lock()
	m.left = true
	m.mu.Unlock()
	tx, err := m.opts.Store.Begin(ctx, kv.TxnOptions{})
	if err != nil {
		return fmt.Errorf("members: leave: %w", err)
	}
	defer tx.Rollback()
	if err := tx.Delete(Key(m.rec.ID)); err != nil {
		return err
	}
	if err := tx.Set(epochKey(), []byte("leave "+m.rec.ID)); err != nil {
		return err
	}
	if _, err := tx.Commit(ctx, kv.Sync); err != nil {
		return fmt.Errorf("members: leave: %w", err)
	}
	return nil
}

// readAll reads every record, live or not, in id order.
func readAll(ctx context.Context, r kv.Reader) ([]Record, error) {
	it, err := r.Iter(ctx, recordsFrom(), kv.PrefixEnd([]byte{Prefix}), false)
	if err != nil {
		return nil, fmt.Errorf("members: read the roster: %w", err)
	}
	defer it.Close()
	var out []Record
	for ok := it.First(); ok; ok = it.Next() {
		var rec Record
		if err := bson.Unmarshal(it.Value(), &rec); err != nil {
			return nil, fmt.Errorf("members: record %q: %w", it.Key(), err)
		}
		out = append(out, rec)
	}
	return out, it.Error()
}

// Roster reads the live records with point reads: its first read scans
// them, and it scans again only when the roster's epoch has moved (a
// server joined or left) since; otherwise it reads the records of the ids
// its last scan found. A record is rewritten at each
// renewal and each floor or catalog report, many times a second, and a
// scan of keys with many versions costs far more than reads of them (until
// the store's GC; client-go's mock never collects them). A server that
// died is still read, and dropped by its lease. Safe for concurrent use.
type Roster struct {
	mu    sync.Mutex
	epoch []byte   // as read before the last scan; nil before the first
	ids   []string // the ids that scan found, in order
}

// Live reads the records whose lease holds at now, in id order.
func (ro *Roster) Live(ctx context.Context, r kv.Reader, now time.Time) ([]Record, error) {
	epoch, err := r.Get(ctx, epochKey())
	if err != nil && err != kv.ErrNotFound {
		return nil, fmt.Errorf("members: read the roster's epoch: %w", err)
	}
	ro.mu.Lock()
	ids, known := ro.ids, ro.epoch != nil && string(ro.epoch) == string(epoch)
	ro.mu.Unlock()
	if !known {
		recs, err := readAll(ctx, r)
		if err != nil {
			return nil, err
		}
		ids = make([]string, len(recs))
		for i, rec := range recs {
			ids[i] = rec.ID
		}
		ro.mu.Lock()
		ro.epoch, ro.ids = append([]byte{}, epoch...), ids
		ro.mu.Unlock()
		return live(recs, now), nil
	}
	var recs []Record
	for _, id := range ids {
		raw, err := r.Get(ctx, Key(id))
		if err == kv.ErrNotFound {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("members: read the record of %s: %w", id, err)
		}
		var rec Record
		if err := bson.Unmarshal(raw, &rec); err != nil {
			return nil, fmt.Errorf("members: record of %s: %w", id, err)
		}
		recs = append(recs, rec)
	}
	return live(recs, now), nil
}

// live keeps the records whose lease holds at now.
func live(recs []Record, now time.Time) []Record {
	out := recs[:0]
	for _, rec := range recs {
		if rec.Live(now.UnixMilli()) {
			out = append(out, rec)
		}
	}
	return out
}
