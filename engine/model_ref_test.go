package engine

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/project"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/engine/update"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/ttlindex"
)

// The reference model is a brute-force, in-memory implementation of one
// collection's semantics: a slice of documents, searched linearly. It shares
// the query matcher, the update applier, projection and the TTL policy with
// the engine, and nothing else: it has no store, no planner and no indexes.
// Uniqueness, upserts, write ordering and TTL visibility (TTL spec rules
// 4, 9, 15, 19-21) are re-implemented here as plainly as possible, and so
// are schema validation's levels and actions (model_validation_test.go),
// min/max key ranges (model_minmax_test.go), let (model_let_test.go) and
// the distances and order of $near and $geoNear (model_near_test.go).
//
// Documents stay in the model after they expire until something would purge
// them (a reaper pass, a write that takes their _id or unique key, a drop of
// the _ts index): a later collMod or a clock moved back can make them visible
// again, exactly as the spec allows for documents not yet purged.

// refDoc is a document as the model holds it.
type refDoc struct {
	doc bson.Raw
	ts  int64 // ms, the system _ts
	ttl ttlindex.DocTTL
	// serial names the document from its insert, and gen counts its
	// rewrites, so that the transactions' model (model_txn_test.go) sees
	// which documents a step wrote, a no-op rewrite included; 0 for one
	// read back from the engine.
	serial, gen int64
}

// refSerial hands out refDoc serials.
var refSerial atomic.Int64

func (d *refDoc) id() bsoncore.Value { return bsoncore.Document(d.doc).Lookup("_id") }

// refIndex is a secondary index as the model knows it: only its definition.
type refIndex struct {
	name    string
	key     bson.Raw
	paths   []string
	unique  bool
	sparse  bool
	partial bson.Raw
	filter  *query.Filter
	expire  *int32
	hidden  bool
	hashed  []bool // per path: the key holds the value's hash
	// collator is the index's collation: its keys hold strings'
	// collation keys. nil is the simple collation.
	collator *collation.Collator
	text     bool // a text index, whose key is spelled {_fts: "text", _ftsx: 1}
}

func (ix *refIndex) isTS() bool {
	return len(ix.paths) == 1 && ix.paths[0] == "_ts" && ix.expire != nil
}

func (ix *refIndex) sameOptions(o *refIndex) bool {
	return ix.unique == o.unique && ix.sparse == o.sparse && bytes.Equal(ix.partial, o.partial) &&
		(ix.expire == nil) == (o.expire == nil) && (ix.expire == nil || *ix.expire == *o.expire)
}

// refModel is one collection.
type refModel struct {
	exists  bool
	docs    []*refDoc // every document not yet purged, in no particular order
	indexes []*refIndex
	val     refValidation
	// bypass is the bypassDocumentValidation of the write being run.
	bypass bool
	// tally, if set, counts what the model's checks decide.
	tally func(string)
}

func valuesEqual(a, b bsoncore.Value) bool { return keycodec.Compare(a, b) == 0 }

func (m *refModel) setting() ttlindex.Setting {
	for _, ix := range m.indexes {
		if ix.isTS() {
			return ttlindex.Setting{Enabled: true, Default: *ix.expire}
		}
	}
	return ttlindex.Setting{}
}

func (m *refModel) live(d *refDoc, now int64) bool {
	return !ttlindex.Expired(m.setting(), d.ts, d.ttl, now)
}

func (m *refModel) byID(id bsoncore.Value) *refDoc {
	for _, d := range m.docs {
		if valuesEqual(d.id(), id) {
			return d
		}
	}
	return nil
}

func (m *refModel) remove(victims ...*refDoc) {
	m.docs = slices.DeleteFunc(m.docs, func(d *refDoc) bool { return slices.Contains(victims, d) })
}

// visible returns the live documents in _id order.
func (m *refModel) visible(now int64) []*refDoc {
	var out []*refDoc
	for _, d := range m.docs {
		if m.live(d, now) {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b *refDoc) int { return keycodec.Compare(a.id(), b.id()) })
	return out
}

func (m *refModel) matching(f *query.Filter, now int64) []*refDoc {
	var out []*refDoc
	for _, d := range m.visible(now) {
		if f.Match(d.doc) {
			out = append(out, d)
		}
	}
	return out
}

