package tikvkv

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/pingcap/kvproto/pkg/kvrpcpb"
	tikverr "github.com/tikv/client-go/v2/error"
	ckv "github.com/tikv/client-go/v2/kv"
	"github.com/tikv/client-go/v2/tikv"
	"github.com/tikv/client-go/v2/tikvrpc"
	"github.com/tikv/client-go/v2/tikvrpc/interceptor"
	"github.com/tikv/client-go/v2/txnkv/transaction"
	"github.com/tikv/client-go/v2/txnkv/txnsnapshot"

	"github.com/lethedb/lethe/engine/kv"
)

// txn is a kv.Txn on a client-go transaction. Its writes go to client-go's
// buffer (the MemDB), which also holds the flags of the keys it locked;
// reads merge that buffer over a snapshot: the start timestamp's, or for
// current reads a fresh timestamp's.
type txn struct {
	s      *Store
	tx     *transaction.KVTxn
	opts   kv.TxnOptions
	start  uint64
	writes int // Set and Delete calls
	size   int // bytes of keys (prefixed) and values given to them
	done   bool
	locked bool // some LockKeys succeeded
	watch  *lockWatch
	// chunks holds, for the keys whose stored state the transaction
	// knows (it read them, or they are its own writes), how many chunk
	// keys each has in its view: those to delete when a shorter value or
	// a delete replaces it. blind are the keys it wrote without knowing:
	// Commit reads what they held and deletes their chunks then.
	chunks map[string]int
	blind  map[string]struct{}
	// stray are keys (prefixed) of LockKeys calls that failed: client-go
	// may have locked some of them and rolls those back asynchronously,
	// so Commit releases them itself first (releaseUnwritten).
	stray map[string]struct{}
}

// Begin starts a transaction at a fresh TSO timestamp.
func (s *Store) Begin(ctx context.Context, o kv.TxnOptions) (kv.Txn, error) {
	if o.LockWait <= 0 {
		o.LockWait = kv.DefaultLockWait
	}
	start, err := s.now(ctx)
	if err != nil {
		return nil, err
	}
	t := &txn{s: s, opts: o, chunks: map[string]int{}, blind: map[string]struct{}{}, stray: map[string]struct{}{}}
	if err := t.begin(start); err != nil {
		return nil, err
	}
	return t, nil
}

// begin starts the client-go transaction at start.
func (t *txn) begin(start uint64) error {
	tx, err := t.s.kv.Begin(tikv.WithStartTS(start))
	if err != nil {
		return wrapErr("begin", err)
	}
	tx.SetPessimistic(t.opts.Pessimistic)
	w := &lockWatch{}
	if !t.opts.Pessimistic {
		tx.SetRPCInterceptor(w.intercept)
	}
	t.tx, t.start, t.watch = tx, start, w
	clear(t.stray)
	return nil
}

// lockWatch makes a commit that meets another transaction's live lock fail
// as a conflict instead of waiting it out, as kv says. Client-go's
// prewrite, on a lock, first resolves it: it asks the lock's primary for
// its transaction's status (CheckTxnStatus), and a dead transaction's lock
// is rolled back or committed and the prewrite goes on. A live one makes
// the prewrite back off and retry until the holder ends, for up to its
// backoff budget (minutes). The watch sees the status answer "alive" go by
// while the commit prewrites, and cancels the commit's context, which the
// backoff checks before it sleeps: the prewrite fails, client-go rolls
// its prewrites back (on the store's own context), and Commit reports a
// conflict. Once a commit request is sent the watch does nothing, so the
// commit phase is never cut short.
//
// Only optimistic transactions are watched. A pessimistic one holds the
// locks of the keys others may write; the keys it writes unlocked are, by
// kv's contract, derived from those, and a lock met on one is another
// transaction's commit in flight (two catalog changes writing the id
// sequence, say), which TiKV has it wait out, briefly, and never checks
// for conflicts, as pebble does not.
type lockWatch struct {
	cancel     atomic.Pointer[context.CancelFunc] // the running commit's, if prewriting
	committing atomic.Bool                        // a commit request went out
	liveLock   atomic.Bool                        // the watch cancelled the commit
}

