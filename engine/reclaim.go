package engine

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/record"
)

// Dropping a collection or an index leaves its keys unreachable at once:
// its catalog entry goes and its id is never handed out again. The keys
// themselves are reclaimed after that commit, range by range
// (kv.Store.DropRange), which is not transactional. So the commit that
// drops also records each range (record.ReclaimKey), and the record goes
// only once its range is gone; Open reclaims whatever a crash left
// recorded.
//
//	r lo -> hi   a range [lo, hi) still to reclaim

type keyRange struct{ lo, hi []byte }

// recordReclaim records ranges in the transaction that drops them.
func recordReclaim(tx kv.Txn, ranges []keyRange) error {
	for _, r := range ranges {
		if err := tx.Set(record.ReclaimKey(r.lo), r.hi); err != nil {
			return fmt.Errorf("engine: record a range to reclaim: %w", err)
		}
	}
	return nil
}

// reclaim drops ranges whose drop has committed, then their records. A
// failure is logged and left for the next Open.
func (e *Engine) reclaim(ctx context.Context, ranges []keyRange) {
	if len(ranges) == 0 {
		return
	}
	tx, err := e.store.Begin(ctx, kv.TxnOptions{Pessimistic: true})
	if err == nil {
		defer tx.Rollback()
		for _, r := range ranges {
			if err = e.store.DropRange(ctx, r.lo, r.hi); err != nil {
				break
			}
			if err = tx.Delete(record.ReclaimKey(r.lo)); err != nil {
				break
			}
		}
		if err == nil {
			_, err = tx.Commit(ctx, kv.Sync)
		}
	}
	if err != nil {
		e.log.Warn("reclaiming dropped data failed; it is retried at the next start", zap.Error(err))
	}
}

// reclaimLeftovers reclaims the ranges recorded by drops that a crash
// interrupted.
func (e *Engine) reclaimLeftovers(ctx context.Context) error {
	it, err := e.store.Iter(ctx, []byte{record.PrefixReclaim}, []byte{record.PrefixReclaim + 1}, false)
	if err != nil {
		return fmt.Errorf("engine: read ranges to reclaim: %w", err)
	}
	var ranges []keyRange
	for ok := it.First(); ok; ok = it.Next() {
		ranges = append(ranges, keyRange{lo: append([]byte(nil), it.Key()[1:]...), hi: append([]byte(nil), it.Value()...)})
	}
	err = it.Error()
	it.Close()
	if err != nil {
		return fmt.Errorf("engine: read ranges to reclaim: %w", err)
	}
	if len(ranges) > 0 {
		e.reclaim(ctx, ranges)
	}
	return nil
}

// writable is the error every write gets when the store opened read-only
// for want of disk space, or nil.
func (e *Engine) writable() error {
	if e.local == nil {
		return nil
	}
	return e.local.Writable()
}
