package tikvkv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pingcap/log"
	tikverr "github.com/tikv/client-go/v2/error"
	"github.com/tikv/client-go/v2/oracle"
	"github.com/tikv/client-go/v2/tikv"
	"github.com/tikv/client-go/v2/txnkv"
	"github.com/tikv/client-go/v2/txnkv/txnsnapshot"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/lethedb/lethe/engine/kv"
)

// DefaultPrefix is the prefix of every key when Options.Prefix is empty.
const DefaultPrefix = "lethe/"

// Options configure a Store.
type Options struct {
	// Prefix is put in front of every key, so that several deployments can
	// share one cluster, each under its own prefix; DefaultPrefix if empty.
	Prefix string
	// Logger, if set, receives client-go's log lines: client-go logs
	// through one process-wide logger, which this replaces.
	Logger *zap.Logger
}

// Store is a kv.Store on a TiKV cluster, or on client-go's mock of one.
type Store struct {
	kv      *tikv.KVStore
	k       keys
	onClose func() error // after the client closes: the mock cluster's share
	// startChecked is set on client-go's mock, whose prewrite checks every
	// key of a pessimistic transaction for commits after its start
	// (LockKeys).
	startChecked bool
	// stats reads region sizes from PD; nil on the mock, which keeps none.
	stats *regionStats
	// stopGC ends the loop that advances the GC safe point (gc.go), run on
	// a real cluster only.
	stopGC context.CancelFunc
}

var _ kv.Store = (*Store)(nil)

// Sharded reports that TiKV splits the key space into regions (kv.Sharded).
func (s *Store) Sharded() bool { return true }

// VersionLifetime is GCLifetime (kv.Sharded).
func (s *Store) VersionLifetime() time.Duration { return GCLifetime }

// Open connects to the TiKV cluster whose PD endpoints are pdAddrs.
func Open(pdAddrs []string, opts Options) (*Store, error) {
	c, err := txnkv.NewClient(pdAddrs)
	if err != nil {
		return nil, fmt.Errorf("tikvkv: connect to PD %v: %w", pdAddrs, err)
	}
	s := newStore(c.KVStore, opts, nil, false)
	s.stats = newRegionStats(pdAddrs)
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stopGC = cancel
	go s.gcLoop(ctx, log)
	return s, nil
}

func newStore(s *tikv.KVStore, opts Options, onClose func() error, startChecked bool) *Store {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if opts.Logger != nil {
		log.ReplaceGlobals(opts.Logger, &log.ZapProperties{Core: opts.Logger.Core(), Level: zap.NewAtomicLevelAt(zapcore.InfoLevel)})
	}
	return &Store{kv: s, k: newKeys(opts.Prefix), onClose: onClose, startChecked: startChecked}
}

// Close closes the client; on a mock cluster, the last front-end to close
// closes the cluster.
func (s *Store) Close() error {
	if s.stopGC != nil {
		s.stopGC()
	}
	err := s.kv.Close()
	if s.onClose != nil {
		err = errors.Join(err, s.onClose())
	}
	if err != nil {
		return fmt.Errorf("tikvkv: close: %w", err)
	}
	return nil
}

// now is a fresh TSO timestamp: newer than every commit acknowledged
// before the call.
func (s *Store) now(ctx context.Context) (uint64, error) {
	ts, err := s.kv.GetOracle().GetTimestamp(ctx, &oracle.Option{TxnScope: oracle.GlobalTxnScope})
	if err != nil {
		return 0, fmt.Errorf("tikvkv: get a timestamp: %w", err)
	}
	return ts, nil
}

// Now returns a fresh TSO timestamp.
func (s *Store) Now(ctx context.Context) (kv.Timestamp, error) {
	ts, err := s.now(ctx)
	return kv.Timestamp(ts), err
}

// latest is a snapshot of the latest committed state.
func (s *Store) latest(ctx context.Context) (*snapshot, error) {
	ts, err := s.now(ctx)
	if err != nil {
		return nil, err
	}
	return &snapshot{k: s.k, snap: s.kv.GetSnapshot(ts), ts: ts}, nil
}

// Get reads the latest committed value of key.
func (s *Store) Get(ctx context.Context, key []byte) ([]byte, error) {
	snap, err := s.latest(ctx)
	if err != nil {
		return nil, err
	}
	return snap.Get(ctx, key)
}