func (w *lockWatch) intercept(next interceptor.RPCInterceptorFunc) interceptor.RPCInterceptorFunc {
	return func(target string, req *tikvrpc.Request) (*tikvrpc.Response, error) {
		if req.Type == tikvrpc.CmdCommit {
			w.committing.Store(true)
		}
		resp, err := next(target, req)
		if err != nil || req.Type != tikvrpc.CmdCheckTxnStatus || resp == nil || w.committing.Load() {
			return resp, err
		}
		cancel := w.cancel.Load()
		if st, ok := resp.Resp.(*kvrpcpb.CheckTxnStatusResponse); ok && cancel != nil && st.GetLockTtl() > 0 {
			w.liveLock.Store(true)
			(*cancel)()
		}
		return resp, err
	}
}

func (t *txn) StartTS() kv.Timestamp { return kv.Timestamp(t.start) }

// currentReads: a pessimistic transaction without SnapshotReads reads the
// latest state.
func (t *txn) currentReads() bool { return t.opts.Pessimistic && !t.opts.SnapshotReads }

// reader is the snapshot the transaction reads at now.
func (t *txn) reader(ctx context.Context) (*txnsnapshot.KVSnapshot, error) {
	if !t.currentReads() {
		return t.tx.GetSnapshot(), nil
	}
	ts, err := t.s.now(ctx)
	if err != nil {
		return nil, err
	}
	return t.s.kv.GetSnapshot(ts), nil
}

func (t *txn) Get(ctx context.Context, key []byte) ([]byte, error) {
	if t.done {
		return nil, kv.ErrTxnDone
	}
	if v, ok := t.Buffered(key); ok {
		if v == nil {
			return nil, kv.ErrNotFound
		}
		return append([]byte{}, v...), nil
	}
	snap, err := t.reader(ctx)
	if err != nil {
		return nil, err
	}
	v, n, err := getHead(ctx, t.s.k, snap, key)
	if err != nil && err != kv.ErrNotFound {
		return nil, err
	}
	// A current read of a key it has not locked may be stale by the time
	// the transaction writes the key; any other read is what it writes
	// over.
	if !t.currentReads() || t.Locked(key) {
		t.chunks[string(key)] = n
	}
	if err != nil {
		return nil, err
	}
	return bytes.Clone(v), nil
}

func (t *txn) Buffered(key []byte) ([]byte, bool) {
	mem := t.tx.GetMemBuffer()
	stored, err := mem.Get(t.s.k.in(key))
	if err != nil {
		return nil, false
	}
	if len(stored) == 0 { // client-go's tombstone
		return nil, true
	}
	v, err := bufferedValue(mem, t.s.k, key, stored)
	if err != nil {
		// The transaction writes a head and its chunks together: a
		// missing chunk is a bug of this package.
		panic(err)
	}
	return v, true
}

func (t *txn) Iter(ctx context.Context, lo, hi []byte, reverse bool) (kv.Iterator, error) {
	if t.done {
		return nil, kv.ErrTxnDone
	}
	snap, err := t.reader(ctx)
	if err != nil {
		return nil, err
	}
	return newIter(ctx, t.s.k, snap, t.tx.GetMemBuffer(), lo, hi, reverse)
}

// Set buffers value under key, or, if it is longer than chunkSize, its
// chunks under their keys and their head under key.
func (t *txn) Set(key, value []byte) error {
	if t.done {
		return kv.ErrTxnDone
	}
	pk := t.s.k.in(key)
	n := chunkCount(value)
	stored := encodeValue(value)
	if n > 0 {
		for i := 0; i < n; i++ {
			ck := t.s.k.chunk(key, i)
			if err := t.tx.Set(ck, value[i*chunkSize:min(len(value), (i+1)*chunkSize)]); err != nil {
				return wrapErr("set", err)
			}
			t.size += len(ck)
		}
		stored = encodeHead(len(value), n)
	}
	if err := t.tx.Set(pk, stored); err != nil {
		return wrapErr("set", err)
	}
	t.writes++
	t.size += len(pk) + len(value)
	return t.replaced(key, n)
}

func (t *txn) Delete(key []byte) error {
	if t.done {
		return kv.ErrTxnDone
	}
	pk := t.s.k.in(key)
	if err := t.tx.Delete(pk); err != nil {
		return wrapErr("delete", err)
	}
	t.writes++
	t.size += len(pk)
	return t.replaced(key, 0)
}

// replaced deletes the chunks of key's former value beyond the n its new
// one has, if the transaction knows them; else Commit will.
func (t *txn) replaced(key []byte, n int) error {
	old, ok := t.chunks[string(key)]
	if !ok {
		t.blind[string(key)] = struct{}{}
	}
	for i := n; i < old; i++ {
		if err := t.tx.Delete(t.s.k.chunk(key, i)); err != nil {
			return wrapErr("delete", err)
		}
	}
	t.chunks[string(key)] = n
	return nil
}

