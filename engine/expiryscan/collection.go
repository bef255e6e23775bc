package expiryscan

import (
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/ttlindex"
)

// Collection is what a scan needs of the collection it scans.
type Collection struct {
	ID uint64
	// TTL is the collection's expiry by _ts and per-document ttl.
	TTL ttlindex.Setting
	// DateTTL are its indexes with expireAfterSeconds on a date field.
	DateTTL []*record.Index
}

// ExpiryOf is the instant a document with header h expires: under the
// collection's TTL or the earliest under its date TTL indexes.
func (c Collection) ExpiryOf(h record.Header, doc bson.Raw) (int64, bool) {
	at, ok := int64(0), false
	if c.TTL.Enabled {
		at, ok = ttlindex.ExpireAt(c.TTL, h.TS, h.TTL)
	}
	for _, ix := range c.DateTTL {
		shift := int64(*ix.Meta.ExpireAfter) * 1000
		vals, _ := record.IndexValues(bsoncore.Document(doc), ix.Fields[0].Path)
		for _, v := range vals {
			if ms, isDate := v.DateTimeOK(); isDate && (!ok || ms+shift < at) {
				at, ok = ms+shift, true
			}
		}
	}
	return at, ok
}
