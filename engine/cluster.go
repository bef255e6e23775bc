package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/members"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/mongoerr"
)

// ClusterOptions configure a server's membership among the servers that
// share one sharded store (package engine/members).
type ClusterOptions struct {
	// Advertise is the address clients reach this server at, published on
	// the roster; SetAdvertise changes it once the listener is up.
	Advertise string
	// Lease is how long the server's roster record holds without a
	// renewal; members.DefaultLease if zero.
	Lease time.Duration
	// Now is the store's shared time, by which leases are judged; the
	// system clock if nil, never the engine's: a test's manual clock
	// jumps by more than a lease, and the server would find its own
	// lease run out (Member.Valid) and refuse its writes.
	Now func() time.Time
	// CatalogPoll is how often the server looks for catalog changes made
	// by the others; DefaultCatalogPoll if zero.
	CatalogPoll time.Duration
}

// DefaultCatalogPoll is how often a server on a shared store reads the
// catalog's version, to load the changes of the other servers: the bound
// on how long a catalog change waits for the servers that run no request.
const DefaultCatalogPoll = 50 * time.Millisecond

// cluster is an engine's membership on a shared store.
type cluster struct {
	member *members.Member // nil when the store is not shared
	now    func() time.Time
	poll   time.Duration
	stop   context.CancelFunc
	done   chan struct{}
	// loaded is the catalog version the server has installed, and
	// polled the time (now, in milliseconds) of its last successful look
	// at the stored version.
	loaded atomic.Uint64
	polled atomic.Int64
	// kick asks the refresh loop to look now.
	kick chan struct{}
	// builds counts the index builds taken over from servers that are
	// gone (takeOverBuilds), which the server waits for as it leaves.
	builds sync.WaitGroup
	// running holds the work stored as this server's that it runs now:
	// the ids (uint64) of the indexes it builds and the tokens (string) of
	// its changes' fences. Work stored as its own but not here is
	// abandoned too (a failed build whose indexes could not be taken out,
	// a change that gave up), and is finished or taken down as a dead
	// server's is.
	running sync.Map // uint64 or string -> struct{}
	// roster reads the live records (Members).
	roster members.Roster
	// fences numbers the fences of this server's catalog changes
	// (fence.go).
	fences atomic.Uint64
	// oplogDone is closed when the shared oplog's floor stops being
	// published (shareOplog).
	oplogDone chan struct{}
}

// joinCluster puts the server on the store's roster and keeps its lease.
func (e *Engine) joinCluster(o ClusterOptions) error {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	m, err := members.Join(context.Background(), members.Options{Store: e.store, Now: now, Addr: o.Advertise, Lease: o.Lease, Logger: e.log})
	if err != nil {
		return fmt.Errorf("engine: join the servers on the store: %w", err)
	}
	poll := o.CatalogPoll
	if poll <= 0 {
		poll = DefaultCatalogPoll
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cluster.member, e.cluster.now, e.cluster.poll = m, now, poll
	e.cluster.stop, e.cluster.done = cancel, make(chan struct{})
	e.cluster.kick = make(chan struct{}, 1)
	if err := e.refreshCatalog(ctx); err != nil {
		cancel()
		return err
	}
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		m.Run(ctx)
	}()
	go func() {
		defer close(e.cluster.done)
		e.refreshLoop(ctx)
		<-renewed
	}()
	e.cluster.oplogDone = e.shareOplog(ctx)
	return nil
}

// refreshLoop installs the catalog changes of the other servers: it reads
// the stored version every poll, or at once when kicked, and catches up
// when it has moved.
func (e *Engine) refreshLoop(ctx context.Context) {
	clock.Every(ctx, e.cluster.poll, e.cluster.kick, func(ctx context.Context) {
		if err := e.refreshCatalog(ctx); err != nil && ctx.Err() == nil {
			e.log.Warn("engine: the catalog could not be refreshed", zap.Error(err))
		}
		if e.ownedWorkStored() {
			recs, err := e.Members(ctx)
			if err != nil {
				return
			}
			live := map[string]bool{}
			for _, r := range recs {
				live[r.ID] = true
			}
			e.clearOrphanFences(ctx, live)
			e.takeOverBuilds(ctx, live)
		}
	})
}

// kickRefresh asks the refresh loop to look at the stored catalog now.
func (e *Engine) kickRefresh() {
	select {
	case e.cluster.kick <- struct{}{}:
	default:
	}
}