// dropBlindChunks deletes the chunks of what the keys the transaction
// wrote blind held, beyond those of their new values: it reads their
// heads, all at once, at the transaction's start (or, for current reads,
// now). The read is read-committed: it waits for no lock, for waiting on
// (and resolving) the locks of commits in flight costs every commit, where
// what it can miss costs little: a key changed after the start is a
// conflict of the head (or, written unlocked by a pessimistic transaction,
// one no other writes, by kv's contract); a commit whose lock on the key
// is not yet resolved is one whose chunks beyond the new value's stay,
// unread (a head says how many chunks its value has), until the key's
// range is dropped or a value with as many chunks replaces them.
func (t *txn) dropBlindChunks(ctx context.Context) error {
	if len(t.blind) == 0 {
		return nil
	}
	ts := t.start
	if t.currentReads() {
		var err error
		if ts, err = t.s.now(ctx); err != nil {
			return err
		}
	}
	snap := t.s.kv.GetSnapshot(ts)
	snap.SetIsolationLevel(txnsnapshot.RC)
	pks := make([][]byte, 0, len(t.blind))
	for key := range t.blind {
		pks = append(pks, t.s.k.in([]byte(key)))
	}
	const group = 256 // bounds the answer: the heads may be values
	for from := 0; from < len(pks); from += group {
		got, err := snap.BatchGet(ctx, pks[from:min(from+group, len(pks))])
		if err != nil {
			return wrapErr("commit", err)
		}
		for pk, stored := range got {
			h, err := decodeHead(stored)
			if err != nil || h.chunks == 0 {
				continue
			}
			key := t.s.k.out([]byte(pk))
			for i := t.chunks[string(key)]; i < h.chunks; i++ {
				if err := t.tx.Delete(t.s.k.chunk(key, i)); err != nil {
					return wrapErr("commit", err)
				}
			}
		}
	}
	clear(t.blind)
	return nil
}

func (t *txn) Size() int   { return t.size }
func (t *txn) Empty() bool { return t.writes == 0 }

func (t *txn) Locked(key []byte) bool {
	f, err := t.tx.GetMemBuffer().GetFlags(t.s.k.in(key))
	return err == nil && f.HasLocked()
}

// LockKeys takes TiKV pessimistic locks. A snapshot transaction locks at
// for_update_ts = its start, so that a key committed since is a write
// conflict. Otherwise each attempt locks at a fresh timestamp, and a write
// conflict (the key was committed after that timestamp, typically by the
// holder it waited for) is an attempt at a fresh one, within the wait
// bound: the transaction reads the key's latest value once it holds it.
//
// A current-read transaction that holds no lock and has buffered nothing
// yet starts again at its first lock's for_update_ts. Its reads are at
// fresh timestamps anyway, so nothing it did depends on its start; what
// changes is the start its prewrite carries. TiKV does not check a
// pessimistic transaction's keys against its start at prewrite, but
// client-go's mock does (against the start, for every key), and would fail
// the commit of a key committed by another between Begin and the lock.
// The engine locks first, so this keeps the mock's spurious conflicts to
// keys locked by a later LockKeys call.
//
// On the mock, a later LockKeys (the transaction holds locks, so cannot
// move its start) locks at for_update_ts = the start, as a snapshot
// transaction does: a key committed since is a conflict at the lock,
// which a caller holding locks meets anyway (it commits what it has and
// locks afresh), rather than at a commit the mock would refuse after the
// caller wrote under the lock.
func (t *txn) LockKeys(ctx context.Context, o kv.LockOptions, keys ...[]byte) error {
	if t.done {
		return kv.ErrTxnDone
	}
	if !t.opts.Pessimistic {
		return fmt.Errorf("tikvkv: LockKeys in an optimistic transaction")
	}
	pkeys := make([][]byte, len(keys))
	for i, k := range keys {
		pkeys[i] = t.s.k.in(k)
	}
	began := time.Now()
	atStart := t.opts.SnapshotReads || (t.s.startChecked && t.locked)
	if atStart && !t.opts.SnapshotReads && t.retriesStray(pkeys) {
		return &kv.ConflictError{Reason: "an earlier lock request of the key may still be rolling back"}
	}
	for {
		forUpdate := t.start
		if !atStart {
			ts, err := t.s.now(ctx)
			if err != nil {
				return err
			}
			forUpdate = ts
			if !t.locked && t.writes == 0 {
				_ = t.tx.Rollback() // holds nothing: no RPC
				if err := t.begin(ts); err != nil {
					return err
				}
			}
		}
		wait := ckv.LockNoWait
		if !o.NoWait {
			left := t.opts.LockWait - time.Since(began)
			if dl, ok := ctx.Deadline(); ok {
				left = min(left, time.Until(dl))
			}
			if left <= 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
				return t.waitPassed()
			}
			wait = max(1, left.Milliseconds())
		}
		err := t.tx.LockKeys(ctx, ckv.NewLockCtx(forUpdate, wait, time.Now()), pkeys...)
		if err == nil {
			t.locked = true
			return nil
		}
		for _, pk := range pkeys {
			t.stray[string(pk)] = struct{}{}
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if !atStart && tikverr.IsErrWriteConflict(err) && time.Since(began) < t.opts.LockWait {
			continue
		}
		return t.s.mapErr("lock", err)
	}
}

