package engine

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/ttlindex"
)

var bytesEqual = bytes.Equal

func timeOfMillis(ms int64) time.Time { return time.UnixMilli(ms) }

// loadDoc reads the document at pk from r (the store, a snapshot or a
// transaction); nil if there is none. The result owns its memory.
func (e *Engine) loadDoc(ctx context.Context, r kv.Reader, collID uint64, pk []byte) (*storedDoc, error) {
	v, err := r.Get(ctx, record.DocKey(nil, collID, pk))
	if err == kv.ErrNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("engine: read document: %w", err)
	}
	h, doc, err := record.SplitValue(v)
	if err != nil {
		return nil, err
	}
	return &storedDoc{pk: append([]byte(nil), pk...), h: h, doc: bson.Raw(doc)}, nil
}

// expired reports whether a document with header h is expired under the
// collection's current setting at nowMs (TTL spec section 4).
func (st *collState) expired(h record.Header, nowMs int64) bool {
	return ttlindex.Expired(st.ttl, h.TS, h.TTL, nowMs)
}

// FindByID returns the live document of db.coll whose _id equals id, or
// nil: the point read behind find {_id: x}, without compiling a query.
func (e *Engine) FindByID(db, coll string, id bsoncore.Value) (bson.Raw, error) {
	c := e.collection(db, coll)
	if c == nil {
		return nil, nil
	}
	st := c.st()
	c.usage.Access(0, e.clock).Ops.Add(1)
	d, err := e.loadDoc(context.Background(), e.store, st.meta.ID, keycodec.Append(nil, id))
	if err != nil || d == nil || st.expired(d.h, e.nowMillis()) {
		return nil, err
	}
	return d.doc, nil
}
