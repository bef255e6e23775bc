package engine

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/geo"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/engine/validation"
)

// The model run's checks of what the engine holds: its documents read
// straight from the store, the state compared with the reference model
// after each step, and the store's own invariants (validate, and every
// index agreeing with a collection scan).

// engineDocs reads every stored document of the collection with its
// header, straight from the store: used to check and resync the model.
func (r *modelRun) engineDocs(all bool) ([]*refDoc, error) {
	c := r.e.collection(modelDB, modelColl)
	if c == nil {
		return nil, nil
	}
	lo, hi := record.DocRange(c.st().meta.ID)
	it, err := rawIter(r.e, lo, hi)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []*refDoc
	for ok := it.First(); ok; ok = it.Next() {
		h, doc, err := record.SplitValue(it.Value())
		if err != nil {
			return nil, err
		}
		out = append(out, &refDoc{doc: bytes.Clone(doc), ts: h.TS, ttl: h.TTL})
	}
	return out, it.Error()
}

// checkState compares what the engine holds with the model: the visible
// documents (through the API, then their headers), the documents not yet
// purged, the collection's existence and its indexes.
func (r *modelRun) checkState(ctx context.Context) error {
	if err := r.checkViews(); err != nil {
		return err
	}
	now := r.now()
	if got := r.e.CollectionExists(ctx, modelDB, modelColl); got != r.m.exists {
		return fmt.Errorf("collection exists: engine %v, model %v", got, r.m.exists)
	}
	var docs []bson.Raw
	var err error
	if herr := r.guard("full scan", func() {
		var cur *Cursor
		if cur, err = r.e.Find(ctx, modelDB, modelColl, FindSpec{}); err == nil {
			docs, err = cur.All(ctx)
		}
	}); herr != nil {
		return herr
	}
	if err != nil {
		return fmt.Errorf("full scan: %v", err)
	}
	sort.SliceStable(docs, func(i, j int) bool { return keycodec.Compare(record.IDOf(docs[i]), record.IDOf(docs[j])) < 0 })
	want := r.m.visible(now)
	same := len(docs) == len(want)
	for i := 0; same && i < len(docs); i++ {
		same = bytes.Equal(docs[i], want[i].doc)
	}
	if !same {
		var w []bson.Raw
		for _, d := range want {
			w = append(w, d.doc)
		}
		return fmt.Errorf("stored documents differ:\nengine %s\nmodel  %s", rawList(docs), rawList(w))
	}
	stored, err := r.engineDocs(true)
	if err != nil {
		return err
	}
	for _, d := range want {
		i := slices.IndexFunc(stored, func(s *refDoc) bool { return valuesEqual(s.id(), d.id()) })
		if i < 0 {
			return fmt.Errorf("document %v is visible but not stored", d.id())
		}
		if s := stored[i]; s.ts != d.ts || s.ttl != d.ttl {
			return fmt.Errorf("document %v: engine _ts=%d ttl=%d, model _ts=%d ttl=%d", d.id(), s.ts, s.ttl, d.ts, d.ttl)
		}
	}
	if len(stored) != len(r.m.docs) {
		var ids, mids []string
		for _, s := range stored {
			ids = append(ids, s.doc.Lookup("_id").String())
		}
		for _, s := range r.m.docs {
			mids = append(mids, s.doc.Lookup("_id").String())
		}
		return fmt.Errorf("documents kept until purged: engine %v, model %v", ids, mids)
	}
	if r.m.exists {
		specs, err := r.e.ListIndexes(ctx, modelDB, modelColl)
		if err != nil {
			return err
		}
		var got, wantNames []string
		for _, s := range specs[1:] {
			for _, el := range s {
				if el.Key == "name" {
					got = append(got, el.Value.(string))
				}
			}
		}
		for _, ix := range r.m.indexes {
			wantNames = append(wantNames, ix.name)
		}
		if !slices.Equal(got, wantNames) {
			return fmt.Errorf("indexes: engine %v, model %v", got, wantNames)
		}
	}
	if err := r.checkOplog(ctx); err != nil {
		return err
	}
	if r.validateEvery > 0 && r.steps%r.validateEvery == 0 {
		return r.validate(ctx)
	}
	return nil
}

