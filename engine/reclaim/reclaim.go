package reclaim

import (
	"context"
	"encoding/binary"
	"fmt"

	"go.uber.org/zap"

	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/record"
)

// Range is the key range [Lo, Hi) of a dropped collection or index.
type Range struct{ Lo, Hi []byte }

// Record records ranges in the transaction that drops them.
func Record(tx kv.Txn, ranges []Range) error { return RecordDue(tx, ranges, 0) }

// dueMark starts the record of a range that is due at a time: a byte no
// range's upper bound starts with (they start with a key family's).
const dueMark = 0xff

// RecordDue records ranges to reclaim no sooner than dueMillis (Unix
// milliseconds; 0: at once), in the transaction that drops them.
func RecordDue(tx kv.Txn, ranges []Range, dueMillis int64) error {
	for _, r := range ranges {
		v := r.Hi
		if dueMillis > 0 {
			v = binary.BigEndian.AppendUint64([]byte{dueMark}, uint64(dueMillis))
			v = append(v, r.Hi...)
		}
		if err := tx.Set(record.ReclaimKey(r.Lo), v); err != nil {
			return fmt.Errorf("engine: record a range to reclaim: %w", err)
		}
	}
	return nil
}

// parseRecord returns a record's range bound and the time it is due.
func parseRecord(v []byte) (hi []byte, dueMillis int64) {
	if len(v) > 9 && v[0] == dueMark {
		return v[9:], int64(binary.BigEndian.Uint64(v[1:9]))
	}
	return v, 0
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

// Leftovers reclaims the recorded ranges due at nowMillis: those of drops
// that a crash interrupted, and those whose reclaim waits for the store's
// version lifetime to pass.
func Leftovers(ctx context.Context, store kv.Store, log *zap.Logger, nowMillis int64) error {
	it, err := store.Iter(ctx, []byte{record.PrefixReclaim}, []byte{record.PrefixReclaim + 1}, false)
	if err != nil {
		return fmt.Errorf("engine: read ranges to reclaim: %w", err)
	}
	var ranges []Range
	for ok := it.First(); ok; ok = it.Next() {
		hi, due := parseRecord(it.Value())
		if due > nowMillis {
			continue
		}
		ranges = append(ranges, Range{Lo: append([]byte(nil), it.Key()[1:]...), Hi: append([]byte(nil), hi...)})
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
