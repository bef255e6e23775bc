package oplog

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// Store is the stored log as the trimmer sees it.
type Store interface {
	// Scan calls fn with the timestamp and stored size of each entry
	// from the oldest at or after from, its pre-image's included, until fn
	// returns false.
	Scan(from Timestamp, fn func(ts Timestamp, size int64) bool) error
	// DeleteBefore removes every entry before ts, and their pre-images.
	DeleteBefore(ts Timestamp) error
	// DeletePreImagesBefore removes the pre-images of the entries before
	// ts and returns their size.
	DeletePreImagesBefore(ts Timestamp) (int64, error)
}

// ExpirePreImages removes the pre-images of the entries before ts (those
// past their expireAfterSeconds) and takes their size off the log's. It
// runs under the trimmer's lock, so that a trim that counted them does
// not take them off too.
func (l *Log) ExpirePreImages(s Store, ts Timestamp) error {
	l.trimMu.Lock()
	defer l.trimMu.Unlock()
	n, err := s.DeletePreImagesBefore(ts)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.size -= n
	l.mu.Unlock()
	return nil
}

// trimChunk is the most entries one trim step removes, so that a large
// backlog is removed in steps of bounded scans.
const trimChunk = 1 << 16

// trimSlack is the share of the size bound a trim frees beyond the excess
// (1/trimSlack of it). Each trim step costs the store a range deletion,
// which every later read of the oplog range steps over until a compaction
// drops it; trimming the few entries over the bound on every write of a
// full log piled one up per write, and writes fell to a twentieth of their
// rate. Trimming an eighth of the bound at a time makes a trim one in
// thousands of writes, as MongoDB truncates its oplog by whole markers
// rather than by entry.
const trimSlack = 8

// Trim removes the oldest entries while the log is over its size bound, then
// on down to 1/trimSlack below it, and those older than its age bound, but
// never the newest entry, which carries the cluster time across restarts,
// nor any entry not yet visible. It reports how many it removed.
func (l *Log) Trim(s Store) (int, error) {
	l.trimMu.Lock()
	defer l.trimMu.Unlock()
	total := 0
	for {
		l.mu.Lock()
		excess := int64(0)
		if l.max > 0 && (l.size > l.max || total > 0) {
			excess = l.size - (l.max - l.max/trimSlack)
		}
		visible, floor := l.visible, l.floor
		l.mu.Unlock()
		var ageCut uint32
		if l.maxAge > 0 {
			ageCut = uint32(max(l.now().Add(-l.maxAge).Unix(), 0))
		}
		var (
			stop, lastTS     Timestamp
			removed, lastLen int64
			n                int
		)
		err := s.Scan(floor, func(ts Timestamp, size int64) bool {
			if !ts.Less(visible) || n == trimChunk || (removed >= excess && ts.T >= ageCut) {
				stop = ts
				return false
			}
			removed += size
			lastTS, lastLen = ts, size
			n++
			return true
		})
		if stop.IsZero() && n > 0 {
			// The scan reached the end: keep the newest entry.
			stop, removed, n = lastTS, removed-lastLen, n-1
		}
		if err != nil || n == 0 || stop.IsZero() {
			return total, err
		}
		if err := s.DeleteBefore(stop); err != nil {
			return total, err
		}
		l.mu.Lock()
		l.size -= removed
		if l.floor.Less(stop) {
			l.floor = stop
		}
		l.mu.Unlock()
		total += n
		if n < trimChunk {
			return total, nil
		}
	}
}

// RunTrimmer trims whenever the size passes the bound, and every interval
// while an age bound is set, until ctx is done.
func (l *Log) RunTrimmer(ctx context.Context, s Store, log *zap.Logger) {
	if l.max <= 0 && l.maxAge <= 0 {
		return
	}
	var tick <-chan time.Time
	if l.maxAge > 0 {
		t := time.NewTicker(min(l.maxAge/10+time.Millisecond, time.Minute))
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.trim:
		case <-tick:
		}
		if n, err := l.Trim(s); err != nil {
			log.Error("oplog trim", zap.Error(err))
		} else if n > 0 {
			log.Debug("oplog trimmed", zap.Int("entries", n))
		}
	}
}
