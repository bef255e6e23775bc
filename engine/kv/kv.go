// Package kv is the storage interface under Lethe's engine: an ordered
// key-value store with transactions, on which every collection, index,
// expiry entry, oplog entry and session record is laid out (the engine's
// doc.go lists the key families). It imports no backend: pebblekv
// implements it on an embedded pebble store, and a distributed backend
// implements the same semantics on TiKV.
//
// # Semantics
//
// The semantics are TiKV's, so that a TiKV backend needs no emulation:
//
//   - Every commit gets a Timestamp from the store; timestamps only grow.
//     Now returns one at least as new as every commit acknowledged so far.
//   - An optimistic transaction (the default) reads the snapshot at its
//     start timestamp plus its own writes (snapshot isolation). Its Commit
//     fails with an error that matches ErrConflict when another transaction
//     committed any key it writes after its start, or holds a lock on one:
//     the first committer wins.
//   - A pessimistic transaction (TxnOptions.Pessimistic) locks keys with
//     LockKeys before it reads and writes them. Its reads are current reads:
//     they see the latest committed state plus its own writes. A lock is held
//     until Commit or Rollback, so no other transaction commits a locked key
//     in between. At commit only locked keys are checked: the keys it writes
//     without locking are, by contract, derived from keys it locked (an index
//     entry of a locked document), as TiDB writes non-unique index entries.
//   - A pessimistic transaction with TxnOptions.SnapshotReads reads the
//     snapshot at its start, as an optimistic one does, and LockKeys fails
//     with an error matching ErrConflict when a key it locks was committed
//     after that start (TiKV's pessimistic lock taken at for_update_ts =
//     start_ts). This is a MongoDB transaction: one snapshot for all its
//     reads, a write conflict as soon as it writes what another changed.
//     Locks are of exact keys: transactions that lock different keys never
//     wait for each other.
//   - LockKeys waits for a key another transaction holds, at most
//     TxnOptions.LockWait (DefaultLockWait if zero) or until its context
//     ends, then fails with an error matching ErrConflict. With
//     LockOptions.NoWait it fails at once instead (ErrLocked): a caller that
//     already holds locks uses it to avoid deadlocks, then commits what it
//     has and locks the union afresh.
//   - Commit is atomic: all the transaction's writes are stored or none.
//     With Sync durability it returns only once they survive a crash.
//   - Iterators are one-way: a forward iterator walks up from lo (First,
//     SeekGE, Next), a reverse one walks down from hi (First, Next). Keys
//     and values an iterator returns are valid until it moves.
//   - DropRange reclaims a range that no transaction reaches any more (the
//     keys of a dropped collection, whose id is never reused); it is not
//     transactional, readers of the range may see it half gone, and a crash
//     before the next Sync commit may undo it: callers keep their own
//     record of what is left to reclaim.
//
// A Txn is used by one goroutine at a time. Store and Snapshot are safe for
// concurrent use.
package kv

import (
	"context"
	"errors"
	"time"
)

// Timestamp orders commits and snapshots.
type Timestamp uint64

// Durability says when Commit returns.
type Durability uint8

const (
	// Sync returns once the commit survives a crash (the WAL synced, or the
	// distributed commit done).
	Sync Durability = iota
	// NoSync returns once the commit is visible; a crash may lose it, as a
	// whole. For writes acknowledged to no client (TTL purges, trims).
	NoSync
)

// DefaultLockWait bounds one LockKeys wait when TxnOptions.LockWait is zero.
const DefaultLockWait = 30 * time.Second

var (
	// ErrNotFound is returned by Get for a key with no value.
	ErrNotFound = errors.New("kv: not found")
	// ErrConflict is matched (errors.Is) by every error that means another
	// transaction got there first: a write-write conflict at commit, a lock
	// wait that ran out, a lock held under NoWait. The caller retries its
	// statement in a new transaction.
	ErrConflict = errors.New("kv: write conflict")
	// ErrLocked is a LockKeys with NoWait that met a key held by another
	// transaction. It matches ErrConflict too.
	ErrLocked = &ConflictError{Reason: "key locked by another transaction"}
	// ErrSnapshotTooOld is a snapshot asked for at a timestamp older than
	// the history the store keeps.
	ErrSnapshotTooOld = errors.New("kv: snapshot too old")
	// ErrTxnDone is any use of a transaction after Commit or Rollback.
	ErrTxnDone = errors.New("kv: transaction already committed or rolled back")
)