// refreshCatalog reads the stored catalog's version and, when it has moved
// past the one loaded, installs every collection's stored entry: new ones
// open, dropped ones (or ones whose name now holds another id) are marked
// dropped, changed ones get their new state. A changed or dropped
// collection's state is installed under its exclusive ddl lock, so that no
// write of this server still runs on the old one once the server reports
// the version on the roster: that is what a catalog change waits for
// (awaitCatalog) before its next step.
func (e *Engine) refreshCatalog(ctx context.Context) error {
	start := e.cluster.now()
	v, err := readVersion(ctx, e.store)
	if err != nil {
		return err
	}
	if v > e.cluster.loaded.Load() {
		if err := e.installCatalog(ctx); err != nil {
			return err
		}
		if err := e.reloadViews(); err != nil {
			return err
		}
		e.cluster.loaded.Store(v)
		e.cluster.member.Update(func(r *members.Record) { r.Catalog = v })
		if err := e.cluster.member.Renew(ctx); err != nil {
			return err
		}
	}
	e.cluster.polled.Store(start.UnixMilli())
	return nil
}

// installCatalog makes the open collections those of the stored catalog.
func (e *Engine) installCatalog(ctx context.Context) error {
	stored := map[string]collMeta{}
	lo := record.CatalogCollPrefix()
	it, err := e.store.Iter(ctx, lo, record.PrefixEnd(lo), false)
	if err != nil {
		return fmt.Errorf("engine: read catalog: %w", err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		var meta collMeta
		if err := bson.Unmarshal(it.Value(), &meta); err != nil {
			it.Close()
			return fmt.Errorf("engine: catalog entry %q: %w", it.Key(), err)
		}
		stored[nsKey(meta.DB, meta.Name)] = meta
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("engine: read catalog: %w", err)
	}
	e.mu.RLock()
	open := make(map[string]*Collection, len(e.colls))
	for ns, c := range e.colls {
		open[ns] = c
	}
	e.mu.RUnlock()
	for ns, c := range open {
		meta, ok := stored[ns]
		if st := c.st(); ok && meta.ID == st.meta.ID && sameStored(&meta, &st.meta) {
			continue
		}
		// The scan may be older than a change this server made since:
		// under the lock, the entry as stored now decides.
		if err := e.installStored(ctx, ns, c); err != nil {
			return err
		}
	}
	for ns, meta := range stored {
		c, err := e.adopt(meta, ns)
		if err != nil {
			return err
		}
		// A request may have opened it since the loop above looked,
		// from an entry it read before this change: install this one.
		if c != nil && !sameStored(&meta, &c.st().meta) {
			if err := e.installStored(ctx, ns, c); err != nil {
				return err
			}
		}
	}
	return nil
}

// installStored installs the stored entry of the open collection c under
// its exclusive ddl lock, when no write of this server runs: c is dropped
// if the entry is gone or names another id, changed if it differs.
func (e *Engine) installStored(ctx context.Context, ns string, c *Collection) error {
	c.ddl.Lock()
	defer c.ddl.Unlock()
	st := c.st()
	if st.dropped {
		return nil
	}
	meta, raw, err := readMeta(ctx, e.store, st.meta.DB, st.meta.Name)
	switch {
	case err == kv.ErrNotFound || err == nil && meta.ID != st.meta.ID:
		// Dropped, or renamed: its id is not marked gone, so that the
		// new name opens it (adopt).
		e.mu.Lock()
		if e.colls[ns] == c {
			delete(e.colls, ns)
		}
		e.mu.Unlock()
		dropped := *st
		dropped.dropped = true
		c.setState(&dropped)
		return nil
	case err != nil:
		return fmt.Errorf("engine: read the catalog entry of %s: %w", st.ns(), err)
	case sameMeta(raw, &st.meta):
		return nil
	}
	nst, err := st.changed(meta)
	if err != nil {
		return err
	}
	c.setState(nst)
	return nil
}

// adopt opens a collection another server created, unless the name is
// open already; it returns the open collection, nil if meta names a
// collection this server dropped or has open under another name (an entry
// read before a drop or rename here committed).
func (e *Engine) adopt(meta collMeta, ns string) (*Collection, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c := e.colls[ns]; c != nil {
		return c, nil
	}
	if !e.adoptableLocked(meta.ID) {
		return nil, nil
	}
	st, err := newCollState(meta)
	if err != nil {
		return nil, err
	}
	c := e.newCollection(st)
	e.colls[ns] = c
	return c, nil
}

// adoptableLocked reports whether the collection id may be opened from
// its stored entry: neither dropped here nor open under another name.
// The caller holds e.mu.
func (e *Engine) adoptableLocked(id uint64) bool {
	if e.gone[id] {
		return false
	}
	for _, c := range e.colls {
		if c.st().meta.ID == id {
			return false
		}
	}
	return true
}

// forgetLocked takes the dropped collection c out of the open ones; the
// caller holds e.mu.
func (e *Engine) forgetLocked(ns string, c *Collection) {
	delete(e.colls, ns)
	e.gone[c.st().meta.ID] = true
}

// sameStored reports whether two catalog entries are the same.
func sameStored(a, b *collMeta) bool {
	ra, err := bson.Marshal(a)
	if err != nil {
		return false
	}
	return sameMeta(ra, b)
}

// lookupStored opens db.name from the store when this server has not yet
// loaded it: a collection another server created a moment ago is there
// for a request that follows the write that created it. nil if the store
// has none.
func (e *Engine) lookupStored(ctx context.Context, db, name string) *Collection {
	if e.cluster.member == nil {
		return nil
	}
	meta, _, err := readMeta(ctx, e.store, db, name)
	if err != nil {
		return nil
	}
	c, err := e.adopt(meta, nsKey(db, name))
	if err != nil {
		return nil
	}
	return c
}

// awaitCatalog waits, after a catalog change, until every live server has
// installed the stored catalog version: then no write anywhere still runs
// on the state before the change, and every later request sees it. A
// server whose lease runs out stops counting. It gives up, logging, after
// ctx ends or catalogWaitCap: the change has committed either way.
func (e *Engine) awaitCatalog(ctx context.Context) {
	if e.cluster.member == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, catalogWaitCap)
	defer cancel()
	v, err := readVersion(ctx, e.store)
	if err != nil {
		e.log.Warn("engine: catalog change not awaited on the other servers", zap.Error(err))
		return
	}
	e.kickRefresh()
	t := time.NewTicker(e.cluster.poll / 5)
	defer t.Stop()
	for {
		recs, err := e.Members(ctx)
		if err == nil && e.cluster.loaded.Load() >= v && allLoaded(recs, v) {
			return
		}
		select {
		case <-ctx.Done():
			e.log.Warn("engine: a catalog change is not yet loaded by every server", zap.Uint64("version", v), zap.Error(ctx.Err()))
			return
		case <-t.C:
		}
	}
}

