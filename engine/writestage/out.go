package writestage

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Out writes docs to a temporary collection made like db.coll, with its
// options and indexes, and renames it over db.coll in one commit, so that
// readers see the old documents or the new ones and a failure leaves the
// old ones, as MongoDB's $out does.
func Out(ctx context.Context, h Host, db, coll string, docs []bson.Raw) error {
	options, indexes, err := h.Target(db, coll)
	if err != nil {
		return err
	}
	tmp := tempName()
	if err := h.EnsureCollection(db, tmp, options); err != nil {
		return err
	}
	renamed := false
	defer func() {
		if !renamed {
			h.DropCollection(db, tmp)
		}
	}()
	if len(indexes) > 0 {
		if err := h.CreateIndexes(db, tmp, indexes); err != nil {
			return err
		}
	}
	for start := 0; start < len(docs); {
		if err := ctx.Err(); err != nil {
			return err
		}
		// Batches of at most 16 MiB, as a client would insert them.
		end, n := start, 0
		for end < len(docs) && (end == start || n+len(docs[end]) <= 16<<20) {
			n += len(docs[end])
			end++
		}
		if err := h.Insert(ctx, db, tmp, docs[start:end]); err != nil {
			return err
		}
		start = end
	}
	if err := h.RenameOver(db, tmp, coll); err != nil {
		return err
	}
	renamed = true
	return nil
}

// tempName is the name of a temporary collection of $out, as MongoDB
// names them.
func tempName() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "tmp.agg_out." + hex.EncodeToString(b[:])
}
