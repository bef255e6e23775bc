package tikvkv

import (
	"context"
	"time"

	"github.com/lethedb/lethe/clock"
	"github.com/tikv/client-go/v2/oracle"
	"go.uber.org/zap"
)

// GCLifetime is how long a replaced version stays readable: TiKV deletes
// the versions below the cluster's GC safe point, which someone must
// advance. TiDB's GC worker does it for TiDB; a cluster that serves only
// Lethe has no such worker, so each Lethe front-end advances it, to now
// less GCLifetime, every gcInterval (TiDB's defaults for both, 10 minutes).
// It must exceed every read's age: transactions (a minute by default),
// snapshot reads (the engine's history window, 5 minutes) and the
// snapshots of open cursors, a read of a snapshot older than the safe
// point failing (client-go's ErrGCTooEarly).
const GCLifetime = 10 * time.Minute

const gcInterval = 10 * time.Minute

// collectGarbage moves the cluster's GC safe point to lifetime before the
// TSO's time, after resolving the locks below it (client-go's GC), so that
// TiKV's own GC reclaims the versions below. Several front-ends doing it
// is harmless: the safe point only moves forward.
func (s *Store) collectGarbage(ctx context.Context, lifetime time.Duration) (uint64, error) {
	now, err := s.now(ctx)
	if err != nil {
		return 0, err
	}
	safe := oracle.GoTimeToTS(oracle.GetTimeFromTS(now).Add(-lifetime))
	sp, err := s.kv.GC(ctx, safe)
	if err != nil {
		return 0, wrapErr("gc", err)
	}
	return sp, nil
}

// gcLoop runs collectGarbage every gcInterval until ctx ends.
func (s *Store) gcLoop(ctx context.Context, log *zap.Logger) {
	clock.Every(ctx, gcInterval, nil, func(ctx context.Context) {
		if sp, err := s.collectGarbage(ctx, GCLifetime); err != nil {
			log.Warn("tikvkv: advancing the GC safe point failed", zap.Error(err))
		} else {
			log.Debug("tikvkv: GC safe point advanced", zap.Uint64("safePoint", sp))
		}
	})
}