// retriesStray reports whether a key of pkeys failed an earlier LockKeys
// of the transaction and is not held. Client-go rolls the locks of a
// failed request back asynchronously, up to its for_update_ts, so a lock
// taken again at the start could be rolled back under the transaction;
// a lock at a fresh timestamp, newer than the rollback's, cannot.
func (t *txn) retriesStray(pkeys [][]byte) bool {
	mem := t.tx.GetMemBuffer()
	for _, pk := range pkeys {
		if _, ok := t.stray[string(pk)]; !ok {
			continue
		}
		if f, err := mem.GetFlags(pk); err != nil || !f.HasLocked() {
			return true
		}
	}
	return false
}

func (t *txn) waitPassed() error {
	return &kv.ConflictError{Reason: fmt.Sprintf("lock wait passed %v", t.opts.LockWait)}
}

// Commit runs client-go's two-phase commit and returns its commit
// timestamp. Both durabilities commit alike: a TiKV commit is replicated
// before it is acknowledged.
func (t *txn) Commit(ctx context.Context, _ kv.Durability) (kv.Timestamp, error) {
	if t.done {
		return 0, kv.ErrTxnDone
	}
	if t.writes == 0 {
		// Nothing to store: release the locks, and answer a timestamp as
		// new as anything the transaction read.
		t.Rollback()
		ts, err := t.s.now(ctx)
		return kv.Timestamp(ts), err
	}
	if err := t.dropBlindChunks(ctx); err != nil {
		t.Rollback()
		return 0, err
	}
	if t.currentReads() && !t.locked {
		if err := t.restartForCommit(ctx); err != nil {
			t.Rollback()
			return 0, err
		}
	}
	if err := t.releaseUnwritten(ctx); err != nil {
		t.Rollback()
		return 0, err
	}
	t.done = true
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t.watch.cancel.Store(&cancel)
	err := t.tx.Commit(cctx)
	t.watch.cancel.Store(nil)
	if err != nil {
		if t.watch.liveLock.Load() && ctx.Err() == nil {
			return 0, &kv.ConflictError{Reason: "a key it writes is locked by another transaction"}
		}
		return 0, t.s.mapErr("commit", err)
	}
	// The probe is client-go's exported view of the transaction's commit
	// timestamp, which KVTxn itself does not offer.
	return kv.Timestamp(transaction.TxnProbe{KVTxn: t.tx}.GetCommitTS()), nil
}

