package engine

import (
	"bytes"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/ttlindex"
)

var bytesEqual = bytes.Equal

func timeOfMillis(ms int64) time.Time { return time.UnixMilli(ms) }

// loadDoc reads the document at pk from r (the store, a snapshot or a
// batch); nil if there is none. The result owns its memory.
func (e *Engine) loadDoc(r pebble.Reader, collID uint64, pk []byte) (*storedDoc, error) {
	v, closer, err := r.Get(docKey(nil, collID, pk))
	if err == pebble.ErrNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("engine: read document: %w", err)
	}
	defer closer.Close()
	h, doc, err := splitValue(v)
	if err != nil {
		return nil, err
	}
	return &storedDoc{pk: append([]byte(nil), pk...), h: h, doc: append(bson.Raw(nil), doc...)}, nil
}

// expired reports whether a document with header h is expired under the
// collection's current setting at nowMs (TTL spec section 4).
func (st *collState) expired(h header, nowMs int64) bool {
	return ttlindex.Expired(st.ttl, h.ts, h.ttl, nowMs)
}
