package engine

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/mongoerr"
)

// isIndexKind reports whether a key pattern value names a kind of index
// Lethe has beyond the ascending and descending ones.
func isIndexKind(v bson.RawValue) bool {
	s, ok := v.StringValueOK()
	return ok && s == record.HashedKind
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

// checkKindOptions checks the options of a spec against its index's kind:
// a hashed index cannot be unique
// (jstests/core/index/hashed/single_field_hashed_index.js, code 16764).
func checkKindOptions(im record.IndexMeta, spec bson.Raw) error {
	keys, _ := im.Key.Elements()
	for _, kel := range keys {
		if s, _ := kel.Value().StringValueOK(); s == record.HashedKind && im.Unique {
			return mongoerr.New(record.HashedUnique, "Currently hashed indexes cannot guarantee uniqueness. Use a regular index.")
		}
	}
	return nil
}