// releaseUnwritten releases, before the commit, the pessimistic locks
// the transaction holds on keys it writes nothing to, its primary key
// aside, and those a failed LockKeys may have left behind. Client-go would
// commit the first as Lock records, which TiKV counts as a change of the
// key: a transaction that started before this one committed and then
// locks such a key would get a write conflict, for a key nothing changed
// (an insert that found its _id taken, an update that changed nothing),
// where MongoDB has none. The primary key stays: the commit hangs on it.
//
// They are released before the commit, never after: a pessimistic lock of
// a committed transaction is not a state TiKV's protocol knows. Client-go
// commits the secondary keys after the primary, asynchronously, and a
// reader that meets one resolves the transaction's locks of the whole
// region; client-go's mock then commits every lock of the transaction
// there, a pessimistic one as a deletion, deleting a key the transaction
// never wrote (an index entry it only checked). A key whose lock is not
// known to be released is committed as a Lock record after all; a stray
// one, which the transaction does not hold, fails the commit instead.
func (t *txn) releaseUnwritten(ctx context.Context) error {
	if !t.opts.Pessimistic {
		return nil
	}
	if !t.locked && len(t.stray) == 0 {
		return nil
	}
	// Any LockKeys call made the committer.
	primary := transaction.TxnProbe{KVTxn: t.tx}.GetCommitter().GetPrimaryKey()
	mem := t.tx.GetMemBuffer()
	var held [][]byte
	if t.locked {
		for it := mem.IterWithFlags(nil, nil); it.Valid(); {
			if !it.HasValue() && it.Flags().HasLocked() && !bytes.Equal(it.Key(), primary) {
				held = append(held, bytes.Clone(it.Key()))
			}
			if err := it.Next(); err != nil {
				held = nil // then commit them as client-go would
				break
			}
		}
	}
	var stray [][]byte
	for pk := range t.stray {
		k := []byte(pk)
		if bytes.Equal(k, primary) {
			continue
		}
		if f, err := mem.GetFlags(k); err == nil && f.HasLocked() {
			continue // locked by a later call: held, or written
		}
		if _, err := mem.Get(k); err == nil {
			continue // written: its prewrite takes over the lock
		}
		stray = append(stray, k)
	}
	clear(t.stray)
	if len(held) == 0 && len(stray) == 0 {
		return nil
	}
	for _, k := range held {
		mem.UpdateFlags(k, ckv.DelKeyLocked)
	}
	for _, k := range t.pessimisticRollback(ctx, append(held, stray...)) {
		if f, err := mem.GetFlags(k); err == nil && !f.HasLocked() && slices.ContainsFunc(held, func(h []byte) bool { return bytes.Equal(h, k) }) {
			mem.UpdateFlags(k, ckv.SetKeyLocked)
			continue
		}
		return wrapErr("commit", fmt.Errorf("a lock left by a failed lock request could not be released (key %q)", t.s.k.out(k)))
	}
	return nil
}

// pessimisticRollback releases the transaction's pessimistic locks of keys
// (prefixed), as client-go's lock resolver releases those of a finished
// transaction, and returns those it could not tell released.
func (t *txn) pessimisticRollback(ctx context.Context, keys [][]byte) (failed [][]byte) {
	bo := tikv.NewBackofferWithVars(ctx, 2000, nil)
	for _, key := range keys {
		released := false
		for attempt := 0; attempt < 3 && !released; attempt++ {
			loc, err := t.s.kv.GetRegionCache().LocateKey(bo, key)
			if err != nil {
				break
			}
			req := tikvrpc.NewRequest(tikvrpc.CmdPessimisticRollback, &kvrpcpb.PessimisticRollbackRequest{
				StartVersion: t.start, ForUpdateTs: math.MaxUint64, Keys: [][]byte{key},
			})
			resp, err := t.s.kv.SendReq(bo, req, loc.Region, 10*time.Second)
			if err != nil {
				break
			}
			rerr, err := resp.GetRegionError()
			if err != nil {
				break
			}
			if rerr != nil {
				t.s.kv.GetRegionCache().InvalidateCachedRegion(loc.Region)
				continue
			}
			r, ok := resp.Resp.(*kvrpcpb.PessimisticRollbackResponse)
			released = ok && len(r.GetErrors()) == 0
			if !ok || !released {
				break
			}
		}
		if !released {
			failed = append(failed, key)
		}
	}
	return failed
}

// restartForCommit moves a current-read transaction that locked nothing
// to a fresh start, its buffered writes with it, for the reason LockKeys
// restarts one (the mock's prewrite checks its keys against the start):
// it read at fresh timestamps and holds no lock, so its start means
// nothing to it, and on TiKV moving it changes nothing.
func (t *txn) restartForCommit(ctx context.Context) error {
	ts, err := t.s.now(ctx)
	if err != nil {
		return err
	}
	old := t.tx
	if err := t.begin(ts); err != nil {
		t.tx = old
		return err
	}
	it, err := old.GetMemBuffer().Iter(nil, nil)
	if err != nil {
		return wrapErr("commit", err)
	}
	defer it.Close()
	for ; it.Valid(); err = it.Next() {
		if err != nil {
			return wrapErr("commit", err)
		}
		if len(it.Value()) == 0 {
			err = t.tx.Delete(it.Key())
		} else {
			err = t.tx.Set(it.Key(), it.Value())
		}
		if err != nil {
			return wrapErr("commit", err)
		}
	}
	_ = old.Rollback() // holds no lock: no RPC
	return nil
}

func (t *txn) Rollback() {
	if t.done {
		return
	}
	t.done = true
	// A pessimistic transaction's locks are rolled back here; an error
	// (the cluster unreachable) leaves them to expire with their TTL.
	_ = t.tx.Rollback()
}
