package engine

import (
	"slices"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/engine/text"
	"github.com/lethedb/lethe/mongoerr"
)

// isIndexKind reports whether a key pattern value names a kind of index
// Lethe has beyond the ascending and descending ones.
func isIndexKind(v bson.RawValue) bool {
	s, ok := v.StringValueOK()
	return ok && (s == record.HashedKind || s == text.Kind)
}

// checkIndexKinds checks a key pattern's special fields as MongoDB does:
// one plugin per index (src/mongo/db/catalog/index_key_validate.cpp), and
// at most one hashed field (expression_params.cpp, code 31303).
func checkIndexKinds(key bson.Raw, keys []bson.RawElement) error {
	kind, hashed := "", 0
	for _, kel := range keys {
		if !isIndexKind(kel.Value()) {
			continue
		}
		s := kel.Value().StringValue()
		if kind != "" && kind != s {
			return mongoerr.New(mongoerr.CannotCreateIndex, "Can't use more than one index plugin for a single index.")
		}
		kind = s
		if s == record.HashedKind {
			hashed++
		}
	}
	if hashed > 1 {
		return mongoerr.New(record.HashedFields, "A maximum of one index field is allowed to be hashed but found %d for 'key' %s", hashed, key.String())
	}
	return nil
}

// checkKindOptions checks the options of an index against its kind, as
// MongoDB does: a hashed index cannot be unique
// (jstests/core/index/hashed/single_field_hashed_index.js, code 16764),
// and no partial filter may hold $text, which only a text index answers.
func checkKindOptions(im record.IndexMeta) error {
	if len(im.Partial) > 0 {
		// $text needs a text index; no partial filter can use one.
		if f, err := query.Compile(im.Partial); err == nil && f.Text() != nil {
			return mongoerr.New(mongoerr.CannotCreateIndex, "Expression not supported in partial index: $text")
		}
	}
	keys, _ := im.Key.Elements()
	for _, kel := range keys {
		if s, _ := kel.Value().StringValueOK(); s == record.HashedKind && im.Unique {
			return mongoerr.New(record.HashedUnique, "Currently hashed indexes cannot guarantee uniqueness. Use a regular index.")
		}
	}
	return nil
}

// isTextSpec reports whether an index specification is of a text index.
func isTextSpec(spec bson.Raw) bool {
	key, ok := spec.Lookup("key").DocumentOK()
	return ok && text.IsTextKey(key)
}

// textOptions are the options of text indexes, which normalizeText sets.
var textOptions = map[string]bool{"weights": true, "default_language": true, "language_override": true, "textIndexVersion": true}

// normalizeText turns the key pattern of a text index into the form
// MongoDB stores and lists ({_fts: "text", _ftsx: 1} for the text
// fields) and sets its options as MongoDB's fixSpec does: weights,
// default_language, language_override and textIndexVersion, after the
// other options. Other indexes are left alone.
func normalizeText(im *record.IndexMeta, spec bson.Raw, extra bson.D) (bson.D, error) {
	if !text.IsTextKey(im.Key) {
		return extra, nil
	}
	stored, opts, err := text.Normalize(im.Key, spec.Lookup("weights"), spec.Lookup("default_language"), spec.Lookup("language_override"), spec.Lookup("textIndexVersion"))
	if err != nil {
		return nil, err
	}
	im.Key = stored
	kept := bson.D{}
	for _, e := range extra {
		if !textOptions[e.Key] {
			kept = append(kept, e)
		}
	}
	return append(kept, opts...), nil
}

// checkOneText refuses a second text index on a collection: MongoDB
// allows one (IndexOptionsConflict when the key patterns, all alike once
// stored, differ in options; otherwise refused outright).
func checkOneText(im record.IndexMeta, existing, fresh []record.IndexMeta) error {
	if !text.IsTextKey(im.Key) {
		return nil
	}
	for _, old := range append(append([]record.IndexMeta(nil), existing...), fresh...) {
		if text.IsTextKey(old.Key) {
			return mongoerr.New(mongoerr.IndexOptionsConflict, "An equivalent index already exists with a different name and options. Requested index: %s, existing index: %s", im.Describe(), old.Describe())
		}
	}
	return nil
}

// hashedBounds are the bounds explain shows for a plan of an index with a
// hashed field, as MongoDB shows them: per field, the points of its
// equality (a hashed field's as the hash, a 64-bit integer) or all values;
// nil for other indexes.
func hashedBounds(ix *record.Index, conj []query.Predicate) bson.D {
	if !slices.ContainsFunc(ix.Fields, func(f record.IndexField) bool { return f.Hashed }) {
		return nil
	}
	var out bson.D
	bounded := true
	for _, f := range ix.Fields {
		var points []string
		if bounded {
			for _, c := range conj {
				if c.Path == f.Path && (c.Op == "$eq" || c.Op == "$in") && indexable(c) {
					for _, v := range c.Values {
						if f.Hashed {
							v = record.HashedValue(v)
						}
						s := boundString(v)
						points = append(points, "["+s+", "+s+"]")
					}
					break
				}
			}
		}
		if points == nil {
			bounded = false
			points = []string{"[MinKey, MaxKey]"}
		}
		slices.Sort(points)
		out = append(out, bson.E{Key: f.Path, Value: points})
	}
	return out
}

// boundString writes a value as explain's bounds do: numbers plain,
// strings quoted, others in extended JSON.
func boundString(v bsoncore.Value) string {
	switch v.Type {
	case bsoncore.TypeInt64:
		return strconv.FormatInt(v.Int64(), 10)
	case bsoncore.TypeInt32:
		return strconv.FormatInt(int64(v.Int32()), 10)
	case bsoncore.TypeDouble:
		return strconv.FormatFloat(v.Double(), 'g', -1, 64)
	case bsoncore.TypeString:
		return strconv.Quote(v.StringValue())
	}
	return v.String()
}
