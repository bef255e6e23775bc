package kvtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/lethedb/lethe/engine/kv"
)

// Contract wraps s so that every call is checked against the kv contract:
// arguments (ordered bounds, non-empty keys, no seek on a reverse
// iterator, no use of a closed iterator or a finished transaction) and
// results (iterators that stay in their bounds and order, error kinds,
// timestamps). A violation panics with a message starting "kv contract:",
// so that a test fails where it happened. The engine's tests open their
// stores through it.
func Contract(s kv.Store) kv.Store {
	return &store{s: s}
}

type store struct {
	s     kv.Store
	iters atomic.Int64 // open iterators
	txns  atomic.Int64 // open transactions
}

func violated(format string, args ...any) {
	panic("kv contract: " + fmt.Sprintf(format, args...))
}

// Unwrap returns the checked store (kv.Unwrap).
func (c *store) Unwrap() kv.Store { return c.s }

func checkKey(op string, key []byte) {
	if len(key) == 0 {
		violated("%s with an empty key", op)
	}
}

// checkErr allows nil, the kinds listed, and errors that are none of the
// kv kinds (a backend's own failure).
func checkErr(op string, err error, allowed ...error) {
	if err == nil {
		return
	}
	for _, a := range allowed {
		if errors.Is(err, a) {
			return
		}
	}
	for _, kind := range []error{kv.ErrNotFound, kv.ErrConflict, kv.ErrSnapshotTooOld, kv.ErrTxnDone} {
		if errors.Is(err, kind) {
			violated("%s returned %v, an error kind it may not return", op, err)
		}
	}
}

func (c *store) Get(ctx context.Context, key []byte) ([]byte, error) {
	checkKey("Store.Get", key)
	v, err := c.s.Get(ctx, key)
	checkErr("Store.Get", err, kv.ErrNotFound)
	return v, err
}

func (c *store) Iter(ctx context.Context, lo, hi []byte, reverse bool) (kv.Iterator, error) {
	return c.iter("Store.Iter", ctx, c.s, lo, hi, reverse)
}

func (c *store) iter(op string, ctx context.Context, r kv.Reader, lo, hi []byte, reverse bool) (kv.Iterator, error) {
	if hi != nil && bytes.Compare(lo, hi) > 0 {
		violated("%s with lo %q above hi %q", op, lo, hi)
	}
	it, err := r.Iter(ctx, lo, hi, reverse)
	checkErr(op, err)
	if err != nil {
		return nil, err
	}
	c.iters.Add(1)
	return &iterator{c: c, it: it, lo: lo, hi: hi, reverse: reverse}, nil
}

func (c *store) Begin(ctx context.Context, o kv.TxnOptions) (kv.Txn, error) {
	if o.SnapshotReads && !o.Pessimistic {
		violated("SnapshotReads without Pessimistic: an optimistic transaction reads its snapshot already")
	}
	tx, err := c.s.Begin(ctx, o)
	checkErr("Store.Begin", err)
	if err != nil {
		return nil, err
	}
	c.txns.Add(1)
	return &txn{c: c, tx: tx, opts: o}, nil
}

func (c *store) Snapshot(ctx context.Context) (kv.Snapshot, error) {
	snap, err := c.s.Snapshot(ctx)
	checkErr("Store.Snapshot", err, kv.ErrSnapshotTooOld)
	if err != nil {
		return nil, err
	}
	return &snapshot{c: c, snap: snap}, nil
}

// View checks a view as a snapshot: the two differ only in cost.
func (c *store) View(ctx context.Context) (kv.Snapshot, error) {
	snap, err := kv.View(ctx, c.s)
	checkErr("Store.View", err)
	if err != nil {
		return nil, err
	}
	return &snapshot{c: c, snap: snap}, nil
}

func (c *store) Now(ctx context.Context) (kv.Timestamp, error) {
	ts, err := c.s.Now(ctx)
	checkErr("Store.Now", err)
	return ts, err
}