// pathValues is what a path reaches in doc for index keys and distinct:
// embedded documents are entered by name; an array met in the middle is
// entered by position when the next component is a number, else through
// each element that is a document; a terminal array gives its elements,
// except (for index keys, forIndex) an array selected by position, which is
// one value. emptyArray is whether a terminal empty array was met.
func pathValues(doc bsoncore.Document, path string, forIndex bool) (vals []bsoncore.Value, emptyArray bool) {
	var walk func(v bsoncore.Value, parts []string, selected bool)
	walk = func(v bsoncore.Value, parts []string, selected bool) {
		if len(parts) == 0 {
			if arr, ok := v.ArrayOK(); ok && !(forIndex && selected) {
				elems, _ := arr.Values()
				if len(elems) == 0 {
					emptyArray = true
				}
				vals = append(vals, elems...)
				return
			}
			vals = append(vals, v)
			return
		}
		switch v.Type {
		case bsoncore.TypeEmbeddedDocument:
			if sub, err := v.Document().LookupErr(parts[0]); err == nil {
				walk(sub, parts[1:], false)
			}
		case bsoncore.TypeArray:
			elems, _ := v.Array().Values()
			if n, err := strconv.Atoi(parts[0]); err == nil && n >= 0 {
				if n < len(elems) {
					walk(elems[n], parts[1:], true)
				}
				return
			}
			for _, el := range elems {
				if el.Type == bsoncore.TypeEmbeddedDocument {
					walk(el, parts, false)
				}
			}
		}
	}
	walk(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}, strings.Split(path, "."), false)
	return vals, emptyArray
}

var (
	refNull      = bsoncore.Value{Type: bsoncore.TypeNull}
	refUndefined = bsoncore.Value{Type: bsoncore.TypeUndefined}
)

// keys returns the index key tuples of doc, nil when the index leaves the
// document out (partial filter, or sparse without any indexed field).
func (ix *refIndex) keys(doc bson.Raw) [][]bsoncore.Value {
	if ix.filter != nil && !ix.filter.Match(doc) {
		return nil
	}
	tuples := [][]bsoncore.Value{nil}
	present := false
	for i, p := range ix.paths {
		vals, empty := pathValues(bsoncore.Document(doc), p, true)
		if empty {
			vals = append(vals, refUndefined)
		}
		if len(vals) == 0 {
			vals = []bsoncore.Value{refNull}
		} else {
			present = true
		}
		for j := range vals {
			if ix.hashed[i] {
				vals[j] = record.HashedValue(vals[j])
			} else {
				vals[j] = ix.collator.Key(vals[j])
			}
		}
		var next [][]bsoncore.Value
		for _, t := range tuples {
			for _, v := range vals {
				next = append(next, append(slices.Clone(t), v))
			}
		}
		tuples = next
	}
	if ix.sparse && !present {
		return nil
	}
	return tuples
}

// collide reports whether two documents share a key of unique index ix.
func (ix *refIndex) collide(a, b bson.Raw) bool {
	ka, kb := ix.keys(a), ix.keys(b)
	for _, x := range ka {
		for _, y := range kb {
			same := true
			for i := range x {
				if !valuesEqual(x[i], y[i]) {
					same = false
					break
				}
			}
			if same {
				return true
			}
		}
	}
	return false
}

func refErr(code mongoerr.Code) error { return mongoerr.New(code, "model") }

// checkDoc applies the rules every stored document obeys, in field order.
func checkDoc(doc bson.Raw) error {
	elems, _ := doc.Elements()
	for _, el := range elems {
		switch el.Key() {
		case "_ts":
			return refErr(mongoerr.BadValue)
		case "_id":
			switch el.Value().Type {
			case bson.TypeArray, bson.TypeRegex, bson.TypeUndefined:
				return refErr(mongoerr.InvalidIdField)
			}
		}
	}
	return nil
}