// validate checks the store's own invariants: e.Validate with full
// checking must find it valid, and every index must agree with the
// documents through the API.
func (r *modelRun) validate(ctx context.Context) error {
	if !r.m.exists {
		return nil
	}
	var res ValidateResult
	var err error
	if herr := r.guard("validate", func() { res, err = validateStoreResult(ctx, r.e, modelDB, modelColl) }); herr != nil {
		return herr
	}
	if err != nil {
		return err
	}
	// Documents the validator refuses: written before it, bypassing it,
	// under warn, or left failing under moderate; none under level off.
	var want int64
	if v := r.m.val; v.filter != nil && v.level != validation.LevelOff {
		for _, d := range r.m.docs {
			if !v.filter.Match(d.doc) {
				want++
			}
		}
	}
	if res.NNonCompliantDocuments != want {
		return fmt.Errorf("validate: nNonCompliantDocuments %d, model %d", res.NNonCompliantDocuments, want)
	}
	return nil
}

func validateStore(ctx context.Context, e *Engine, db, coll string) error {
	_, err := validateStoreResult(ctx, e, db, coll)
	return err
}

func validateStoreResult(ctx context.Context, e *Engine, db, coll string) (ValidateResult, error) {
	res, err := e.Validate(ctx, db, coll, true)
	if err != nil {
		return res, fmt.Errorf("validate: %w", err)
	}
	if !res.Valid {
		return res, fmt.Errorf("validate: not valid: errors %v, warnings %v", res.Errors, res.Warnings)
	}
	return res, indexAgreement(ctx, e, db, coll)
}

// indexAgreement checks, through the API, that a query hinted to each
// index returns the same documents as a collection scan of those the index
// should hold: all of them, or for a sparse or partial index those with
// one of its fields or matching its filter.
func indexAgreement(ctx context.Context, e *Engine, db, coll string) error {
	ids := func(filter bson.Raw, hint bson.RawValue) ([]string, error) {
		cur, err := e.Find(ctx, db, coll, FindSpec{Filter: filter, Hint: hint})
		if err != nil {
			return nil, err
		}
		docs, err := cur.All(ctx)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, d := range docs {
			out = append(out, string(keycodec.Append(nil, record.IDOf(d))))
		}
		slices.Sort(out)
		return out, nil
	}
	c := e.collection(db, coll)
	if c == nil {
		return nil
	}
	for _, im := range c.st().meta.Indexes {
		if im.Hidden || (im.ExpireAfter != nil && im.Key.Lookup("_ts").Type != 0) {
			continue
		}
		if im.Key.Lookup("_fts").Type != 0 {
			continue // a text index serves $text only, and cannot be hinted
		}
		should := bson.D{}
		if im.Partial != nil {
			should = append(should, bson.E{Key: "$and", Value: bson.A{im.Partial}})
		}
		if im.Sparse {
			var or bson.A
			for _, el := range mustElems(im.Key) {
				or = append(or, bson.D{{Key: el.Key(), Value: bson.D{{Key: "$exists", Value: true}}}})
			}
			should = append(should, bson.E{Key: "$or", Value: or})
		}
		// A 2dsphere index (version 2 and later) holds only the documents
		// that have its geo fields, as MongoDB's 2dsphere page says
		// ("Sparse Property"), and so does a 2d index (the sparse indexes
		// page: "2d ... indexes are always sparse").
		for _, el := range mustElems(im.Key) {
			if kind, _ := el.Value().StringValueOK(); kind == geo.Sphere || kind == geo.Plane {
				should = append(should, bson.E{Key: el.Key(), Value: bson.D{{Key: "$exists", Value: true}}})
			}
		}
		filter := modelRaw(should)
		want, err := ids(filter, bson.RawValue{})
		if err != nil {
			return fmt.Errorf("scan for index %s: %w", im.Name, err)
		}
		got, err := ids(nil, rawValue(im.Name))
		if err != nil {
			return fmt.Errorf("scan of index %s: %w", im.Name, err)
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("index %s returns %d documents (%x), a scan %d (%x)", im.Name, len(got), got, len(want), want)
		}
	}
	return nil
}

// newObjectIDs returns the ObjectId _ids the engine stores that the model
// does not know, oldest first.
func (r *modelRun) newObjectIDs() ([]bsoncore.Value, error) {
	stored, err := r.engineDocs(true)
	if err != nil {
		return nil, err
	}
	var ids []bsoncore.Value
	for _, d := range stored {
		if id := d.id(); id.Type == bsoncore.TypeObjectID && r.m.byID(id) == nil {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, keycodec.Compare)
	return ids, nil
}
