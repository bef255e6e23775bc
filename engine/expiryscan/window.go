package expiryscan

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/ttlindex"
)

// InWindow calls fn with the primary key of each document of c in s whose
// expiry entry, or entry in a date TTL index, falls in (fromMs, toMs].
// A document may come more than once, and one with an entry in the window
// may expire outside it (under another TTL): fn decides by the document.
func InWindow(ctx context.Context, s kv.Reader, c Collection, fromMs, toMs int64, fn func(pk []byte) error) error {
	id := c.ID
	if c.TTL.Enabled {
		if c.TTL.Default > 0 {
			shift := int64(c.TTL.Default) * 1000
			_, lo := ttlindex.TSRange(id, fromMs-shift)
			_, hi := ttlindex.TSRange(id, toMs-shift)
			if err := scanPKs(ctx, s, lo, hi, true, fn); err != nil {
				return err
			}
		}
		_, lo := ttlindex.OwnRange(id, fromMs)
		_, hi := ttlindex.OwnRange(id, toMs)
		if err := scanPKs(ctx, s, lo, hi, true, fn); err != nil {
			return err
		}
	}
	for _, ix := range c.DateTTL {
		shift := int64(*ix.Meta.ExpireAfter) * 1000
		dateValue := func(ms int64) bsoncore.Value {
			return bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, ms)}
		}
		// Dates in (from, to]: in an ascending index, the entries past
		// every key that starts with from's and up to those that start
		// with to's; in a descending one, whose keys sort in reverse, from
		// the first that starts with to's up to the first that starts with
		// from's.
		var lo, hi []byte
		if ix.Fields[0].Desc {
			lo = keycodec.AppendDesc(record.IndexPrefix(nil, ix.Meta.ID), dateValue(toMs-shift))
			hi = keycodec.AppendDesc(record.IndexPrefix(nil, ix.Meta.ID), dateValue(fromMs-shift))
		} else {
			lo = append(record.IndexPrefix(nil, ix.Meta.ID), record.PrefixEnd(keycodec.Append(nil, dateValue(fromMs-shift)))...)
			hi = append(record.IndexPrefix(nil, ix.Meta.ID), record.PrefixEnd(keycodec.Append(nil, dateValue(toMs-shift)))...)
		}
		if err := scanPKs(ctx, s, lo, hi, false, fn); err != nil {
			return err
		}
	}
	return nil
}

// scanPKs calls fn with the primary key of each entry in [lo, hi): taken
// from the key of an expiry entry, or from the value of an index entry.
func scanPKs(ctx context.Context, s kv.Reader, lo, hi []byte, expiryKeys bool, fn func(pk []byte) error) error {
	it, err := s.Iter(ctx, lo, hi, false)
	if err != nil {
		return fmt.Errorf("engine: scan expiring: %w", err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		pk := it.Value()
		if expiryKeys {
			if _, _, _, pk, err = ttlindex.ParseKey(it.Key()); err != nil {
				return err
			}
		}
		if err := fn(append([]byte(nil), pk...)); err != nil {
			return err
		}
	}
	return it.Error()
}