// withIDFirst returns doc with its _id as the first field, giving it id
// when it has none.
func withIDFirst(doc bson.Raw, id bsoncore.Value) bson.Raw {
	elems, _ := doc.Elements()
	var idEl bson.RawElement
	for _, el := range elems {
		if el.Key() == "_id" {
			idEl = el
			break
		}
	}
	di, out := bsoncore.AppendDocumentStart(nil)
	if idEl != nil {
		out = append(out, idEl...)
	} else {
		out = bsoncore.AppendValueElement(out, "_id", id)
	}
	for _, el := range elems {
		if el.Key() != "_id" {
			out = append(out, el...)
		}
	}
	out, _ = bsoncore.AppendDocumentEnd(out, di)
	return out
}

// uniqueCheck finds the holders of d's unique keys other than self: a live
// one is a duplicate key error, expired ones are returned to be purged.
func (m *refModel) uniqueCheck(doc bson.Raw, self bsoncore.Value, now int64) ([]*refDoc, error) {
	var victims []*refDoc
	for _, ix := range m.indexes {
		if !ix.unique {
			continue
		}
		for _, o := range m.docs {
			if valuesEqual(o.id(), self) || !ix.collide(doc, o.doc) {
				continue
			}
			if m.live(o, now) {
				return nil, refErr(mongoerr.DuplicateKey)
			}
			victims = append(victims, o)
		}
	}
	return victims, nil
}

// insert stores one new document; genID supplies the _id of a document
// without one (the engine's choice, read from its reply).
func (m *refModel) insert(raw bson.Raw, genID bsoncore.Value, now int64) (bsoncore.Value, error) {
	m.exists = true
	if err := checkDoc(raw); err != nil {
		return bsoncore.Value{}, err
	}
	if _, err := raw.LookupErr("_id"); err != nil && genID.Type == 0 {
		// The engine reported no _id (it failed, or did not insert): a
		// fresh one stands in, which collides with nothing, so the
		// outcome is the same; a success here is compared and reported.
		oid := bson.NewObjectID()
		genID = bsoncore.Value{Type: bsoncore.TypeObjectID, Data: oid[:]}
	}
	doc := withIDFirst(raw, genID)
	id := bsoncore.Document(doc).Index(0).Value()
	if err := m.val.check(doc, nil, m.bypass, m.tally); err != nil {
		return id, err
	}
	old := m.byID(id)
	if old != nil && m.live(old, now) {
		return id, refErr(mongoerr.DuplicateKey)
	}
	victims, err := m.uniqueCheck(doc, id, now)
	if err != nil {
		return id, err
	}
	if old != nil {
		victims = append(victims, old)
	}
	m.remove(victims...)
	m.docs = append(m.docs, &refDoc{doc: doc, ts: now, ttl: ttlindex.DocTTLOf(bsoncore.Document(doc)), serial: refSerial.Add(1)})
	return id, nil
}

// apply runs an update on d (a live match); it returns the new document
// and whether it changed, and stores it, resetting _ts (rule 4).
func (m *refModel) apply(d *refDoc, u *update.Update, pos int, now int64) (bson.Raw, bool, error) {
	out, changed, err := u.Apply(d.doc, pos)
	if err != nil {
		return nil, false, err
	}
	if err := checkDoc(out); err != nil {
		return nil, false, err
	}
	if !valuesEqual(bsoncore.Document(out).Lookup("_id"), d.id()) {
		return nil, false, refErr(mongoerr.ImmutableField)
	}
	if changed {
		// Only a document the update modifies is validated.
		if err := m.val.check(out, d.doc, m.bypass, m.tally); err != nil {
			return nil, false, err
		}
	}
	victims, err := m.uniqueCheck(out, d.id(), now)
	if err != nil {
		return nil, false, err
	}
	m.remove(victims...)
	d.doc, d.ts, d.ttl = out, now, ttlindex.DocTTLOf(bsoncore.Document(out))
	d.gen++
	return out, changed, nil
}

// refUpdate is the model's answer to an update statement. Ambiguous says
// the outcome depends on the order in which the engine visits matches.
type refUpdate struct {
	res       UpdateResult
	err       error
	matches   []*refDoc
	ambiguous bool
	needID    bool // an upsert without _id: the engine picks it
}

