package oplogstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/oplog"
)

// lowerBound is where a read of the entries from floor starts: the entries
// before it are trimmed, and their tombstones are left behind.
func lowerBound(floor oplog.Timestamp) []byte {
	if floor.IsZero() {
		lo, _ := oplog.Range()
		return lo
	}
	return oplog.AppendKey(nil, floor)
}

// Stored reads the oldest and the newest stored entry and the size of the
// stored oplog, its pre-images included: the newest so that timestamps
// keep increasing across restarts, the oldest as the log's floor.
func Stored(ctx context.Context, s kv.Store) (oldest, last oplog.Timestamp, size int64, err error) {
	lo, hi := oplog.Range()
	it, err := s.Iter(ctx, lo, hi, false)
	if err != nil {
		return oldest, last, 0, fmt.Errorf("engine: open oplog: %w", err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		size += int64(len(it.Key()) + len(it.Value()))
		if last, err = oplog.KeyTS(it.Key()); err != nil {
			return oldest, last, 0, err
		}
		if oldest.IsZero() {
			oldest = last
		}
	}
	if err := it.Error(); err != nil {
		return oldest, last, 0, fmt.Errorf("engine: open oplog: %w", err)
	}
	plo, phi := oplog.PreImageRange()
	images, err := RangeSize(ctx, s, plo, phi)
	if err != nil {
		return oldest, last, 0, fmt.Errorf("engine: open oplog: %w", err)
	}
	return oldest, last, size + images, nil
}

// RangeSize is the bytes of the keys and values stored in [lo, hi).
func RangeSize(ctx context.Context, s kv.Reader, lo, hi []byte) (int64, error) {
	it, err := s.Iter(ctx, lo, hi, false)
	if err != nil {
		return 0, err
	}
	defer it.Close()
	var n int64
	for ok := it.First(); ok; ok = it.Next() {
		n += int64(len(it.Key()) + len(it.Value()))
	}
	return n, it.Error()
}

// Store is the stored oplog as the trimmer sees it (oplog.Store).
type Store struct{ KV kv.Store }

func (s Store) Scan(from oplog.Timestamp, fn func(ts oplog.Timestamp, size int64) bool) error {
	_, hi := oplog.Range()
	it, err := s.KV.Iter(context.TODO(), lowerBound(from), hi, false)
	if err != nil {
		return err
	}
	defer it.Close()
	// The pre-images, keyed by the timestamps of their entries, walk
	// alongside.
	plo, phi := oplog.PreImageRange()
	images, err := s.KV.Iter(context.TODO(), plo, phi, false)
	if err != nil {
		return err
	}
	defer images.Close()
	image := images.First()
	var key []byte
	for ok := it.First(); ok; ok = it.Next() {
		ts, err := oplog.KeyTS(it.Key())
		if err != nil {
			return err
		}
		size := int64(len(it.Key()) + len(it.Value()))
		key = oplog.AppendPreImageKey(key[:0], ts)
		for image && bytes.Compare(images.Key(), key) < 0 {
			image = images.Next()
		}
		if image && bytes.Equal(images.Key(), key) {
			size += int64(len(images.Key()) + len(images.Value()))
		}
		if !fn(ts, size) {
			break
		}
	}
	return errors.Join(it.Error(), images.Error())
}

func (s Store) DeletePreImagesBefore(ts oplog.Timestamp) (int64, error) {
	lo, _ := oplog.PreImageRange()
	hi := oplog.AppendPreImageKey(nil, ts)
	n, err := RangeSize(context.TODO(), s.KV, lo, hi)
	if err != nil {
		return 0, err
	}
	if err := s.KV.DropRange(context.TODO(), lo, hi); err != nil {
		return 0, err
	}
	return n, nil
}

func (s Store) DeleteBefore(ts oplog.Timestamp) error {
	ctx := context.TODO()
	lo, _ := oplog.Range()
	if err := s.KV.DropRange(ctx, lo, oplog.AppendKey(nil, ts)); err != nil {
		return err
	}
	// Pre-images go with their entries, as MongoDB expires those older
	// than the oldest oplog entry.
	plo, _ := oplog.PreImageRange()
	return s.KV.DropRange(ctx, plo, oplog.AppendPreImageKey(nil, ts))
}

// Read calls fn with each entry of log visible now after ts, in timestamp
// order, until fn returns false or the entries end. The entry is valid
// only during the call. It returns the timestamp of the last entry passed
// to fn.
func Read(ctx context.Context, s kv.Reader, log *oplog.Log, after oplog.Timestamp, fn func(ts oplog.Timestamp, entry bson.Raw) (bool, error)) (oplog.Timestamp, error) {
	visible := log.Visible()
	if !after.Less(visible) {
		return after, nil
	}
	_, hi := oplog.Range()
	start := after.Next()
	if floor := log.Floor(); start.Less(floor) {
		start = floor
	}
	it, err := s.Iter(ctx, oplog.AppendKey(nil, start), hi, false)
	if err != nil {
		return after, err
	}
	defer it.Close()
	last := after
	for ok := it.First(); ok; ok = it.Next() {
		if err := ctx.Err(); err != nil {
			return last, err
		}
		ts, err := oplog.KeyTS(it.Key())
		if err != nil {
			return last, err
		}
		if visible.Less(ts) {
			break
		}
		more, err := fn(ts, bson.Raw(it.Value()))
		if err != nil {
			return last, err
		}
		last = ts
		if !more {
			break
		}
	}
	return last, it.Error()
}

// ReadReverse is Read from the newest visible entry backwards, starting
// before ts unless it is zero.
func ReadReverse(ctx context.Context, s kv.Reader, log *oplog.Log, before oplog.Timestamp, fn func(oplog.Timestamp, bson.Raw) (bool, error)) error {
	visible := log.Visible()
	if before.IsZero() || visible.Less(before) {
		before = visible.Next()
	}
	it, err := s.Iter(ctx, lowerBound(log.Floor()), oplog.AppendKey(nil, before), true)
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		ts, err := oplog.KeyTS(it.Key())
		if err != nil {
			return err
		}
		more, err := fn(ts, bson.Raw(it.Value()))
		if err != nil || !more {
			return err
		}
	}
	return it.Error()
}

// Oldest is the timestamp of the oldest stored entry, zero if none: a
// reader resuming before it has lost history.
func Oldest(ctx context.Context, s kv.Reader, floor oplog.Timestamp) (oplog.Timestamp, error) {
	_, hi := oplog.Range()
	it, err := s.Iter(ctx, lowerBound(floor), hi, false)
	if err != nil {
		return oplog.Timestamp{}, err
	}
	defer it.Close()
	if !it.First() {
		return oplog.Timestamp{}, it.Error()
	}
	return oplog.KeyTS(it.Key())
}