// ConflictError is a conflict with another transaction on Key (nil if not
// known). It matches ErrConflict.
type ConflictError struct {
	Key    []byte
	Reason string
}

func (e *ConflictError) Error() string {
	if e.Key == nil {
		return "kv: write conflict: " + e.Reason
	}
	return "kv: write conflict: " + e.Reason + " (key " + quoteKey(e.Key) + ")"
}

// Is makes every ConflictError match ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// IsConflict reports whether err means another transaction got there first.
func IsConflict(err error) bool { return errors.Is(err, ErrConflict) }

// Reader reads keys and ordered ranges.
type Reader interface {
	// Get returns the value of key, or ErrNotFound. The value is the
	// caller's to keep.
	Get(ctx context.Context, key []byte) ([]byte, error)
	// Iter walks the keys in [lo, hi) upwards, or downwards if reverse. A
	// nil hi means no upper bound. The iterator must be closed.
	Iter(ctx context.Context, lo, hi []byte, reverse bool) (Iterator, error)
}

// Iterator walks a range in one direction.
type Iterator interface {
	// First moves to the first key in the iterator's direction and reports
	// whether there is one.
	First() bool
	// SeekGE moves a forward iterator to the first key >= key. Reverse
	// iterators do not seek.
	SeekGE(key []byte) bool
	// Next moves one key on in the iterator's direction.
	Next() bool
	// Key and Value are those of the current key, valid until the next move.
	Key() []byte
	Value() []byte
	// Error is the error that ended the walk, if any.
	Error() error
	Close() error
}

// Snapshot is a consistent view at one timestamp.
type Snapshot interface {
	Reader
	// TS is the timestamp the snapshot reads at: it holds every commit at
	// or before it and none after.
	TS() Timestamp
	Close() error
}

// TxnOptions configure a transaction.
type TxnOptions struct {
	// Pessimistic makes a transaction that locks what it writes, with
	// current reads (see the package doc).
	Pessimistic bool
	// SnapshotReads, with Pessimistic, reads the snapshot at the start and
	// makes LockKeys fail on a key committed after it (see the package
	// doc).
	SnapshotReads bool
	// LockWait bounds one LockKeys wait; DefaultLockWait if zero.
	LockWait time.Duration
	// UseReserve lets the commit use a store's free-space reserve, which
	// otherwise refuses commits that add data on a low disk: for catalog
	// changes that add only a small entry and must work there (rename,
	// an index build's last step). Stores without such a reserve ignore it.
	UseReserve bool
	// SizeHint is about how many bytes of keys and values the transaction
	// will write, zero if unknown. A store may reserve room for them at
	// the first write rather than grow its buffer as the writes come.
	SizeHint int
}

// LockOptions configure one LockKeys call.
type LockOptions struct {
	// NoWait fails with ErrLocked at once when a key is held by another
	// transaction, instead of waiting for it.
	NoWait bool
}

// Txn is a transaction: reads see its own writes, which stay private until
// Commit.
type Txn interface {
	Reader
	// Set and Delete buffer a write. The transaction keeps its own copies
	// of key and value.
	Set(key, value []byte) error
	Delete(key []byte) error
	// Buffered returns the transaction's own pending write of key: ok
	// false if it has none, value nil for a pending delete.
	Buffered(key []byte) (value []byte, ok bool)
	// LockKeys locks keys for this transaction (pessimistic transactions
	// only). Keys already held are no-ops.
	LockKeys(ctx context.Context, o LockOptions, keys ...[]byte) error
	// Locked reports whether this transaction holds the lock of key.
	Locked(key []byte) bool
	// Size is the bytes of keys and values buffered, to bound a commit.
	Size() int
	// Empty reports whether nothing is buffered.
	Empty() bool
	// StartTS is the timestamp of the snapshot the transaction reads.
	StartTS() Timestamp
	// Commit stores the buffered writes atomically and returns their
	// commit timestamp. A conflict matches ErrConflict, and nothing is
	// stored. Commit releases the locks in every case.
	Commit(ctx context.Context, d Durability) (Timestamp, error)
	// Rollback drops the buffered writes and releases the locks. It may be
	// called after Commit, as a no-op, so that it can be deferred.
	Rollback()
}