// update runs an update statement. For a multi update the documents are
// visited in _id order; when that order could matter (an error part way, or
// a unique key that changes) the result is marked ambiguous.
func (m *refModel) update(f *query.Filter, srt *query.Sort, filter bson.Raw, u *update.Update, multi, upsert bool, genID bsoncore.Value, now int64) refUpdate {
	var r refUpdate
	if upsert {
		m.exists = true
	}
	matches := m.matching(f, now)
	if srt != nil {
		slices.SortStableFunc(matches, func(a, b *refDoc) int { return srt.Compare(a.doc, b.doc) })
	}
	r.matches = matches
	if !multi && len(matches) > 1 {
		matches = matches[:1]
	}
	for _, d := range matches {
		_, pos, _ := f.MatchPositional(d.doc)
		before := d.doc
		_, changed, err := m.apply(d, u, pos, now)
		if err != nil {
			r.err = err
			break
		}
		r.res.Matched++
		if changed {
			r.res.Modified++
		}
		// Unique keys that move can collide with one another in an order
		// that depends on the plan.
		if multi && len(r.matches) > 1 && !bytes.Equal(before, d.doc) && slices.ContainsFunc(m.indexes, func(ix *refIndex) bool { return ix.unique }) {
			r.ambiguous = true
		}
	}
	if r.err != nil && multi && len(r.matches) > 1 {
		r.ambiguous = true
	}
	if r.err != nil || r.res.Matched > 0 || !upsert {
		return r
	}
	doc, err := u.ApplyUpsert(filter)
	if err != nil {
		r.err = err
		return r
	}
	if _, err := doc.LookupErr("_id"); err != nil {
		r.needID = true
	}
	id, err := m.insert(doc, genID, now)
	if err != nil {
		r.err = err
		return r
	}
	r.res.Upserted = bson.RawValue{Type: bson.Type(id.Type), Value: id.Data}
	return r
}

// findAndModify: the first match by sort (the generator makes it unique).
func (m *refModel) findAndModify(f *query.Filter, srt *query.Sort, proj *project.Projection, spec FindAndModifySpec, genID bsoncore.Value, now int64) (FindAndModifyResult, []*refDoc, bool, error) {
	var res FindAndModifyResult
	if spec.Upsert && !spec.Remove {
		m.exists = true
	}
	shape := func(doc bson.Raw) (bson.Raw, error) {
		if proj == nil || doc == nil {
			return doc, nil
		}
		return proj.Apply(doc, -1)
	}
	matches := m.matching(f, now)
	if srt != nil {
		slices.SortStableFunc(matches, func(a, b *refDoc) int { return srt.Compare(a.doc, b.doc) })
	}
	if len(matches) > 0 {
		d := matches[0]
		before := d.doc
		doc := before
		if spec.Remove {
			m.remove(d)
		} else {
			_, pos, _ := f.MatchPositional(d.doc)
			after, _, err := m.apply(d, spec.Update, pos, now)
			if err != nil {
				return res, matches, false, err
			}
			if spec.New {
				doc = after
			}
		}
		res.N = 1
		res.UpdatedExisting = !spec.Remove
		v, err := shape(doc)
		res.Value = v
		return res, matches, false, err
	}
	if !spec.Upsert || spec.Remove {
		return res, nil, false, nil
	}
	doc, err := spec.Update.ApplyUpsert(spec.Filter)
	if err != nil {
		return res, nil, false, err
	}
	_, idErr := doc.LookupErr("_id")
	id, err := m.insert(doc, genID, now)
	if err != nil {
		return res, nil, idErr != nil, err
	}
	res.N = 1
	res.Upserted = bson.RawValue{Type: bson.Type(id.Type), Value: id.Data}
	if spec.New {
		d := m.byID(id)
		res.Value, err = shape(d.doc)
	}
	return res, nil, idErr != nil, err
}

// reap purges what a reaper pass at now removes: documents expired under
// the _ts setting and documents due in a date TTL index.
func (m *refModel) reap(now int64) int {
	var gone []*refDoc
	for _, d := range m.docs {
		if !m.live(d, now) || m.dateDue(d, now) {
			gone = append(gone, d)
		}
	}
	m.remove(gone...)
	return len(gone)
}

