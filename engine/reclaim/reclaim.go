package reclaim

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/record"
)

// Range is the key range [Lo, Hi) of a dropped collection or index.
type Range struct{ Lo, Hi []byte }

// Record records ranges in the transaction that drops them.
func Record(tx kv.Txn, ranges []Range) error {
	for _, r := range ranges {
		if err := tx.Set(record.ReclaimKey(r.Lo), r.Hi); err != nil {
			return fmt.Errorf("engine: record a range to reclaim: %w", err)
		}
	}
	return nil
}

// Drop drops ranges whose drop has committed, then their records. A
// failure is logged and left for the next Open.
func Drop(ctx context.Context, store kv.Store, log *zap.Logger, ranges []Range) {
	if len(ranges) == 0 {
		return
	}
	tx, err := store.Begin(ctx, kv.TxnOptions{Pessimistic: true})
	if err == nil {
		defer tx.Rollback()
		for _, r := range ranges {
			if err = store.DropRange(ctx, r.Lo, r.Hi); err != nil {
				break
			}
			if err = tx.Delete(record.ReclaimKey(r.Lo)); err != nil {
				break
			}
		}
		if err == nil {
			_, err = tx.Commit(ctx, kv.Sync)
		}
	}
	if err != nil {
		log.Warn("reclaiming dropped data failed; it is retried at the next start", zap.Error(err))
	}
}

// Leftovers reclaims the ranges recorded by drops that a crash
// interrupted.
func Leftovers(ctx context.Context, store kv.Store, log *zap.Logger) error {
	it, err := store.Iter(ctx, []byte{record.PrefixReclaim}, []byte{record.PrefixReclaim + 1}, false)
	if err != nil {
		return fmt.Errorf("engine: read ranges to reclaim: %w", err)
	}
	var ranges []Range
	for ok := it.First(); ok; ok = it.Next() {
		ranges = append(ranges, Range{Lo: append([]byte(nil), it.Key()[1:]...), Hi: append([]byte(nil), it.Value()...)})
	}
	err = it.Error()
	it.Close()
	if err != nil {
		return fmt.Errorf("engine: read ranges to reclaim: %w", err)
	}
	if len(ranges) > 0 {
		Drop(ctx, store, log, ranges)
	}
	return nil
}