func (c *store) DropRange(ctx context.Context, lo, hi []byte) error {
	if hi == nil || bytes.Compare(lo, hi) >= 0 {
		violated("DropRange of an empty or unbounded range [%q, %q)", lo, hi)
	}
	err := c.s.DropRange(ctx, lo, hi)
	checkErr("Store.DropRange", err)
	return err
}

func (c *store) ApproximateSize(ctx context.Context, lo, hi []byte) (int64, error) {
	n, err := c.s.ApproximateSize(ctx, lo, hi)
	checkErr("Store.ApproximateSize", err)
	if err == nil && n < 0 {
		violated("ApproximateSize returned %d", n)
	}
	return n, err
}

func (c *store) Close() error {
	if n := c.iters.Load(); n != 0 {
		violated("the store closes with %d iterators open", n)
	}
	if n := c.txns.Load(); n != 0 {
		violated("the store closes with %d transactions neither committed nor rolled back", n)
	}
	return c.s.Close()
}

type snapshot struct {
	c      *store
	snap   kv.Snapshot
	closed bool
}

func (s *snapshot) Get(ctx context.Context, key []byte) ([]byte, error) {
	if s.closed {
		violated("Get on a closed snapshot")
	}
	checkKey("Snapshot.Get", key)
	v, err := s.snap.Get(ctx, key)
	checkErr("Snapshot.Get", err, kv.ErrNotFound)
	return v, err
}

func (s *snapshot) Iter(ctx context.Context, lo, hi []byte, reverse bool) (kv.Iterator, error) {
	if s.closed {
		violated("Iter on a closed snapshot")
	}
	return s.c.iter("Snapshot.Iter", ctx, s.snap, lo, hi, reverse)
}

func (s *snapshot) TS() kv.Timestamp { return s.snap.TS() }

func (s *snapshot) Close() error {
	if s.closed {
		violated("a snapshot closed twice")
	}
	s.closed = true
	return s.snap.Close()
}

type txn struct {
	c     *store
	tx    kv.Txn
	opts  kv.TxnOptions
	done  bool
	start kv.Timestamp
}

func (t *txn) live(op string) {
	if t.done {
		// The backend must say ErrTxnDone; the wrapper lets the call
		// through to check that it does.
		return
	}
	if t.start == 0 {
		t.start = t.tx.StartTS()
	}
}

func (t *txn) Get(ctx context.Context, key []byte) ([]byte, error) {
	t.live("Txn.Get")
	checkKey("Txn.Get", key)
	v, err := t.tx.Get(ctx, key)
	t.checkDone("Txn.Get", err, kv.ErrNotFound)
	if err == nil || errors.Is(err, kv.ErrNotFound) {
		if bv, ok := t.tx.Buffered(key); ok && (bv == nil) != (err != nil) {
			violated("Txn.Get of %q disagrees with its own pending write", key)
		}
	}
	return v, err
}

func (t *txn) Iter(ctx context.Context, lo, hi []byte, reverse bool) (kv.Iterator, error) {
	t.live("Txn.Iter")
	if t.done {
		_, err := t.tx.Iter(ctx, lo, hi, reverse)
		t.checkDone("Txn.Iter", err)
		return nil, err
	}
	return t.c.iter("Txn.Iter", ctx, t.tx, lo, hi, reverse)
}

// checkDone checks a call on a finished transaction failed with
// ErrTxnDone, and other calls' errors are of the kinds allowed.
func (t *txn) checkDone(op string, err error, allowed ...error) {
	if t.done {
		if !errors.Is(err, kv.ErrTxnDone) {
			violated("%s on a finished transaction returned %v, not ErrTxnDone", op, err)
		}
		return
	}
	checkErr(op, err, allowed...)
}

func (t *txn) Set(key, value []byte) error {
	t.live("Txn.Set")
	checkKey("Txn.Set", key)
	err := t.tx.Set(key, value)
	t.checkDone("Txn.Set", err)
	return err
}

func (t *txn) Delete(key []byte) error {
	t.live("Txn.Delete")
	checkKey("Txn.Delete", key)
	err := t.tx.Delete(key)
	t.checkDone("Txn.Delete", err)
	return err
}

func (t *txn) Buffered(key []byte) ([]byte, bool) { return t.tx.Buffered(key) }