func (m *refModel) dateDue(d *refDoc, now int64) bool {
	for _, ix := range m.indexes {
		if ix.expire == nil || ix.isTS() || len(ix.paths) != 1 {
			continue
		}
		if len(ix.hashed) > 0 && ix.hashed[0] {
			// A hashed index takes expireAfterSeconds (mongod's TTL spec
			// check asks only for one field), but mongod's TTL monitor
			// scans the index between two dates (ttl.cpp), and a hashed
			// index holds no dates: it purges nothing. Derived from the
			// source, not a documented example.
			continue
		}
		if ix.filter != nil && !ix.filter.Match(d.doc) {
			continue
		}
		vals, _ := pathValues(bsoncore.Document(d.doc), ix.paths[0], true)
		for _, v := range vals {
			if ms, ok := v.DateTimeOK(); ok && ms+int64(*ix.expire)*1000 <= now {
				return true
			}
		}
	}
	return false
}

// parseIndex reads the parts of an index spec the generator uses.
func parseRefIndex(spec bson.Raw) (*refIndex, error) {
	ix := &refIndex{}
	ix.key = spec.Lookup("key").Document()
	elems, _ := ix.key.Elements()
	for _, el := range elems {
		ix.paths = append(ix.paths, el.Key())
		kind, _ := el.Value().StringValueOK()
		ix.hashed = append(ix.hashed, kind == record.HashedKind)
	}
	if slices.ContainsFunc(elems, func(el bson.RawElement) bool { kind, _ := el.Value().StringValueOK(); return kind == "text" }) {
		// As MongoDB's catalog spells it, and as collMod's keyPattern must
		// name it.
		ix.text = true
		ix.key = modelRaw(bson.D{{Key: "_fts", Value: "text"}, {Key: "_ftsx", Value: int32(1)}})
	}
	ix.name, _ = spec.Lookup("name").StringValueOK()
	ix.unique, _ = spec.Lookup("unique").BooleanOK()
	ix.sparse, _ = spec.Lookup("sparse").BooleanOK()
	if c, ok := spec.Lookup("collation").DocumentOK(); ok {
		coll, err := collation.Parse(c)
		if err != nil {
			return nil, err
		}
		ix.collator = coll
	}
	if p, ok := spec.Lookup("partialFilterExpression").DocumentOK(); ok {
		ix.partial = bytes.Clone(p)
		f, err := query.Compile(ix.partial)
		if err != nil {
			return nil, err
		}
		ix.filter = f
	}
	if v, err := spec.LookupErr("expireAfterSeconds"); err == nil {
		n, err := refExpireAfter(ix.paths, bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value})
		if err != nil {
			return nil, err
		}
		ix.expire = &n
	}
	return ix, nil
}

func refExpireAfter(paths []string, v bsoncore.Value) (int32, error) {
	switch {
	case len(paths) == 1 && paths[0] == "_ts":
		return ttlindex.ParseTSExpireAfter(v)
	case len(paths) > 1, paths[0] == "_id":
		return 0, refErr(mongoerr.CannotCreateIndex)
	}
	return ttlindex.ParseDateExpireAfter(v)
}

// createIndexes: the generator's pool gives every key pattern one name, so
// the only conflicts are a name reused with other options.
func (m *refModel) createIndexes(specs []bson.Raw, now int64) (CreateIndexesResult, error) {
	var res CreateIndexesResult
	var add []*refIndex
	for _, s := range specs {
		ix, err := parseRefIndex(s)
		if err != nil {
			return res, err
		}
		add = append(add, ix)
	}
	res.CreatedCollection = !m.exists
	m.exists = true
	res.Before = 1 + len(m.indexes)
	var fresh []*refIndex
	for _, ix := range add {
		dup := false
		for _, old := range m.indexes {
			if old.name != ix.name {
				continue
			}
			if !bytes.Equal(old.key, ix.key) {
				return res, refErr(mongoerr.IndexKeySpecsConflict)
			}
			if !old.sameOptions(ix) {
				return res, refErr(mongoerr.IndexOptionsConflict)
			}
			dup = true
		}
		if !dup {
			fresh = append(fresh, ix)
		}
	}
	if len(fresh) == 0 {
		res.After = res.Before
		return res, nil
	}
	// Expired documents are absent for unique checks (rule 15); a unique
	// build purges them first.
	if m.setting().Enabled && slices.ContainsFunc(fresh, func(ix *refIndex) bool { return ix.unique }) {
		var gone []*refDoc
		for _, d := range m.docs {
			if !m.live(d, now) {
				gone = append(gone, d)
			}
		}
		m.remove(gone...)
	}
	vis := m.visible(now)
	for _, ix := range fresh {
		if !ix.unique {
			continue
		}
		for i, a := range vis {
			for _, b := range vis[i+1:] {
				if ix.collide(a.doc, b.doc) {
					return res, refErr(mongoerr.DuplicateKey)
				}
			}
		}
	}
	m.indexes = append(m.indexes, fresh...)
	res.After = 1 + len(m.indexes)
	return res, nil
}

