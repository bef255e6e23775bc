package engine

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/distinct"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/pipeline"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/engine/update"
	"github.com/lethedb/lethe/mongoerr"
)

// collationKey carries the collation a command names (WithCollation).
type collationKey struct{}

// namedCollation is the collation document of a command, as sent.
type namedCollation struct{ doc bson.Raw }

// WithCollation returns ctx for a command, or one statement of a command,
// that names a collation: the engine's reads and writes under ctx compare
// strings under it rather than under the collection's default collation.
// doc is the collation document as sent; {locale: "simple"} asks for
// byte-wise comparison even where the collection has a default. The
// collation travels in the context as a transaction does, so that every
// entry point (find, count, distinct, aggregate, update, delete,
// findAndModify, explain) takes it without an argument of its own.
func WithCollation(ctx context.Context, doc bson.Raw) context.Context {
	if len(doc) <= 5 {
		// An empty document is no collation, as for mongod.
		return ctx
	}
	return context.WithValue(ctx, collationKey{}, namedCollation{doc: doc})
}

// ParseCollation checks a collation document as mongod does, with its
// codes and messages, and returns its normalised form, every field with
// its value (nil for the simple collation): what create and createIndexes
// store and what listCollections and listIndexes report.
func ParseCollation(doc bson.Raw) (bson.Raw, error) {
	c, err := collation.Parse(doc)
	if err != nil || c == nil {
		return nil, err
	}
	return c.Document(), nil
}

// commandCollator is the collation a command under ctx compares strings
// under on the collection in state st: the one it names, else the
// collection's default, else the simple one (nil). st may be nil (a
// missing collection).
func (e *Engine) commandCollator(ctx context.Context, st *collState) (*collation.Collator, error) {
	if n, ok := ctx.Value(collationKey{}).(namedCollation); ok {
		return e.collators.parse(n.doc)
	}
	if st == nil {
		return nil, nil
	}
	return st.coll, nil
}

// queryCollator is commandCollator for db.coll, looked up by name.
func (e *Engine) queryCollator(ctx context.Context, db, coll string) (*collation.Collator, error) {
	var st *collState
	if c := e.collection(db, coll); c != nil {
		st = c.st()
	}
	return e.commandCollator(ctx, st)
}

// collatorCache keeps the collators of the collation documents commands
// named lately, so that a command naming one does not make a collator
// (about 25 µs, and a pool of x/text collators) every time: applications
// name the same few collations again and again.
type collatorCache struct {
	mu sync.Mutex
	m  map[string]*collation.Collator // by the document as sent
}

// maxCachedCollators bounds the cache; past it, it starts again empty.
const maxCachedCollators = 64

// parse is collation.Parse through the cache. Errors are not cached.
func (c *collatorCache) parse(doc bson.Raw) (*collation.Collator, error) {
	c.mu.Lock()
	coll, ok := c.m[string(doc)]
	c.mu.Unlock()
	if ok {
		return coll, nil
	}
	coll, err := collation.Parse(doc)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCachedCollators {
		c.m = make(map[string]*collation.Collator)
	}
	c.m[string(doc)] = coll
	c.mu.Unlock()
	return coll, nil
}

// defaultCollator is the collation of a collection's options (create's
// collation, stored normalised); nil when it has none or it does not
// parse, which create prevents.
func defaultCollator(options bson.Raw) *collation.Collator {
	v, err := options.LookupErr("collation")
	if err != nil || v.Type != bson.TypeEmbeddedDocument {
		return nil
	}
	c, _ := collation.Parse(v.Document())
	return c
}

// normalizeCreateOptions replaces the collation of create's options by
// its normalised document, or drops it for the simple collation, as
// mongod stores and lists it.
func normalizeCreateOptions(options bson.Raw) (bson.Raw, error) {
	v, err := options.LookupErr("collation")
	if err != nil {
		return options, nil
	}
	if v.Type != bson.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'create.collation' is the wrong type '%s', expected type 'object'", typeName(v.Type))
	}
	norm, err := ParseCollation(v.Document())
	if err != nil {
		return nil, err
	}
	elems, _ := options.Elements()
	idx, out := bsoncore.AppendDocumentStart(nil)
	for _, el := range elems {
		if el.Key() != "collation" {
			out = append(out, el...)
			continue
		}
		if norm != nil {
			out = bsoncore.AppendDocumentElement(out, "collation", norm)
		}
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out, nil
}

