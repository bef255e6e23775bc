package preimage

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/oplog"
)

// Options is the changeStreamOptions cluster parameter:
// preAndPostImages.expireAfterSeconds, and when it was set.
type Options struct {
	// ExpireAfterSeconds bounds how long pre-images are kept, beside the
	// oplog's own bound; 0 is "off", the oplog's bound alone.
	ExpireAfterSeconds int64
	// Time is the clusterParameterTime: the cluster time of the last set,
	// zero if never set.
	Time oplog.Timestamp
}

// Host is what the pre-images need of the engine that stores them.
type Host interface {
	// Get reads a key of the store, kv.ErrNotFound if it has none.
	Get(ctx context.Context, key []byte) ([]byte, error)
	// StoreCatalog sets key to value in a catalog transaction, committed
	// durably.
	StoreCatalog(key, value []byte) error
	// Now is the time of the clock that decides expiry.
	Now() time.Time
	// Logged reports whether the engine keeps an oplog: without one there
	// are no pre-images, and the parameter is set at no cluster time.
	Logged() bool
	// AppendNoop appends a no-op entry o to the oplog and returns its
	// timestamp.
	AppendNoop(o bson.D) (oplog.Timestamp, error)
	// ExpireBefore removes the pre-images of the entries before cut.
	ExpireBefore(cut oplog.Timestamp) error
}

// Images holds the changeStreamOptions parameter of one engine, in memory
// and in its store, and applies it to the reads and the expiry of its
// pre-images.
type Images struct {
	host Host
	opts atomic.Pointer[Options]
}

// ExpiryInterval is how often expired pre-images are removed, as
// mongod's job that removes them wakes every 10 seconds. Reads do not wait
// for it: an expired pre-image is never returned.
const ExpiryInterval = 10 * time.Second

type storedStreamOptions struct {
	ExpireAfterSeconds int64          `bson:"expireAfterSeconds,omitempty"`
	Time               bson.Timestamp `bson:"clusterParameterTime"`
}

// Open reads the stored parameter, if any.
func Open(h Host) (*Images, error) {
	m := &Images{host: h}
	v, err := h.Get(context.TODO(), record.ChangeStreamOptionsKey())
	if err == kv.ErrNotFound {
		m.opts.Store(&Options{})
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("engine: read changeStreamOptions: %w", err)
	}
	var s storedStreamOptions
	if err := bson.Unmarshal(v, &s); err != nil {
		return nil, fmt.Errorf("engine: changeStreamOptions: %w", err)
	}
	m.opts.Store(&Options{ExpireAfterSeconds: s.ExpireAfterSeconds, Time: oplog.Timestamp{T: s.Time.T, I: s.Time.I}})
	return m, nil
}

// Options returns the changeStreamOptions cluster parameter.
func (m *Images) Options() Options { return *m.opts.Load() }

// SetOptions sets preAndPostImages.expireAfterSeconds (0: off), durably,
// at a new cluster time (a no-op entry, as the write of mongod's
// config.clusterParameters moves it).
func (m *Images) SetOptions(expireAfterSeconds int64) error {
	var at oplog.Timestamp
	if m.host.Logged() {
		var err error
		if at, err = m.host.AppendNoop(bson.D{{Key: "msg", Value: "setClusterParameter changeStreamOptions"}}); err != nil {
			return err
		}
	}
	raw, err := bson.Marshal(storedStreamOptions{ExpireAfterSeconds: expireAfterSeconds, Time: bson.Timestamp{T: at.T, I: at.I}})
	if err != nil {
		return fmt.Errorf("engine: changeStreamOptions: %w", err)
	}
	if err := m.host.StoreCatalog(record.ChangeStreamOptionsKey(), raw); err != nil {
		return err
	}
	m.opts.Store(&Options{ExpireAfterSeconds: expireAfterSeconds, Time: at})
	return nil
}

// expireBefore is the first timestamp whose pre-image has not expired
// under expireAfterSeconds, zero if they do not expire: a pre-image is
// kept for at least that many seconds after its write.
func (m *Images) expireBefore() oplog.Timestamp {
	exp := m.opts.Load().ExpireAfterSeconds
	if exp <= 0 {
		return oplog.Timestamp{}
	}
	cut := m.host.Now().Unix() - exp
	if cut <= 0 {
		return oplog.Timestamp{}
	}
	return oplog.Timestamp{T: uint32(min(cut, int64(^uint32(0))))}
}

// Expire removes the pre-images expireAfterSeconds has expired.
func (m *Images) Expire() error {
	cut := m.expireBefore()
	if cut.IsZero() || !m.host.Logged() {
		return nil
	}
	if err := m.host.ExpireBefore(cut); err != nil {
		return fmt.Errorf("engine: expire pre-images: %w", err)
	}
	return nil
}

// Run removes expired pre-images every ExpiryInterval until ctx is done.
func (m *Images) Run(ctx context.Context, log *zap.Logger) {
	clock.Every(ctx, ExpiryInterval, nil, func(context.Context) {
		if err := m.Expire(); err != nil {
			log.Error("pre-image expiry", zap.Error(err))
		}
	})
}
