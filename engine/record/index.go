package record

import (
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/geo"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/engine/text"
)

// IndexMeta is an index's persisted catalog entry.
type IndexMeta struct {
	ID          uint64   `bson:"id"`
	Name        string   `bson:"name"`
	Key         bson.Raw `bson:"key"`
	Unique      bool     `bson:"unique,omitempty"`
	Sparse      bool     `bson:"sparse,omitempty"`
	Partial     bson.Raw `bson:"partialFilterExpression,omitempty"`
	ExpireAfter *int32   `bson:"expireAfterSeconds,omitempty"`
	// Hidden indexes are maintained but never used by the planner.
	Hidden bool `bson:"hidden,omitempty"`
	// Building marks an index that writers maintain while its entries for
	// the documents stored before it are still being written: on a store
	// shared by several servers an index is built in that state, which no
	// planner uses, until every server maintains it and the backfill is
	// done.
	Building bool `bson:"building,omitempty"`
	// Builder is the roster id of the server building the index, while
	// Building: another server takes the build over if that one's lease
	// runs out.
	Builder string `bson:"builder,omitempty"`
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

// IndexField is one field of an index's key pattern.
type IndexField struct {
	Path string
	Desc bool // descending: its keys are encoded with keycodec.AppendDesc
	// Hashed fields keep the hash of their value (hashed.go), which serves
	// equality only.
	Hashed bool
	// Text marks the _fts and _ftsx fields of a text index, which hold a
	// term and its score (textkeys.go).
	Text bool
	// Geo is set for a "2dsphere" or "2d" field: how its keys are made.
	Geo *geo.Index
}

// AppendKey appends v to key in the field's direction: the encoding of
// one field of an index entry, or of a bound on it. v is the value the
// entry holds (a hash, a collation key, a cell), already made.
func (f IndexField) AppendKey(key []byte, v bsoncore.Value) []byte {
	if f.Desc {
		return keycodec.AppendDesc(key, v)
	}
	return keycodec.Append(key, v)
}

// Index is a compiled secondary index: its catalog entry, its key pattern
// and its partial filter (nil when it has none).
type Index struct {
	Meta    IndexMeta
	Fields  []IndexField
	Partial *query.Filter
	// Text is the text index's spec; nil for other indexes (textkeys.go).
	Text *text.Spec
	// Collator is the index's collation: its entries hold the collation
	// keys of strings (collation.Collator.Key). nil is the simple one.
	Collator *collation.Collator
}

// TSField is the system field whose index turns on Cosmos-style TTL.
const TSField = "_ts"

// IsTS reports whether ix is the TTL index on _ts, which has no entries of
// its own: the expiry families kept for every document serve it.
func (ix *Index) IsTS() bool {
	return len(ix.Fields) == 1 && ix.Fields[0].Path == TSField && ix.Meta.ExpireAfter != nil
}

// CompileIndex compiles an index from its catalog entry.
func CompileIndex(im IndexMeta) (*Index, error) {
	ix := &Index{Meta: im}
	elems, err := im.Key.Elements()
	if err != nil {
		return nil, fmt.Errorf("key pattern: %w", err)
	}
	for _, el := range elems {
		desc := false
		if f, ok := el.Value().AsFloat64OK(); ok && f < 0 {
			desc = true
		}
		hashed := el.Value().Type == bson.TypeString && el.Value().StringValue() == HashedKind
		field := IndexField{Path: el.Key(), Desc: desc, Hashed: hashed}
		if typ, ok := el.Value().StringValueOK(); ok && (typ == geo.Sphere || typ == geo.Plane) {
			if err := compileGeoField(&field, typ, im.Extra); err != nil {
				return nil, err
			}
		}
		ix.Fields = append(ix.Fields, field)
	}
	if doc := im.Collation(); doc != nil {
		if ix.Collator, err = collation.Parse(doc); err != nil {
			return nil, fmt.Errorf("collation: %w", err)
		}
	}
	if len(im.Partial) > 0 {
		// A partial filter compares strings under the index's collation.
		if ix.Partial, err = query.CompileWith(im.Partial, query.Options{Collator: ix.Collator}); err != nil {
			return nil, err
		}
	}
	if err := ix.compileText(); err != nil {
		return nil, err
	}
	return ix, nil
}

// Keys returns the encoded index keys of doc (without the _id suffix),
// deduplicated, as Generate makes them; nil when the document is not in the
// index (sparse with no indexed field, or outside the partial filter). multi
// reports an array expansion. A document MongoDB cannot index (parallel
// arrays, an ambiguous positional path component) is an error.
func (ix *Index) Keys(doc bson.Raw) (keys [][]byte, multi bool, err error) {
	if ix.Partial != nil && !ix.Partial.Match(doc) {
		return nil, false, nil
	}
	keys, multi, err = ix.Generate(bsoncore.Document(doc))
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

// IndexValues collects the values path reaches for a duplicate key report
// or a TTL date check: a terminal array contributes its elements (an empty
// array contributes undefined), arrays along the way are traversed element
// by element. It finds at least the values other than whole arrays that
// Generate makes keys of.
func IndexValues(doc bsoncore.Document, path string) (vals []bsoncore.Value, sawArray bool) {
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

// EntryKey is the pebble key of one index entry.
func (ix *Index) EntryKey(dst, key, pk []byte) []byte {
	if dst == nil {
		dst = make([]byte, 0, 1+8+len(key)+len(pk))
	}
	dst = IndexPrefix(dst, ix.Meta.ID)
	dst = append(dst, key...)
	if !ix.Meta.Unique {
		dst = append(dst, pk...)
	}
	return dst
}

// Spec is the index's specification as MongoDB lists it: v, unique and
// hidden (when set), key and name, then the other options as given, with
// the current expireAfterSeconds, which collMod may have changed.
func (im IndexMeta) Spec() bson.D {
	v := im.Version
	if v == 0 {
		v = 2
	}
	d := bson.D{{Key: "v", Value: v}}
	if im.Unique {
		d = append(d, bson.E{Key: "unique", Value: true})
	}
	if im.Hidden {
		d = append(d, bson.E{Key: "hidden", Value: true})
	}
	d = append(d, bson.E{Key: "key", Value: im.Key}, bson.E{Key: "name", Value: im.Name})
	if im.Extra == nil {
		// Catalog entries from before the options were kept.
		if im.Sparse {
			d = append(d, bson.E{Key: "sparse", Value: true})
		}
		if im.Partial != nil {
			d = append(d, bson.E{Key: "partialFilterExpression", Value: im.Partial})
		}
		if im.ExpireAfter != nil {
			d = append(d, bson.E{Key: "expireAfterSeconds", Value: *im.ExpireAfter})
		}
		return d
	}
	elems, _ := im.Extra.Elements()
	listedTTL := false
	for _, el := range elems {
		if el.Key() == "expireAfterSeconds" {
			if im.ExpireAfter != nil {
				d = append(d, bson.E{Key: el.Key(), Value: *im.ExpireAfter})
				listedTTL = true
			}
			continue
		}
		d = append(d, bson.E{Key: el.Key(), Value: el.Value()})
	}
	if im.ExpireAfter != nil && !listedTTL {
		// collMod made the index a TTL index.
		d = append(d, bson.E{Key: "expireAfterSeconds", Value: *im.ExpireAfter})
	}
	return d
}

// OtherOptions are the kept options that neither identify an index nor
// have a field of their own, such as storageEngine, by name.
func (im IndexMeta) OtherOptions() map[string]string {
	elems, _ := im.Extra.Elements()
	out := make(map[string]string, len(elems))
	for _, el := range elems {
		switch el.Key() {
		// MongoDB leaves these out: v, background, hidden and
		// textIndexVersion never tell indexes apart (jstests/core/fts_index.js:
		// a text index asked again with another version is no new
		// index); the others are compared on their own.
		case "v", "background", "hidden", "textIndexVersion", "sparse", "partialFilterExpression", "expireAfterSeconds", "collation":
		default:
			out[el.Key()] = el.Value().String()
		}
	}
	return out
}

// Collation returns the index's collation document, normalised; nil for
// the simple collation.
func (im IndexMeta) Collation() bson.Raw {
	v, err := im.Extra.LookupErr("collation")
	if err != nil || v.Type != bson.TypeEmbeddedDocument {
		return nil
	}
	return v.Document()
}

// Describe renders an index for error messages.
func (im IndexMeta) Describe() string {
	d := bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: im.Key}, {Key: "name", Value: im.Name}}
	raw, err := bson.Marshal(d)
	if err != nil {
		return im.Name
	}
	return bson.Raw(raw).String()
}

// KeyValue is the document's values for the index key, as reported in a
// duplicate key error.
func (ix *Index) KeyValue(doc bson.Raw) bson.D {
	out := make(bson.D, 0, len(ix.Fields))
	for _, f := range ix.Fields {
		vals, _ := IndexValues(bsoncore.Document(doc), f.Path)
		var v any = nil
		if len(vals) > 0 {
			v = bson.RawValue{Type: bson.Type(vals[0].Type), Value: vals[0].Data}
		}
		out = append(out, bson.E{Key: f.Path, Value: v})
	}
	return out
}

// SharesArray reports whether field i of a multikey index may have been
// expanded from the same array as an earlier field: their paths have the
// same first component.
func (ix *Index) SharesArray(i int) bool {
	if !ix.Meta.Multikey {
		return false
	}
	first, _, _ := strings.Cut(ix.Fields[i].Path, ".")
	for _, f := range ix.Fields[:i] {
		if other, _, _ := strings.Cut(f.Path, "."); other == first {
			return true
		}
	}
	return false
}