// IDIndexSpec is the spec of the _id index of a collection with these
// options (create's, as stored) as listIndexes, listCollections' idIndex
// and the create oplog entry show it: with the collection's default
// collation, which mongod gives its _id index
// (jstests/core/index_id_options.js: "_id indexes must have the
// collection default collation").
func IDIndexSpec(options bson.Raw) bson.D {
	spec := bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: bson.D{{Key: "_id", Value: int32(1)}}}, {Key: "name", Value: "_id_"}}
	if c, ok := options.Lookup("collation").DocumentOK(); ok {
		spec = append(spec, bson.E{Key: "collation", Value: c})
	}
	return spec
}

// pkOf is the primary key of the document whose _id is id: its key
// under the _id index's collation, so that _id values equal under it
// share one document key and one key lock. As in mongod, whose _id index
// is unique under the collection's default collation, a second document
// whose _id only differs in case under a case-insensitive collation is a
// duplicate key, and a point read by _id finds either spelling.
func (st *collState) pkOf(id bsoncore.Value) []byte {
	return keycodec.Append(nil, st.idColl.Key(id))
}

// inheritCollation gives a new index the default collation of db.coll
// when its spec names none, as mongod does for v2 indexes; an index that
// names one, {locale: "simple"} included, keeps it.
func (e *Engine) inheritCollation(db, coll string, spec bson.Raw, im record.IndexMeta) record.IndexMeta {
	if _, err := spec.LookupErr("collation"); err == nil || im.Version < 2 {
		return im
	}
	c := e.collection(db, coll)
	if c == nil || c.st().coll == nil {
		return im
	}
	return withCollation(im, c.st().coll)
}

// withCollation returns im with the collation coll (not nil).
func withCollation(im record.IndexMeta, coll *collation.Collator) record.IndexMeta {
	idx, extra := bsoncore.AppendDocumentStart(nil)
	if len(im.Extra) > 5 {
		extra = append(extra, im.Extra[4:len(im.Extra)-1]...)
	}
	extra = bsoncore.AppendDocumentElement(extra, "collation", coll.Document())
	im.Extra, _ = bsoncore.AppendDocumentEnd(extra, idx)
	return im
}

// idIndexOf stands for the _id index of the collection in state st (nil
// for one yet to be created) when a requested index is compared with it:
// it has the collection's default collation, so that createIndexes of
// {_id: 1}, which inherits it, finds it there, and one naming another
// collation conflicts (jstests/core/index_id_options.js).
func idIndexOf(st *collState) record.IndexMeta {
	if st == nil || st.coll == nil {
		return idIndexMeta
	}
	return withCollation(idIndexMeta, st.coll)
}

// usableConjuncts are the predicates of conj that can bound a scan of keys
// made under the collation keys (an index's; nil for _id and the simple
// collation), for a query compiled under qc. The values of a query's
// predicates that hold strings are collation key values under qc, so they
// bound the keys only when qc is the keys' collation; predicates on other
// values (numbers, dates...) bound keys under any collation, as mongod's
// planner lets them.
func usableConjuncts(conj []query.Predicate, qc, keys *collation.Collator) []query.Predicate {
	if collation.Equal(qc, keys) {
		return conj
	}
	out := make([]query.Predicate, 0, len(conj))
	for _, c := range conj {
		if !slices.ContainsFunc(c.Values, collation.Collatable) {
			out = append(out, c)
		}
	}
	return out
}

// sortsUnder reports whether the order of p's keys can be srt's order as
// far as collation goes: an index's keys are in its collation's order, and
// the primary keys in their _id's under the _id index's (pkOf).
func (st *collState) sortsUnder(p *plan, srt *query.Sort) bool {
	if p.kind == planIndex {
		return collation.Equal(p.ix.Collator, srt.Collator())
	}
	return collation.Equal(st.idColl, srt.Collator())
}

