package engine

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/update"
	"github.com/lethedb/lethe/mongoerr"
)

// upsert inserts the document an upsert statement builds when it matched
// nothing. It runs in the writer that looked for the match, which still
// holds the locks of the keys it found missing, so that no other writer
// can insert them in between, and no request waits for a lock it holds
// itself. The caller commits.
func (w *writer) upsert(u *update.Update, filter bson.Raw) (*storedDoc, error) {
	doc, err := u.ApplyUpsert(filter)
	if err != nil {
		return nil, err
	}
	return w.insertOne(doc)
}

// maxUpsertAttempts bounds the retries of an upsert that keeps losing the
// race for its key; each retry means another writer inserted the key in
// between, which the retry then finds and updates.
const maxUpsertAttempts = 100

// retryUpsert reports whether an upsert that matched nothing and failed with
// err runs again. Like MongoDB, it retries a duplicate key error when the
// filter is nothing but equalities on exactly the fields of the index that
// refused the insert, with the values that collided: a concurrent upsert of
// the same key won the race, and running the statement again matches the
// document it made.
func retryUpsert(ctx context.Context, err error, filter bson.Raw, attempt int) bool {
	me, ok := mongoerr.As(err)
	if !ok || me.Code != mongoerr.DuplicateKey || attempt >= maxUpsertAttempts || ctx.Err() != nil {
		return false
	}
	var keyValue bson.D
	for _, x := range me.Extra {
		if x.Key == "keyValue" {
			keyValue, _ = x.Value.(bson.D)
		}
	}
	elems, err := bsoncore.Document(filter).Elements()
	if err != nil || len(elems) == 0 || len(elems) != len(keyValue) {
		return false
	}
	for _, el := range elems {
		v := el.Value()
		if sub, ok := v.DocumentOK(); ok {
			first, err := sub.IndexErr(0)
			if err == nil && strings.HasPrefix(first.Key(), "$") {
				if first.Key() != "$eq" || len(sub) != 5+len(first) {
					return false
				}
				v = first.Value()
			}
		}
		if v.Type == bsoncore.TypeRegex {
			return false
		}
		found := false
		for _, kv := range keyValue {
			held := bsoncore.Value{Type: bsoncore.TypeNull}
			if rv, ok := kv.Value.(bson.RawValue); ok {
				held = bsoncore.Value{Type: bsoncore.Type(rv.Type), Data: rv.Value}
			}
			if kv.Key == el.Key() && keycodec.Compare(v, held) == 0 {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func bsonValue(v bsoncore.Value) bson.RawValue {
	return bson.RawValue{Type: bson.Type(v.Type), Value: v.Data}
}