// catalogWaitCap bounds awaitCatalog.
const catalogWaitCap = time.Minute

func allLoaded(recs []members.Record, v uint64) bool {
	for _, r := range recs {
		if r.Catalog < v {
			return false
		}
	}
	return true
}

// catalogFresh is nil when this server may commit a write: on a shared
// store, its lease holds and it has seen the catalog's version within the
// lease, so that the others, who wait for it at most that long, have not
// moved on without it. A server whose poll is late looks at the version
// itself: if it has not moved, nothing was missed.
func (e *Engine) catalogFresh(ctx context.Context) error {
	m := e.cluster.member
	if m == nil {
		return nil
	}
	now := e.cluster.now()
	if m.Valid() && now.Sub(time.UnixMilli(e.cluster.polled.Load())) < m.Lease() {
		return nil
	}
	if v, err := readVersion(ctx, e.store); err == nil && v == e.cluster.loaded.Load() && m.Valid() {
		e.cluster.polled.Store(now.UnixMilli())
		return nil
	}
	e.kickRefresh()
	return mongoerr.New(mongoerr.NotWritablePrimary, "this server has lost touch with the store's catalog and takes no writes until it catches up")
}

// leaveCluster stops renewing the server's lease and takes it off the
// roster, so that the others need not wait it out.
func (e *Engine) leaveCluster() {
	if e.cluster.member == nil {
		return
	}
	e.cluster.stop()
	<-e.cluster.done
	e.cluster.builds.Wait()
	<-e.cluster.oplogDone
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.cluster.member.Leave(ctx); err != nil {
		e.log.Warn("engine: could not leave the roster; the others wait out the lease", zap.Error(err))
	}
}

// Member is this server's place on the roster of the servers sharing the
// store; nil when the store is not shared (pebble).
func (e *Engine) Member() *members.Member { return e.cluster.member }

// SetAdvertise publishes the address clients reach this server at.
func (e *Engine) SetAdvertise(ctx context.Context, addr string) error {
	m := e.cluster.member
	if m == nil {
		return nil
	}
	m.Update(func(r *members.Record) { r.Addr = addr })
	return m.Renew(ctx)
}

// Members reads the live records of the servers sharing the store: this
// one alone when the store is not shared.
func (e *Engine) Members(ctx context.Context) ([]members.Record, error) {
	if e.cluster.member == nil {
		return nil, nil
	}
	return e.cluster.roster.Live(ctx, e.store, e.cluster.now())
}