// viewCollation is the collation a new view db.name on viewOn gets: the
// one create names, normalised, or none (the simple collation: a view
// does not take its collection's default). A view on a view has that
// view's collation, and naming another is refused, as by mongod.
func (e *Engine) viewCollation(ctx context.Context, db, name, viewOn string, doc bson.Raw) (bson.Raw, error) {
	var norm bson.Raw
	if doc != nil {
		var err error
		if norm, err = ParseCollation(doc); err != nil {
			return nil, err
		}
	}
	src, isView := e.View(ctx, db, viewOn)
	if !isView {
		return norm, nil
	}
	if doc == nil {
		return src.Collation, nil
	}
	if string(norm) != string(src.Collation) {
		return nil, mongoerr.New(mongoerr.OptionNotSupportedOnView, "View %s.%s has conflicting collation with view %s.%s", db, name, db, viewOn)
	}
	return norm, nil
}

// DistinctOfUnder is DistinctOf under the collation ctx names
// (WithCollation), as distinct over a view's output compares.
func DistinctOfUnder(ctx context.Context, docs []bson.Raw, key string) ([]bsoncore.Value, error) {
	var coll *collation.Collator
	var err error
	if n, ok := ctx.Value(collationKey{}).(namedCollation); ok {
		coll, err = collation.Parse(n.doc)
	}
	if err != nil {
		return nil, err
	}
	set := distinct.NewCollatedSet(key, coll)
	for _, d := range docs {
		if !set.Add(d) {
			break
		}
	}
	return set.Values()
}

// sortByKeys sorts items by srt, stably, computing each document's sort
// key once: under a collation a comparison would compute two collation
// keys, and a sort makes n log n of them. The keys, which can be several
// times the size of their strings, count with the held documents against
// the sort's limit.
func sortByKeys(items []storedDoc, srt *query.Sort, held int64, limit pipeline.Limit) (int64, error) {
	type keyed struct {
		key []byte
		d   storedDoc
	}
	ks := make([]keyed, len(items))
	for i, d := range items {
		ks[i] = keyed{srt.AppendKey(nil, d.doc), d}
		if held += int64(len(ks[i].key)); held > limit.Bytes {
			return held, limit.Exceeded(limit.Bytes)
		}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int { return bytes.Compare(a.key, b.key) })
	for i := range ks {
		items[i] = ks[i].d
	}
	return held, nil
}

// A sort under a collation keeps each document's sort key (Sort.AppendKey)
// after the document in its sort record (header, document, key), so that
// comparisons compare bytes rather than compute two collation keys each.

// keyedSortRecord appends the sort key of the record's document when srt
// compares under a collation.
func keyedSortRecord(rec []byte, srt *query.Sort) []byte {
	if srt.Collator() == nil {
		return rec
	}
	return srt.AppendKey(rec, bson.Raw(docOfRecord(rec[record.HeaderLen:])))
}

// docOfRecord is the document at the start of rest, without a sort key
// after it.
func docOfRecord(rest []byte) []byte {
	if n, _, ok := bsoncore.ReadLength(rest); ok && n >= 5 && int(n) <= len(rest) {
		return rest[:n]
	}
	return rest
}

// compareKeyedRecords orders sort records by their keys.
func compareKeyedRecords(a, b []byte) int {
	da, db := docOfRecord(a[record.HeaderLen:]), docOfRecord(b[record.HeaderLen:])
	return bytes.Compare(a[record.HeaderLen+len(da):], b[record.HeaderLen+len(db):])
}

// CompileUpdateFor is CompileUpdate for a statement on db.coll under ctx:
// its array filters, $pull, $pullAll, $addToSet and pipeline expressions
// compare strings under the statement's collation (WithCollation), else
// the collection's default, as its filter does.
func (e *Engine) CompileUpdateFor(ctx context.Context, db, coll string, u bson.RawValue, arrayFilters []bson.Raw, multi bool, lv *Let, now time.Time) (*update.Update, error) {
	collator, err := e.queryCollator(ctx, db, coll)
	if err != nil {
		return nil, err
	}
	return compileUpdateUnder(u, arrayFilters, multi, lv, now, collator)
}
