package update

import (
	"bytes"
	"context"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/mongoerr"
)

// maxDocumentSize is the largest document an update may produce.
const maxDocumentSize = 16 * 1024 * 1024

// Options are the parts of an update command that shape its updates.
type Options struct {
	// Now is the time $currentDate writes, and $$NOW in a pipeline. The
	// zero time means the time at which the update is applied, or for
	// $$NOW, compiled.
	Now time.Time
	// ArrayFilters select the array elements of "$[<id>]" path components.
	ArrayFilters []bson.Raw
	// Collator is the collation of the update statement: its array
	// filters, $pull, $pullAll and $addToSet compare strings under it.
	// nil is the simple collation.
	Collator *collation.Collator
}

// Update is a compiled update: operators, a replacement document or a
// pipeline. It is safe for concurrent use.
type Update struct {
	replacement bson.Raw // nil unless a replacement
	pipeline    []stage  // nil unless a pipeline, empty for an empty one
	root        *objectNode
	filters     map[string]*query.Filter
	now         time.Time
}

// Compile parses an update document. A document whose first field starts
// with '$' is an operator update; any other, the empty document included, is
// a replacement. The update keeps its own copy of the document.
func Compile(update bson.Raw, opts Options) (*Update, error) {
	if err := bsoncore.Document(update).Validate(); err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "invalid update document: %v", err)
	}
	// Compiled operands point into the document.
	update = bytes.Clone(update)
	elems, _ := bsoncore.Document(update).Elements()
	if len(elems) == 0 || !strings.HasPrefix(elems[0].Key(), "$") {
		return &Update{replacement: update, now: opts.Now}, nil
	}
	filters, err := compileArrayFilters(opts.ArrayFilters, opts.Collator)
	if err != nil {
		return nil, err
	}
	p := parser{root: newObjectNode(), filters: filters, used: map[string]bool{}, coll: opts.Collator}
	if err := p.parse(bsoncore.Document(update)); err != nil {
		return nil, err
	}
	return &Update{root: p.root, filters: filters, now: opts.Now}, nil
}

// Now is the time the update was compiled for (Options.Now), zero if none.
func (u *Update) Now() time.Time { return u.now }

// IsReplacement reports whether the update replaces whole documents.
func (u *Update) IsReplacement() bool { return u.replacement != nil }

// Apply returns the document the update makes of doc, with _id first, and
// whether it differs from doc: an update that only sets values already there
// changes nothing, as MongoDB's nModified counts. positional is the index of
// the array element the query matched, which "$" stands for, or -1.
func (u *Update) Apply(doc bson.Raw, positional int) (out bson.Raw, changed bool, err error) {
	return u.ApplyContext(context.Background(), doc, positional)
}

// ApplyContext is Apply for a request: a pipeline's expressions stop with
// ctx's error when ctx ends.
func (u *Update) ApplyContext(ctx context.Context, doc bson.Raw, positional int) (out bson.Raw, changed bool, err error) {
	if err := bsoncore.Document(doc).Validate(); err != nil {
		return nil, false, mongoerr.New(mongoerr.InvalidBSON, "invalid document: %v", err)
	}
	switch {
	case u.IsReplacement():
		return replace(doc, u.replacement, false)
	case u.pipeline != nil:
		out, err := u.run(ctx, doc)
		if err != nil {
			return nil, false, err
		}
		return replace(doc, out, true)
	}
	root := newValue(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc})
	a := u.applier(root, positional, false)
	if err := u.root.apply(a, target{elem: root}); err != nil {
		return nil, false, err
	}
	if !a.changed {
		return doc, false, nil
	}
	out, err = finish(root)
	return out, err == nil, err
}

func (u *Update) applier(root *value, positional int, insert bool) *applier {
	now := u.now
	if now.IsZero() {
		now = time.Now()
	}
	return &applier{root: root, positional: positional, filters: u.filters, now: now, insert: insert}
}

// replace replaces doc with a replacement document, or with what a
// pipeline made of it: it keeps doc's _id, which the replacement may repeat
// but not change. Only a pipeline may write top-level fields that start
// with '$'.
func replace(doc, replacement bson.Raw, pipeline bool) (bson.Raw, bool, error) {
	if bytes.Equal(doc, replacement) {
		return doc, false, nil
	}
	elems, _ := bsoncore.Document(replacement).Elements()
	for _, e := range elems {
		if strings.HasPrefix(e.Key(), "$") && !pipeline {
			return nil, false, dollarPrefixed(e.Key())
		}
	}
	oldID, hadID := lookupID(doc)
	newID, hasID := lookupID(replacement)
	if hadID && hasID && keycodec.Compare(oldID, newID) != 0 {
		return nil, false, mongoerr.New(mongoerr.ImmutableField, "After applying the update, the (immutable) field '_id' was found to have been altered to %s", describe("_id", newID))
	}
	root := newDocument()
	if hadID && !hasID {
		root.appendField("_id", newValue(oldID))
	}
	for _, e := range elems {
		root.appendField(e.Key(), newValue(e.Value()))
	}
	out, err := finish(root)
	return out, err == nil, err
}

func lookupID(doc bson.Raw) (bsoncore.Value, bool) {
	v, err := bsoncore.Document(doc).LookupErr("_id")
	return v, err == nil
}

// finish encodes an updated document, moving _id to the front.
func finish(root *value) (bson.Raw, error) {
	if i := root.lookup("_id"); i > 0 {
		id := root.fields[i]
		root.fields = append(root.fields[:i], root.fields[i+1:]...)
		root.fields = append([]field{id}, root.fields...)
	}
	out := root.appendTo(nil)
	if len(out) > maxDocumentSize {
		return nil, mongoerr.New(mongoerr.Code(17419), "Resulting document after update is larger than %d", maxDocumentSize)
	}
	return out, nil
}