// Iter walks the latest committed state of [lo, hi), as of the call.
func (s *Store) Iter(ctx context.Context, lo, hi []byte, reverse bool) (kv.Iterator, error) {
	snap, err := s.latest(ctx)
	if err != nil {
		return nil, err
	}
	return snap.Iter(ctx, lo, hi, reverse)
}

// Snapshot opens a view at a fresh timestamp.
func (s *Store) Snapshot(ctx context.Context) (kv.Snapshot, error) {
	return s.latest(ctx)
}

// DropRange deletes every version of every key in [lo, hi), and of their
// values' chunks, with TiKV's DeleteRange, region by region, outside any
// transaction.
func (s *Store) DropRange(ctx context.Context, lo, hi []byte) error {
	plo, phi := s.k.bounds(lo, hi)
	clo, chi := s.k.chunkBounds(lo, hi)
	for _, r := range [][2][]byte{{plo, phi}, {clo, chi}} {
		if _, err := s.kv.DeleteRange(ctx, r[0], r[1], 1); err != nil {
			return fmt.Errorf("tikvkv: drop range: %w", err)
		}
	}
	return nil
}

// ApproximateSize is the size of [lo, hi) from PD's region statistics when
// the range spans more than two regions: the approximate sizes TiKV
// reports of the regions that hold it, which a range within a region or
// two would overstate by the rest of them. Otherwise, and when PD's
// statistics cannot be had (the mock keeps none), it is the logical size:
// the bytes of the keys (without the prefix) and values, read at a fresh
// timestamp, at most about two regions' worth.
func (s *Store) ApproximateSize(ctx context.Context, lo, hi []byte) (int64, error) {
	if s.stats != nil {
		plo, phi := s.k.bounds(lo, hi)
		n, regions, err := s.stats.size(ctx, plo, phi)
		if err == nil && regions > 2 {
			clo, chi := s.k.chunkBounds(lo, hi)
			if c, cregions, err := s.stats.size(ctx, clo, chi); err == nil && cregions > 2 {
				n += c // chunks, in regions of their own
			}
			return n, nil
		}
	}
	return s.logicalSize(ctx, lo, hi)
}

func (s *Store) logicalSize(ctx context.Context, lo, hi []byte) (int64, error) {
	snap, err := s.latest(ctx)
	if err != nil {
		return 0, err
	}
	it, err := newIter(ctx, s.k, snap.snap, nil, lo, hi, false)
	if err != nil {
		return 0, err
	}
	it.sizesOnly = true
	defer it.Close()
	var n int64
	for ok := it.First(); ok; ok = it.Next() {
		n += int64(len(it.Key()) + it.size)
		if n&0xfff == 0 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
	}
	return n, it.Error()
}

// snapshot reads at one timestamp.
type snapshot struct {
	k    keys
	snap *txnsnapshot.KVSnapshot
	ts   uint64
}

func (s *snapshot) Get(ctx context.Context, key []byte) ([]byte, error) {
	return get(ctx, s.k, s.snap, key)
}

func (s *snapshot) Iter(ctx context.Context, lo, hi []byte, reverse bool) (kv.Iterator, error) {
	return newIter(ctx, s.k, s.snap, nil, lo, hi, reverse)
}

func (s *snapshot) TS() kv.Timestamp { return kv.Timestamp(s.ts) }
func (s *snapshot) Close() error     { return nil }

// get reads key at snap: a copy of its value, or kv.ErrNotFound.
func get(ctx context.Context, k keys, snap *txnsnapshot.KVSnapshot, key []byte) ([]byte, error) {
	v, _, err := getHead(ctx, k, snap, key)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(v), nil
}

// getHead reads key at snap: its value, which may share the snapshot's
// memory, and the number of chunks it is stored in; or kv.ErrNotFound.
func getHead(ctx context.Context, k keys, snap *txnsnapshot.KVSnapshot, key []byte) ([]byte, int, error) {
	stored, err := snap.Get(ctx, k.in(key))
	if tikverr.IsErrNotFound(err) {
		return nil, 0, kv.ErrNotFound
	}
	if err != nil {
		return nil, 0, wrapErr("get", err)
	}
	return storedValue(ctx, k, snap, key, stored)
}
