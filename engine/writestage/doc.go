// Package writestage carries out the aggregation stages that write a
// collection, $out and $merge, once package pipeline has computed their
// documents.
//
// $out fills a temporary collection made like its target and renames it
// over the target in one commit; $merge finds each document's match by
// its on fields and updates or inserts it as whenMatched and
// whenNotMatched say. Both write through the engine's own write paths
// (inserts, updates, index builds, renames), which they reach through
// Host, so the package never imports the engine.
package writestage

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/update"
)

// Host is the engine as the writing stages use it. Its writes skip the
// collections' validators when the aggregate command asked
// (bypassDocumentValidation).
type Host interface {
	// Insert inserts docs into db.coll, in order, and returns the error
	// of the first document that failed, if any.
	Insert(ctx context.Context, db, coll string, docs []bson.Raw) error
	// Update applies u to the first document of db.coll that matches
	// filter, inserting one with upsert when none does, and returns how
	// many matched.
	Update(ctx context.Context, db, coll string, filter bson.Raw, u *update.Update, upsert bool) (matched int64, err error)
	// Exists reports whether a document of db.coll matches filter.
	Exists(ctx context.Context, db, coll string, filter bson.Raw) (bool, error)
	// EnsureCollection creates db.coll with options unless it exists.
	EnsureCollection(db, coll string, options bson.Raw) error
	// Target returns the options and the index specifications (the _id
	// index's aside) of db.coll; nil for a collection that does not exist.
	Target(db, coll string) (options bson.Raw, indexes []bson.Raw, err error)
	// CreateIndexes builds indexes of db.coll from specs.
	CreateIndexes(db, coll string, specs []bson.Raw) error
	// DropCollection drops db.coll, if it exists.
	DropCollection(db, coll string)
	// RenameOver renames db.from to db.to, dropping db.to if it exists,
	// in one commit.
	RenameOver(db, from, to string) error
	// UniqueIndexOn reports whether db.coll has a unique index, not
	// partial, whose fields are exactly fields and whose collation is
	// the one the aggregation of ctx runs under; for _id alone, the _id
	// index, also of a collection yet to be made.
	UniqueIndexOn(ctx context.Context, db, coll string, fields []string) bool
}
