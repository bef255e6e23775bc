package engine

import (
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/query"
)

// indexMeta is an index's persisted catalog entry.
type indexMeta struct {
	ID          uint64   `bson:"id"`
	Name        string   `bson:"name"`
	Key         bson.Raw `bson:"key"`
	Unique      bool     `bson:"unique,omitempty"`
	Sparse      bool     `bson:"sparse,omitempty"`
	Partial     bson.Raw `bson:"partialFilterExpression,omitempty"`
	ExpireAfter *int32   `bson:"expireAfterSeconds,omitempty"`
	// Hidden indexes are maintained but never used by the planner.
	Hidden bool `bson:"hidden,omitempty"`
	// Multikey is set once any document produced more than one key, after
	// which the planner stops combining bounds on the index.
	Multikey bool `bson:"multikey,omitempty"`
	// Version is the index version the spec asked for (1 or 2).
	Version int32 `bson:"v,omitempty"`
	// Extra holds the spec's options other than v, key, name, unique and
	// hidden, as given, for listIndexes; nil for indexes created before it
	// was kept.
	Extra bson.Raw `bson:"extra,omitempty"`
}

type indexField struct {
	path string
	desc bool
}

// index is a compiled secondary index.
type index struct {
	meta    indexMeta
	fields  []indexField
	partial *query.Filter
}

// tsField is the system field whose index turns on Cosmos-style TTL.
const tsField = "_ts"

// isTS reports whether ix is the TTL index on _ts, which has no entries of
// its own: the expiry families kept for every document serve it.
func (ix *index) isTS() bool {
	return len(ix.fields) == 1 && ix.fields[0].path == tsField && ix.meta.ExpireAfter != nil
}

func compileIndex(im indexMeta) (*index, error) {
	ix := &index{meta: im}
	elems, err := im.Key.Elements()
	if err != nil {
		return nil, fmt.Errorf("key pattern: %w", err)
	}
	for _, el := range elems {
		desc := false
		if f, ok := el.Value().AsFloat64OK(); ok && f < 0 {
			desc = true
		}
		ix.fields = append(ix.fields, indexField{path: el.Key(), desc: desc})
	}
	if len(im.Partial) > 0 {
		if ix.partial, err = query.Compile(im.Partial); err != nil {
			return nil, err
		}
	}
	return ix, nil
}

// keys returns the encoded index keys of doc (without the _id suffix),
// deduplicated, as generate makes them; nil when the document is not in the
// index (sparse with no indexed field, or outside the partial filter). multi
// reports an array expansion. A document MongoDB cannot index (parallel
// arrays, an ambiguous positional path component) is an error.
func (ix *index) keys(doc bson.Raw) (keys [][]byte, multi bool, err error) {
	if ix.partial != nil && !ix.partial.Match(doc) {
		return nil, false, nil
	}
	keys, multi, err = ix.generate(bsoncore.Document(doc))
	if err != nil {
		return nil, false, err
	}
	// Scans of an index that is not multikey expect one entry per document.
	return keys, multi || len(keys) > 1, nil
}

func dedupKeys(keys [][]byte) [][]byte {
	out := keys[:0]
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if !seen[string(k)] {
			seen[string(k)] = true
			out = append(out, k)
		}
	}
	return out
}

var (
	nullValue      = bsoncore.Value{Type: bsoncore.TypeNull}
	undefinedValue = bsoncore.Value{Type: bsoncore.TypeUndefined}
)

// indexValues collects the values path reaches for a duplicate key report
// or a TTL date check: a terminal array contributes its elements (an empty
// array contributes undefined), arrays along the way are traversed element
// by element. It finds at least the values other than whole arrays that
// generate makes keys of.
func indexValues(doc bsoncore.Document, path string) (vals []bsoncore.Value, sawArray bool) {
	var walk func(d bsoncore.Document, parts []string, isArray bool)
	walk = func(d bsoncore.Document, parts []string, isArray bool) {
		v, err := d.LookupErr(parts[0])
		if err != nil {
			if isArray {
				// A path component through an array also reaches into each
				// element document.
				elems, _ := bsoncore.Array(d).Values()
				for _, ev := range elems {
					if sub, ok := ev.DocumentOK(); ok {
						walk(sub, parts, false)
					}
				}
			}
			return
		}
		if len(parts) == 1 {
			if arr, ok := v.ArrayOK(); ok {
				sawArray = true
				elems, _ := arr.Values()
				if len(elems) == 0 {
					vals = append(vals, undefinedValue)
				}
				vals = append(vals, elems...)
				return
			}
			vals = append(vals, v)
			return
		}
		switch v.Type {
		case bsoncore.TypeEmbeddedDocument:
			walk(v.Document(), parts[1:], false)
		case bsoncore.TypeArray:
			sawArray = true
			walk(bsoncore.Document(v.Array()), parts[1:], true)
		}
	}
	walk(doc, strings.Split(path, "."), false)
	return vals, sawArray
}

// entryKey is the pebble key of one index entry.
func (ix *index) entryKey(dst, key, pk []byte) []byte {
	if dst == nil {
		dst = make([]byte, 0, 1+8+len(key)+len(pk))
	}
	dst = indexPrefix(dst, ix.meta.ID)
	dst = append(dst, key...)
	if !ix.meta.Unique {
		dst = append(dst, pk...)
	}
	return dst
}