func (t *txn) LockKeys(ctx context.Context, o kv.LockOptions, keys ...[]byte) error {
	t.live("Txn.LockKeys")
	if !t.opts.Pessimistic {
		violated("LockKeys in an optimistic transaction")
	}
	for _, k := range keys {
		checkKey("Txn.LockKeys", k)
	}
	err := t.tx.LockKeys(ctx, o, keys...)
	if err != nil && ctx.Err() != nil {
		return err
	}
	t.checkDone("Txn.LockKeys", err, kv.ErrConflict)
	if err == nil && !t.done {
		for _, k := range keys {
			if !t.tx.Locked(k) {
				violated("LockKeys succeeded but %q is not locked", k)
			}
		}
	}
	return err
}

func (t *txn) Locked(key []byte) bool { return t.tx.Locked(key) }
func (t *txn) Size() int              { return t.tx.Size() }
func (t *txn) Empty() bool            { return t.tx.Empty() }
func (t *txn) StartTS() kv.Timestamp  { return t.tx.StartTS() }

func (t *txn) Commit(ctx context.Context, d kv.Durability) (kv.Timestamp, error) {
	t.live("Txn.Commit")
	wasDone := t.done
	empty := !t.done && t.tx.Empty()
	ts, err := t.tx.Commit(ctx, d)
	t.checkDone("Txn.Commit", err, kv.ErrConflict)
	if !wasDone {
		t.done = true
		t.c.txns.Add(-1)
		if err == nil && !empty && ts <= t.start {
			violated("a commit at %d is not after its start at %d", ts, t.start)
		}
	}
	return ts, err
}

func (t *txn) Rollback() {
	t.tx.Rollback()
	if !t.done {
		t.done = true
		t.c.txns.Add(-1)
	}
}

type iterator struct {
	c       *store
	it      kv.Iterator
	lo, hi  []byte
	reverse bool
	valid   bool
	closed  bool
	last    []byte
}

func (i *iterator) check(op string) {
	if i.closed {
		violated("%s on a closed iterator", op)
	}
}

// moved checks the new position: inside the bounds and past the last key
// in the walk's direction.
func (i *iterator) moved(op string, ok bool, first bool) bool {
	i.valid = ok
	if !ok {
		return false
	}
	k := i.it.Key()
	if bytes.Compare(k, i.lo) < 0 || (i.hi != nil && bytes.Compare(k, i.hi) >= 0) {
		violated("%s moved to %q, outside [%q, %q)", op, k, i.lo, i.hi)
	}
	if !first && i.last != nil {
		c := bytes.Compare(k, i.last)
		if (!i.reverse && c <= 0) || (i.reverse && c >= 0) {
			violated("%s moved from %q to %q, against its direction", op, i.last, k)
		}
	}
	i.last = append(i.last[:0], k...)
	return true
}

func (i *iterator) First() bool {
	i.check("First")
	return i.moved("First", i.it.First(), true)
}

func (i *iterator) SeekGE(key []byte) bool {
	i.check("SeekGE")
	if i.reverse {
		violated("SeekGE on a reverse iterator")
	}
	ok := i.it.SeekGE(key)
	if ok && bytes.Compare(i.it.Key(), key) < 0 {
		violated("SeekGE(%q) moved to %q, before it", key, i.it.Key())
	}
	return i.moved("SeekGE", ok, true)
}

func (i *iterator) Next() bool {
	i.check("Next")
	if !i.valid {
		violated("Next on an iterator that is not on a key")
	}
	return i.moved("Next", i.it.Next(), false)
}

func (i *iterator) Key() []byte {
	i.check("Key")
	if !i.valid {
		violated("Key on an iterator that is not on a key")
	}
	return i.it.Key()
}

func (i *iterator) Value() []byte {
	i.check("Value")
	if !i.valid {
		violated("Value on an iterator that is not on a key")
	}
	return i.it.Value()
}

func (i *iterator) Error() error { return i.it.Error() }

func (i *iterator) Close() error {
	if i.closed {
		violated("an iterator closed twice")
	}
	i.closed = true
	i.c.iters.Add(-1)
	return i.it.Close()
}
