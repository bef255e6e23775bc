package pebblekv

import (
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/lethedb/lethe/engine/kv"
)

// txn is a kv.Txn on pebble. Its writes go to an unindexed pebble batch,
// which is what commits, and to a map that serves its own reads; reads of
// other keys go to a snapshot taken at Begin (optimistic, or pessimistic
// with SnapshotReads) or to the latest state (pessimistic, current reads).
//
// Commit: an optimistic transaction takes the locks of every key it
// writes without waiting (a key locked by another transaction is a
// conflict), then asks the oracle whether any of them was committed after
// its start. Every commit records its keys in the oracle under its new
// timestamp before its batch is applied, and releases its locks after,
// so a transaction that locks a key afterwards reads the write.
type txn struct {
	s     *Store
	opts  kv.TxnOptions
	start kv.Timestamp
	snap  *pebble.Snapshot // optimistic transactions only
	b     *pebble.Batch    // nil until the first write
	// writes are the pending writes: the value, or nil with deleted set.
	// Keys and values are copies in arena, which is only ever appended to.
	writes   writeSet
	arena    []byte
	addsData bool // some write is not a deletion (see Options.LogsDeletes)
	ls       lockSet
	done     bool
	// registered is a snapshot transaction known to the oracle's exact
	// history (TxnOptions.SnapshotReads).
	registered bool
}

type pending struct {
	key, value []byte
	deleted    bool
}

// Begin starts a transaction.
func (s *Store) Begin(ctx context.Context, o kv.TxnOptions) (kv.Txn, error) {
	if o.LockWait <= 0 {
		o.LockWait = kv.DefaultLockWait
	}
	t := &txn{s: s, opts: o}
	t.ls.t = s.locks
	switch {
	case o.Pessimistic && o.SnapshotReads:
		// The exact history starts at register; the snapshot is taken once
		// every commit before it is applied, so it holds all of them.
		t.start = s.oracle.register()
		t.registered = true
		if err := s.oracle.waitVisible(ctx, t.start); err != nil {
			t.Rollback()
			return nil, err
		}
		t.snap = s.db.NewSnapshot()
	case o.Pessimistic:
		t.start = s.oracle.visibleTS()
	default:
		t.start = s.oracle.visibleTS()
		t.snap = s.db.NewSnapshot()
	}
	return t, nil
}

func (t *txn) reader() pebble.Reader {
	if t.snap != nil {
		return t.snap
	}
	return t.s.db
}

func (t *txn) StartTS() kv.Timestamp { return t.start }

func (t *txn) Get(_ context.Context, key []byte) ([]byte, error) {
	if t.done {
		return nil, kv.ErrTxnDone
	}
	if p, ok := t.writes.get(key); ok {
		if p.deleted {
			return nil, kv.ErrNotFound
		}
		return append([]byte(nil), p.value...), nil
	}
	return get(t.reader(), key)
}

func (t *txn) Buffered(key []byte) ([]byte, bool) {
	p, ok := t.writes.get(key)
	if !ok {
		return nil, false
	}
	if p.deleted {
		return nil, true
	}
	return p.value, true
}

func (t *txn) Iter(ctx context.Context, lo, hi []byte, reverse bool) (kv.Iterator, error) {
	if t.done {
		return nil, kv.ErrTxnDone
	}
	base, err := newIter(ctx, t.reader(), lo, hi, reverse)
	if err != nil {
		return nil, err
	}
	own := t.pendingIn(lo, hi)
	if len(own) == 0 {
		return base, nil
	}
	return newMergeIter(base, own, reverse), nil
}

// maxBatchReserve caps the room a size hint reserves up front.
const maxBatchReserve = 16 << 20

func (t *txn) batch() *pebble.Batch {
	if t.b == nil {
		// A batch starts at a kilobyte and doubles as it fills: a
		// thousand-document insert allocated four times what it wrote.
		t.b = t.s.db.NewBatchWithSize(min(t.opts.SizeHint, maxBatchReserve))
	}
	return t.b
}

// note records a pending write, with copies of its key and value.
func (t *txn) note(key, value []byte, deleted bool) {
	p := pending{key: t.copy(key), deleted: deleted}
	if !deleted {
		if p.value = t.copy(value); p.value == nil {
			p.value = []byte{} // an empty value, not a delete
		}
	}
	t.writes.add(p)
}

// copy copies b into the arena: a few allocations per transaction rather
// than one per write. The arena's chunks start small and double, so that a
// one-document write allocates about what it writes.
func (t *txn) copy(b []byte) []byte {
	const minChunk, maxChunk = 512, 64 << 10
	if len(b) > maxChunk/4 {
		return append(make([]byte, 0, len(b)), b...)
	}
	if cap(t.arena)-len(t.arena) < len(b) {
		size := min(max(2*cap(t.arena), minChunk), maxChunk)
		t.arena = make([]byte, 0, max(size, len(b)))
	}
	n := len(t.arena)
	t.arena = append(t.arena, b...)
	return t.arena[n:len(t.arena):len(t.arena)]
}