// Store is an open key-value store. Its own Get and Iter read the latest
// committed state, each call consistent on its own.
type Store interface {
	Reader
	Begin(ctx context.Context, o TxnOptions) (Txn, error)
	// Snapshot opens a consistent view of the latest committed state.
	Snapshot(ctx context.Context) (Snapshot, error)
	// Now returns a timestamp at least as new as every acknowledged commit.
	Now(ctx context.Context) (Timestamp, error)
	// DropRange removes every key in [lo, hi): see the package doc.
	DropRange(ctx context.Context, lo, hi []byte) error
	// ApproximateSize estimates the bytes stored for [lo, hi), on disk
	// where the backend can tell, or else logically.
	ApproximateSize(ctx context.Context, lo, hi []byte) (int64, error)
	Close() error
}

// Viewer is offered by stores with a cheaper form of snapshot for reads
// that end within one request: pebble's snapshots are cheap to hold for
// minutes but look for compactions under the store's global lock when
// released.
type Viewer interface {
	// View opens a consistent view of the latest committed state, as
	// Snapshot does, for a read that closes it before its request ends:
	// while open, a view may keep more of the store in memory or on disk
	// than a snapshot.
	View(ctx context.Context) (Snapshot, error)
}

// View opens a view of s (Viewer) if it offers one, and else a snapshot.
func View(ctx context.Context, s Store) (Snapshot, error) {
	if v, ok := s.(Viewer); ok {
		return v.View(ctx)
	}
	return s.Snapshot(ctx)
}

// Named is offered by stores that say what they are, for serverStatus's
// storageEngine section.
type Named interface {
	// Name is the backend's name, as --store spells it.
	Name() string
	// Persistent reports whether the data outlives the process.
	Persistent() bool
}

// Cached is offered by stores that keep a block cache in this process, so
// that serverStatus can show whether what reads touch fits in it.
type Cached interface {
	CacheStats() CacheStats
}

// CacheStats are a block cache's figures since the store opened.
type CacheStats struct {
	// Capacity is the cache's budget in bytes (--cache-size-mb), and Size
	// the bytes of blocks it holds now.
	Capacity, Size int64
	// Hits and Misses count the block reads it served and did not.
	Hits, Misses int64
}

// Sharded is offered by stores that split their key space into ranges
// served by different machines (TiKV's regions). On one, the engine
// spreads the key families whose new keys are always the largest over
// buckets (engine/kv/bucketkv), so that their inserts do not all go to
// the last range.
type Sharded interface {
	Sharded() bool
	// VersionLifetime is how long the store keeps the versions a write
	// replaces readable (TiKV's GC life time): the engine reclaims a
	// dropped range no sooner, as the store's own garbage collection
	// would not either.
	VersionLifetime() time.Duration
}

// SharedClock is offered by stores whose timestamps carry a physical time
// that every process on the store shares (TiKV's timestamp oracle). The
// server then decides expiry by that time rather than its own wall clock,
// so that front-ends on different machines agree on when a document
// expires.
type SharedClock interface {
	// PhysicalTime reads the shared time now; it may take a round trip.
	PhysicalTime(ctx context.Context) (time.Time, error)
}

func quoteKey(k []byte) string {
	const hex = "0123456789abcdef"
	out := make([]byte, 0, 2*len(k))
	for _, c := range k {
		if c >= 0x20 && c < 0x7f && c != '\\' {
			out = append(out, c)
			continue
		}
		out = append(out, '\\', 'x', hex[c>>4], hex[c&15])
	}
	return string(out)
}

// PrefixEnd is the smallest key above every key that starts with p: an
// exclusive upper bound for them. It is nil, no bound, when p is all 0xff
// bytes (or empty).
func PrefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// Unwrap returns the store under any wrappers (such as a contract checker)
// that offer Unwrap() Store.
func Unwrap(s Store) Store {
	for {
		w, ok := s.(interface{ Unwrap() Store })
		if !ok {
			return s
		}
		s = w.Unwrap()
	}
}
