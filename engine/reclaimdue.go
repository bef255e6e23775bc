package engine

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/reclaim"
)

// recordDrop records the ranges a drop leaves in its transaction: due at
// once, or on a sharded store once its version lifetime has passed.
func (e *Engine) recordDrop(tx kv.Txn, ranges []reclaim.Range) error {
	if e.reclaimDelay > 0 {
		return reclaim.RecordDue(tx, ranges, e.clock.Now().Add(e.reclaimDelay).UnixMilli())
	}
	return reclaim.Record(tx, ranges)
}

// reclaimDropped reclaims the ranges of a committed drop when they are due
// at once; later ones wait for reclaimLoop.
func (e *Engine) reclaimDropped(ctx context.Context, ranges []reclaim.Range) {
	if e.reclaimDelay == 0 {
		reclaim.Drop(ctx, e.store, e.log, ranges)
	}
}

// reclaimInterval is how often a sharded store's due ranges are looked for.
const reclaimInterval = time.Minute

// reclaimLoop reclaims the recorded ranges as they fall due, until ctx
// ends. Several front-ends doing so on one store is harmless: dropping a
// range twice drops nothing more.
func (e *Engine) reclaimLoop(ctx context.Context) {
	clock.Every(ctx, reclaimInterval, nil, func(ctx context.Context) {
		if err := e.ReclaimDue(ctx); err != nil && ctx.Err() == nil {
			e.log.Warn("reclaiming dropped data failed; it is retried", zap.Error(err))
		}
	})
}

// ReclaimDue reclaims the recorded ranges due by the engine's clock now.
func (e *Engine) ReclaimDue(ctx context.Context) error {
	return reclaim.Leftovers(ctx, e.store, e.log, e.nowMillis())
}