func (t *txn) Set(key, value []byte) error {
	if t.done {
		return kv.ErrTxnDone
	}
	if err := t.batch().Set(key, value, nil); err != nil {
		return fmt.Errorf("pebblekv: set: %w", err)
	}
	t.note(key, value, false)
	if !t.addsData && !t.s.opts.LogsDeletes(key) {
		t.addsData = true
	}
	return nil
}

func (t *txn) Delete(key []byte) error {
	if t.done {
		return kv.ErrTxnDone
	}
	if err := t.batch().Delete(key, nil); err != nil {
		return fmt.Errorf("pebblekv: delete: %w", err)
	}
	t.note(key, nil, true)
	return nil
}

func (t *txn) Size() int {
	if t.b == nil {
		return 0
	}
	return t.b.Len()
}

func (t *txn) Empty() bool { return t.b == nil || t.b.Empty() }

func (t *txn) LockKeys(ctx context.Context, o kv.LockOptions, keys ...[]byte) error {
	if t.done {
		return kv.ErrTxnDone
	}
	if !t.opts.Pessimistic {
		return fmt.Errorf("pebblekv: LockKeys in an optimistic transaction")
	}
	// The lock set sorts what it takes: a copy, not the caller's slice.
	var small [8][]byte
	keys = append(small[:0], keys...)
	var ok bool
	switch {
	case len(t.ls.held) == 0 && !o.NoWait:
		ok = t.ls.lockAll(ctx, keys, t.opts.LockWait)
	case t.ls.tryAdd(keys):
		ok = true
	case o.NoWait:
		return kv.ErrLocked
	default:
		// Holding some and waiting for more could wait in a cycle; wait
		// only as long as the bound, and fail then.
		ok = t.ls.waitAdd(ctx, keys, t.opts.LockWait)
	}
	if !ok {
		if err := ctx.Err(); err != nil {
			return err
		}
		return &kv.ConflictError{Reason: fmt.Sprintf("lock wait passed %v", t.opts.LockWait)}
	}
	if t.registered {
		// Locked now, a key can no longer change; it conflicts if it
		// changed after the snapshot.
		for _, k := range keys {
			if t.s.oracle.committedSince(k, t.start) {
				return &kv.ConflictError{Key: append([]byte(nil), k...), Reason: "committed by another transaction after this one started"}
			}
		}
	}
	return nil
}

func (t *txn) Locked(key []byte) bool { return t.ls.has(key) }

func (t *txn) Commit(ctx context.Context, d kv.Durability) (kv.Timestamp, error) {
	if t.done {
		return 0, kv.ErrTxnDone
	}
	defer t.Rollback()
	if t.Empty() {
		return t.s.oracle.visibleTS(), nil
	}
	var small [16]uint32
	buckets := small[:0]
	var keys [][]byte
	if !t.opts.Pessimistic {
		keys = make([][]byte, 0, t.writes.len())
	}
	// A key written twice appears twice: its lock is taken once, its
	// bucket and its commit recorded twice alike, and that costs less
	// than finding each key's last write.
	t.writes.each(func(p pending) {
		buckets = append(buckets, t.s.oracle.bucket(p.key))
		if keys != nil {
			keys = append(keys, p.key)
		}
	})
	if !t.opts.Pessimistic {
		// Take the lock of every written key without waiting: one held by
		// another transaction is a conflict, as a lock met at prewrite.
		if !t.ls.tryAdd(keys) {
			return 0, &kv.ConflictError{Reason: "a key it writes is locked by another transaction"}
		}
	}
	ts, bad := t.s.oracle.reserve(buckets, !t.opts.Pessimistic, t.start, t.eachKey)
	if bad >= 0 {
		return 0, &kv.ConflictError{Key: append([]byte(nil), keys[bad]...), Reason: "committed by another transaction after this one started"}
	}
	opts := pebble.Sync
	if d == kv.NoSync {
		opts = pebble.NoSync
	}
	err := t.s.disk.commit(t.b, t.addsData && !t.opts.UseReserve, opts)
	t.s.oracle.applied(ts)
	if err != nil {
		return 0, err
	}
	return ts, nil
}

func (t *txn) Rollback() {
	if t.done {
		return
	}
	t.done = true
	if t.b != nil {
		t.b.Close()
		t.b = nil
	}
	if t.snap != nil {
		t.snap.Close()
		t.snap = nil
	}
	t.writes, t.arena = writeSet{}, nil
	t.ls.unlockAll()
	if t.registered {
		t.s.oracle.unregister(t.start)
		t.registered = false
	}
}

// eachKey walks the keys the transaction writes, a key written twice
// twice.
func (t *txn) eachKey(fn func([]byte)) { t.writes.each(func(p pending) { fn(p.key) }) }