func (m *refModel) dropIndexes(which bson.RawValue, now int64) (int, error) {
	if !m.exists {
		return 0, refErr(mongoerr.NamespaceNotFound)
	}
	before := 1 + len(m.indexes)
	drop := map[*refIndex]bool{}
	byName := func(name string) error {
		if name == "_id_" {
			return refErr(mongoerr.InvalidOptions)
		}
		for _, ix := range m.indexes {
			if ix.name == name {
				drop[ix] = true
				return nil
			}
		}
		return refErr(mongoerr.IndexNotFound)
	}
	switch which.Type {
	case bson.TypeString:
		if which.StringValue() == "*" {
			for _, ix := range m.indexes {
				drop[ix] = true
			}
		} else if err := byName(which.StringValue()); err != nil {
			return 0, err
		}
	case bson.TypeEmbeddedDocument:
		if which.Document().String() == `{"_id": {"$numberInt":"1"}}` {
			return 0, refErr(mongoerr.InvalidOptions)
		}
		found := false
		for _, ix := range m.indexes {
			if bytes.Equal(ix.key, which.Document()) {
				drop[ix], found = true, true
				break
			}
		}
		if !found {
			return 0, refErr(mongoerr.IndexNotFound)
		}
	case bson.TypeArray:
		vals, _ := which.Array().Values()
		for _, v := range vals {
			if err := byName(v.StringValue()); err != nil {
				return 0, err
			}
		}
	}
	for ix := range drop {
		if ix.isTS() {
			// Rule 9: what is expired when TTL goes off stays gone.
			var gone []*refDoc
			for _, d := range m.docs {
				if !m.live(d, now) {
					gone = append(gone, d)
				}
			}
			m.remove(gone...)
		}
	}
	m.indexes = slices.DeleteFunc(m.indexes, func(ix *refIndex) bool { return drop[ix] })
	return before, nil
}

func (m *refModel) collMod(ch IndexChange) (CollModResult, error) {
	var res CollModResult
	if !m.exists {
		return res, refErr(mongoerr.NamespaceNotFound)
	}
	for _, ix := range m.indexes {
		if (ch.Name == "" || ix.name != ch.Name) && (ch.KeyPattern == nil || !bytes.Equal(ix.key, ch.KeyPattern)) {
			continue
		}
		if ch.Hidden != nil {
			old := ix.hidden
			res.OldHidden, res.NewHidden = &old, ch.Hidden
			ix.hidden = *ch.Hidden
		}
		if ch.ExpireAfter == nil {
			return res, nil
		}
		if len(ix.paths) == 1 && ix.paths[0] == "_ts" && ix.expire == nil {
			return res, refErr(mongoerr.InvalidOptions)
		}
		n, err := refExpireAfter(ix.paths, *ch.ExpireAfter)
		if err != nil {
			if mongoerr.CodeOf(err) == mongoerr.CannotCreateIndex {
				return res, refErr(mongoerr.InvalidOptions)
			}
			return res, err
		}
		res.OldExpireAfter = ix.expire
		ix.expire = &n
		res.NewExpireAfter = &n
		return res, nil
	}
	return res, refErr(mongoerr.IndexNotFound)
}

// distinct: values the path reaches in matching documents, arrays giving
// their elements, one per equal value, in BSON order.
func (m *refModel) distinct(f *query.Filter, key string, now int64) []bsoncore.Value {
	var out []bsoncore.Value
	for _, d := range m.matching(f, now) {
		vals, _ := pathValues(bsoncore.Document(d.doc), key, false)
		for _, v := range vals {
			if !slices.ContainsFunc(out, func(o bsoncore.Value) bool { return valuesEqual(o, v) }) {
				out = append(out, v)
			}
		}
	}
	slices.SortFunc(out, keycodec.Compare)
	return out
}
