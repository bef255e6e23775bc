package engine

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/oplog"
)

// ChangeStreamOptions is the changeStreamOptions cluster parameter:
// preAndPostImages.expireAfterSeconds, and when it was set.
type ChangeStreamOptions struct {
	// ExpireAfterSeconds bounds how long pre-images are kept, beside the
	// oplog's own bound; 0 is "off", the oplog's bound alone.
	ExpireAfterSeconds int64
	// Time is the clusterParameterTime: the cluster time of the last set,
	// zero if never set.
	Time oplog.Timestamp
}

// imageExpiryInterval is how often expired pre-images are removed, as
// mongod's job that removes them wakes every 10 seconds. Reads do not wait
// for it: an expired pre-image is never returned.
const imageExpiryInterval = 10 * time.Second

type storedStreamOptions struct {
	ExpireAfterSeconds int64          `bson:"expireAfterSeconds,omitempty"`
	Time               bson.Timestamp `bson:"clusterParameterTime"`
}

// loadChangeStreamOptions reads the stored parameter, if any.
func (e *Engine) loadChangeStreamOptions() error {
	v, err := e.store.Get(context.TODO(), record.ChangeStreamOptionsKey())
	if err == kv.ErrNotFound {
		e.streamOpts.Store(&ChangeStreamOptions{})
		return nil
	}
	if err != nil {
		return fmt.Errorf("engine: read changeStreamOptions: %w", err)
	}
	var s storedStreamOptions
	if err := bson.Unmarshal(v, &s); err != nil {
		return fmt.Errorf("engine: changeStreamOptions: %w", err)
	}
	e.streamOpts.Store(&ChangeStreamOptions{ExpireAfterSeconds: s.ExpireAfterSeconds, Time: oplog.Timestamp{T: s.Time.T, I: s.Time.I}})
	return nil
}

// ChangeStreamOptions returns the changeStreamOptions cluster parameter.
func (e *Engine) ChangeStreamOptions() ChangeStreamOptions { return *e.streamOpts.Load() }

// SetChangeStreamOptions sets preAndPostImages.expireAfterSeconds (0:
// off), durably, at a new cluster time (a no-op entry, as the write of
// mongod's config.clusterParameters moves it).
func (e *Engine) SetChangeStreamOptions(expireAfterSeconds int64) error {
	var at oplog.Timestamp
	if e.oplog != nil {
		var err error
		if at, err = e.AppendNoop(bson.D{{Key: "msg", Value: "setClusterParameter changeStreamOptions"}}); err != nil {
			return err
		}
	}
	raw, err := bson.Marshal(storedStreamOptions{ExpireAfterSeconds: expireAfterSeconds, Time: bson.Timestamp{T: at.T, I: at.I}})
	if err != nil {
		return fmt.Errorf("engine: changeStreamOptions: %w", err)
	}
	ctx := context.TODO()
	tx, err := e.beginCatalog(ctx, false)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := tx.Set(record.ChangeStreamOptionsKey(), raw); err != nil {
		return err
	}
	if _, err := tx.Commit(ctx, kv.Sync); err != nil {
		return fmt.Errorf("engine: store changeStreamOptions: %w", err)
	}
	e.streamOpts.Store(&ChangeStreamOptions{ExpireAfterSeconds: expireAfterSeconds, Time: at})
	return nil
}

// imagesExpireBefore is the first timestamp whose pre-image has not
// expired under expireAfterSeconds, zero if they do not expire: a
// pre-image is kept for at least that many seconds after its write.
func (e *Engine) imagesExpireBefore() oplog.Timestamp {
	exp := e.streamOpts.Load().ExpireAfterSeconds
	if exp <= 0 {
		return oplog.Timestamp{}
	}
	cut := e.clock.Now().Unix() - exp
	if cut <= 0 {
		return oplog.Timestamp{}
	}
	return oplog.Timestamp{T: uint32(min(cut, int64(^uint32(0))))}
}

// ExpirePreImages removes the pre-images expireAfterSeconds has expired.
func (e *Engine) ExpirePreImages() error {
	cut := e.imagesExpireBefore()
	if cut.IsZero() || e.oplog == nil {
		return nil
	}
	if err := e.oplog.ExpirePreImages(oplogStore{e}, cut); err != nil {
		return fmt.Errorf("engine: expire pre-images: %w", err)
	}
	return nil
}

// runImageExpiry removes expired pre-images every imageExpiryInterval
// until ctx is done.
func (e *Engine) runImageExpiry(ctx context.Context) {
	t := time.NewTicker(imageExpiryInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := e.ExpirePreImages(); err != nil {
			e.log.Error("pre-image expiry", zap.Error(err))
		}
	}
}
