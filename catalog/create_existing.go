package catalog

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/mongoerr"
)

// createExisting decides the answer to create for a collection that already
// exists. MongoDB 7 makes create idempotent: the same options are success,
// and only different ones fail with NamespaceExists, naming the options the
// collection has (src/mongo/db/catalog/create_collection.cpp,
// checkCollectionOptions; jstests/core/ddl/create_collection.js).
func (s *Service) createExisting(db, coll string, opts bson.Raw, exists error) error {
	for _, ci := range s.eng.Collections(context.TODO(), db) {
		if ci.Name != coll {
			continue
		}
		if sameCreateOptions(ci.Options, opts) {
			return nil
		}
		var shown strings.Builder
		fmt.Fprintf(&shown, "uuid: UUID(\"%x-%x-%x-%x-%x\")", ci.UUID.Data[0:4], ci.UUID.Data[4:6], ci.UUID.Data[6:8], ci.UUID.Data[8:10], ci.UUID.Data[10:])
		for key, v := range command.Fields(ci.Options) {
			fmt.Fprintf(&shown, ", %s: %s", key, v)
		}
		return mongoerr.New(mongoerr.NamespaceExists, "namespace %s.%s already exists, but with different options: { %s }", db, coll, shown.String())
	}
	return exists // a view, or the collection went away meanwhile
}

// sameCreateOptions compares two sets of create options as MongoDB compares
// parsed collection options: the order of the fields does not matter, and
// an option at its default (capped: false) is the same as leaving it out.
func sameCreateOptions(a, b bson.Raw) bool {
	ma, mb := createOptionSet(a), createOptionSet(b)
	if len(ma) != len(mb) {
		return false
	}
	for k, va := range ma {
		vb, ok := mb[k]
		if !ok || !sameOptionValue(va, vb) {
			return false
		}
	}
	return true
}

func createOptionSet(doc bson.Raw) map[string]bson.RawValue {
	m := make(map[string]bson.RawValue)
	for key, v := range command.Fields(doc) {
		if string(key) == "capped" {
			if on, _ := command.Bool("create", "capped", v); !on {
				continue
			}
		}
		m[string(key)] = v
	}
	return m
}

// sameOptionValue compares option values; numbers compare by value, so that
// size: 1 and size: 1.0 are the same, and documents byte for byte.
func sameOptionValue(a, b bson.RawValue) bool {
	if fa, ok := a.AsFloat64OK(); ok {
		fb, ok := b.AsFloat64OK()
		return ok && fa == fb
	}
	return a.Type == b.Type && bytes.Equal(a.Value, b.Value)
}
