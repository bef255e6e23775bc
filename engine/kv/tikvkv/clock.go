package tikvkv

import (
	"context"
	"time"

	"github.com/tikv/client-go/v2/oracle"

	"github.com/lethedb/lethe/engine/kv"
)

var _ kv.SharedClock = (*Store)(nil)

// PhysicalTime is the physical part of a fresh TSO timestamp: the time PD
// hands every client of the cluster, in milliseconds.
func (s *Store) PhysicalTime(ctx context.Context) (time.Time, error) {
	ts, err := s.now(ctx)
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(oracle.ExtractPhysical(ts)), nil
}