// catalogTxn is the transaction of a catalog change. On a shared store it
// holds the lock of the catalog's version and advances it, so that catalog
// changes are ordered across servers and every server can tell it is
// behind.
type catalogTxn struct {
	kv.Txn
	version uint64 // the version it commits; 0 when the store is not shared
}

// beginCatalog begins the transaction of a catalog change; reserve lets it
// commit on a low disk (see kv.TxnOptions.UseReserve). Catalog changes of
// one server are serialized by its own locks (see the package doc); on a
// shared store those of all servers also wait for the version's lock,
// which no holder keeps while it waits for anything else.
func (e *Engine) beginCatalog(ctx context.Context, reserve bool) (*catalogTxn, error) {
	tx, err := e.beginPlain(ctx, reserve)
	if err != nil {
		return nil, err
	}
	ct := &catalogTxn{Txn: tx}
	if e.cluster.member == nil {
		return ct, nil
	}
	key := record.CatalogVersionKey()
	if err := tx.LockKeys(ctx, kv.LockOptions{}, key); err != nil {
		tx.Rollback()
		return nil, fmt.Errorf("engine: lock the catalog's version: %w", err)
	}
	v, err := readVersion(ctx, tx)
	if err != nil {
		tx.Rollback()
		return nil, err
	}
	ct.version = v + 1
	if err := tx.Set(key, binary.BigEndian.AppendUint64(nil, ct.version)); err != nil {
		tx.Rollback()
		return nil, err
	}
	return ct, nil
}

// readVersion reads the catalog's version, 0 before the first change.
func readVersion(ctx context.Context, r kv.Reader) (uint64, error) {
	switch v, err := r.Get(ctx, record.CatalogVersionKey()); {
	case err == kv.ErrNotFound:
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("engine: read the catalog's version: %w", err)
	case len(v) != 8:
		return 0, fmt.Errorf("engine: catalog version of %d bytes", len(v))
	default:
		return binary.BigEndian.Uint64(v), nil
	}
}

// readMeta reads the stored catalog entry of db.name, with its bytes;
// kv.ErrNotFound when there is none.
func readMeta(ctx context.Context, r kv.Reader, db, name string) (collMeta, []byte, error) {
	raw, err := r.Get(ctx, record.CatalogKey(db, name))
	if err != nil {
		return collMeta{}, nil, err
	}
	var meta collMeta
	if err := bson.Unmarshal(raw, &meta); err != nil {
		return collMeta{}, nil, fmt.Errorf("engine: catalog entry of %s.%s: %w", db, name, err)
	}
	return meta, raw, nil
}

// storedMeta reads the catalog entry of st's collection as stored, under
// the catalog version's lock tx holds, and reports whether this server's
// is stale; st's own entry when the store is not shared. A collection
// another server dropped is NamespaceNotFound.
func (e *Engine) storedMeta(ctx context.Context, tx *catalogTxn, st *collState) (meta collMeta, stale bool, err error) {
	if tx.version == 0 {
		return st.meta, false, nil
	}
	meta, raw, err := readMeta(ctx, tx, st.meta.DB, st.meta.Name)
	switch {
	case err == kv.ErrNotFound || err == nil && meta.ID != st.meta.ID:
		e.kickRefresh()
		return meta, true, mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist: %s", st.ns())
	case err != nil:
		return meta, false, fmt.Errorf("engine: read the catalog entry of %s: %w", st.ns(), err)
	}
	stale = !sameMeta(raw, &st.meta)
	if stale {
		e.kickRefresh()
	}
	return meta, stale, nil
}

// sameMeta reports whether a stored catalog entry is meta.
func sameMeta(stored []byte, meta *collMeta) bool {
	raw, err := bson.Marshal(meta)
	return err == nil && bytes.Equal(raw, stored)
}

// ownedWorkStored reports whether an open collection has an index being
// built or a fence: work stored as a server's, whose lease is then worth a
// look (takeOverBuilds, clearOrphanFences).
func (e *Engine) ownedWorkStored() bool {
	for _, c := range e.openCollections() {
		st := c.st()
		if st.meta.Fence != "" || slices.ContainsFunc(st.meta.Indexes, func(im record.IndexMeta) bool { return im.Building }) {
			return true
		}
	}
	return false
}

// abandoned reports whether work stored as owner's (a roster id: an index
// build's builder, a fence's changing server) has no server running it:
// owner's lease has run out, or owner is this server and key is not among
// the work it runs (cluster.running). live are the roster's live ids.
func (e *Engine) abandoned(owner string, key any, live map[string]bool) bool {
	if !live[owner] {
		return true
	}
	if owner != e.cluster.member.ID() {
		return false
	}
	_, running := e.cluster.running.Load(key)
	return !running
}
