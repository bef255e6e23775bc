package engine

import (
	"bytes"
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/mongoerr"
)

// Multi-document transactions in the sequential model.
//
// Two transaction slots run statements (the model's own insert, update,
// findAndModify, delete, count, find and distinct) interleaved with plain
// operations and with each other, then commit, abort or time out (an
// abort of one left open). The reference is snapshot isolation as MongoDB
// has it: a transaction's view is a copy of the reference taken at its
// begin, to which its statements apply; the step functions compare its
// answers with the engine's against that view. Its writes are checked for
// conflicts as MongoDB (and the kv store's first-committer-wins locks)
// check them: a statement locks the _id of every document it writes, the
// unique index keys of every version it writes, and, before it fails on
// a duplicate, the keys it checked; a lock of a key that a commit wrote
// after the snapshot, or that another open transaction holds, is a
// WriteConflict, after which the transaction is aborted. A commit applies
// the view's changed documents to the reference at once; an abort drops
// them.
//
// The catalog: a change of the collection (an index built or dropped,
// collMod, validation, pre-images, an index marked multikey by a write)
// after a transaction's start makes its first use of the collection
// SnapshotUnavailable, unless the collection was created after the start
// and is unchanged since; a change after its first use makes its next
// statement, and its commit if it wrote, a WriteConflict. Which steps
// change the catalog is read from the engine (the collection's state) and
// checked against what the step was: a multikey mark is the engine's own
// business, so a step that is no catalog change may change it only by
// creating the collection or marking an index multikey.
//
// What the model avoids, because it would hang a single goroutine or is
// not modelled: a plain write that would wait for a key an open
// transaction holds ends that transaction first (commit or abort, by the
// step's parity); so does an index change that purges an expired document
// a transaction holds. A restart, a drop and an $out onto the collection
// abort the open transactions first, as a server's restart does (a drop
// under an open transaction is not modelled). A statement whose outcome
// depends on the plan (a multi update whose order matters, a deleteOne of
// several matches) runs, and its transaction is aborted.

// txnModel is the books the transactions' model keeps across steps.
type txnModel struct {
	open [2]*modelTxn
	// clock orders begins, commits, plain writes and catalog changes.
	clock int64
	// collVer is the clock of the collection's last catalog change, and
	// collBorn that of its creation.
	collVer, collBorn int64
	// writtenAt is the clock of the last commit that wrote a key (an _id
	// or a unique index key); maybeAt of one that may have (a step whose
	// documents the model took from the engine).
	writtenAt, maybeAt map[string]int64
	obs                catalogObs
}

// modelTxn is one open transaction.
type modelTxn struct {
	t     *Transaction
	start int64
	base  *refModel // the reference at the start
	view  *refModel // base plus the transaction's writes
	// seen is set at the first use of the collection, and seenVer is the
	// catalog version used.
	seen    bool
	seenVer int64
	locks   map[string]bool
	written map[string]bool
}

// catalogObs is what the model reads of the engine's catalog after a step.
type catalogObs struct {
	c        *Collection
	seq      uint64
	born     bool
	multikey string
}

func (r *modelRun) observeCatalog() catalogObs {
	c := r.e.collection(modelDB, modelColl)
	if c == nil {
		return catalogObs{}
	}
	st := c.st()
	o := catalogObs{c: c, seq: st.seq, born: st.seq == c.createdSeq}
	for _, im := range st.meta.Indexes {
		if im.Multikey {
			o.multikey += im.Name + ","
		}
	}
	return o
}

// catalogStep brings the model's catalog versions up to what the step did
// to the engine's, checking that a step that is no catalog change changed
// it only by creating the collection or marking an index multikey. It
// reports whether an index was newly marked multikey.
func (r *modelRun) catalogStep(ddl bool) (marked bool, err error) {
	tm := &r.tx
	prev, now := tm.obs, r.observeCatalog()
	tm.obs = now
	switch {
	case now.c != prev.c:
		tm.clock++
		tm.collVer = tm.clock
		if now.c != nil {
			tm.collBorn = tm.collVer
			if !now.born {
				tm.clock++
				tm.collVer = tm.clock
			}
		}
		if !ddl && now.c == nil {
			return false, fmt.Errorf("catalog: the collection went away in a step that drops nothing")
		}
		return false, nil
	case now.c == nil || now.seq == prev.seq:
		return false, nil
	}
	tm.clock++
	tm.collVer = tm.clock
	marked = now.multikey != prev.multikey
	if !ddl && !marked {
		return false, fmt.Errorf("catalog: the collection's state changed in a step that changes no catalog (multikey %q -> %q)", prev.multikey, now.multikey)
	}
	return marked, nil
}

// idKey and entryKeys name the keys a write locks and writes: a
// document's _id, and each key of a unique index.
func idKey(id bsoncore.Value) string { return "d" + string(keycodec.Append(nil, id)) }

func entryKeys(indexes []*refIndex, d *refDoc) []string {
	if d == nil {
		return nil
	}
	var out []string
	for _, ix := range indexes {
		if !ix.unique {
			continue
		}
		for _, tuple := range ix.keys(d.doc) {
			k := []byte("i" + ix.name + "\x00")
			for _, v := range tuple {
				k = keycodec.Append(k, v)
			}
			out = append(out, string(k))
		}
	}
	return out
}

func docsByKey(m *refModel) map[string]*refDoc {
	out := make(map[string]*refDoc, len(m.docs))
	for _, d := range m.docs {
		out[idKey(d.id())] = d
	}
	return out
}

// refWrites is what a step did to the keys: written holds the keys its
// commit writes (the _id of each document written, the unique keys that
// came or went), locks those a transaction's statement locks (the _ids,
// every unique key of each version written), maybe the _ids of documents
// the model took from the engine, which may have been rewritten.
type refWrites struct {
	written, locks, maybe map[string]bool
	ids                   []string
}

func diffWrites(pre, post *refModel) refWrites {
	w := refWrites{written: map[string]bool{}, locks: map[string]bool{}, maybe: map[string]bool{}}
	pm, qm := docsByKey(pre), docsByKey(post)
	keys := map[string]bool{}
	for k := range pm {
		keys[k] = true
	}
	for k := range qm {
		keys[k] = true
	}
	for k := range keys {
		a, b := pm[k], qm[k]
		if a != nil && b != nil {
			same := bytes.Equal(a.doc, b.doc) && a.ts == b.ts && a.ttl == b.ttl
			if a.serial == b.serial && a.gen == b.gen && (a.serial != 0 || same) {
				continue
			}
			if a.serial != b.serial && (a.serial == 0 || b.serial == 0) && same {
				// Read back from the engine: rewritten or not.
				w.maybe[k] = true
				continue
			}
		}
		w.ids = append(w.ids, k)
		w.written[k], w.locks[k] = true, true
		ka, kb := entryKeys(post.indexes, a), entryKeys(post.indexes, b)
		for _, e := range kb {
			w.locks[e] = true
		}
		in := func(list []string, e string) bool {
			for _, x := range list {
				if x == e {
					return true
				}
			}
			return false
		}
		// A document rewritten in place writes the unique keys that came
		// or went; one removed and inserted again (over an expired one of
		// the same _id) deletes all its old keys and sets all its new.
		replaced := a != nil && b != nil && a.serial != b.serial && a.serial != 0 && b.serial != 0
		for _, e := range kb {
			if replaced || !in(ka, e) {
				w.written[e] = true
			}
		}
		for _, e := range ka {
			if replaced || !in(kb, e) {
				w.written[e] = true
			}
		}
	}
	return w
}

// cloneRef copies a reference, documents and indexes included.
func cloneRef(m *refModel) *refModel {
	c := &refModel{exists: m.exists, val: m.val, tally: m.tally}
	for _, d := range m.docs {
		cp := *d
		c.docs = append(c.docs, &cp)
	}
	for _, ix := range m.indexes {
		cp := *ix
		c.indexes = append(c.indexes, &cp)
	}
	return c
}

// conflicts reports whether x locking keys meets a key committed after
// its start or held by another open transaction (conf), or only keys that
// may have been written after its start (maybe).
func (r *modelRun) conflicts(x *modelTxn, keys map[string]bool) (conf, maybe bool) {
	tm := &r.tx
	for k := range keys {
		if tm.writtenAt[k] > x.start {
			return true, false
		}
		for _, o := range tm.open {
			if o != nil && o != x && o.locks[k] {
				return true, false
			}
		}
		if tm.maybeAt[k] > x.start {
			maybe = true
		}
	}
	return false, maybe
}

// commitWrites records the keys a commit (or a plain write) wrote.
func (r *modelRun) commitWrites(written, maybe map[string]bool) {
	tm := &r.tx
	if tm.writtenAt == nil {
		tm.writtenAt, tm.maybeAt = map[string]int64{}, map[string]int64{}
	}
	tm.clock++
	for k := range written {
		tm.writtenAt[k] = tm.clock
	}
	for k := range maybe {
		tm.maybeAt[k] = tm.clock
	}
}

func (r *modelRun) anyTxnOpen() bool { return r.tx.open[0] != nil || r.tx.open[1] != nil }

// txnBegin opens a transaction in slot.
func (r *modelRun) txnBegin(ctx context.Context, slot int) error {
	var t *Transaction
	var err error
	if herr := r.guard("beginTransaction", func() { t, err = r.e.BeginTransaction(ctx, TransactionOptions{}) }); herr != nil {
		return herr
	}
	if err != nil {
		return fmt.Errorf("beginTransaction: %v", err)
	}
	r.tx.clock++
	base := cloneRef(r.m)
	r.tx.open[slot] = &modelTxn{t: t, start: r.tx.clock, base: base, view: cloneRef(base), locks: map[string]bool{}, written: map[string]bool{}}
	r.counts["txn.begin"]++
	return nil
}

// txnAbort aborts the transaction of slot, if open; why labels it.
func (r *modelRun) txnAbort(slot int, why string) error {
	x := r.tx.open[slot]
	if x == nil {
		return nil
	}
	r.tx.open[slot] = nil
	r.counts["txn.abort."+why]++
	return r.guard("abortTransaction", x.t.Abort)
}

// txnCommit commits the transaction of slot: nothing to store if it wrote
// nothing, a WriteConflict if the collection changed since it used it,
// otherwise its view's changed documents replace the reference's.
func (r *modelRun) txnCommit(ctx context.Context, slot int, why string) error {
	x := r.tx.open[slot]
	if x == nil {
		return nil
	}
	r.tx.open[slot] = nil
	var err error
	if herr := r.guard("commitTransaction", func() { err = x.t.Commit(ctx) }); herr != nil {
		return herr
	}
	var want mongoerr.Code
	switch {
	case len(x.written) == 0:
		r.counts["txn.commit."+why+".readOnly"]++
	case x.seenVer != r.tx.collVer:
		want = mongoerr.WriteConflict
		r.counts["txn.commit."+why+".writeConflict"]++
	default:
		r.counts["txn.commit."+why+".ok"]++
	}
	if codeOf(err) != int(want) {
		return fmt.Errorf("commitTransaction: engine error %v, model code %d", err, want)
	}
	if want != 0 || len(x.written) == 0 {
		return nil
	}
	w := diffWrites(x.base, x.view)
	vm := docsByKey(x.view)
	changed := map[string]bool{}
	for _, k := range w.ids {
		changed[k] = true
	}
	var keep []*refDoc
	for _, d := range r.m.docs {
		if !changed[idKey(d.id())] {
			keep = append(keep, d)
		}
	}
	// A transaction's writes happen at its commit: the documents it wrote
	// take the commit's time as their _ts (Transaction.stampCommitTime).
	now := r.now()
	for _, k := range w.ids {
		if d := vm[k]; d != nil {
			cp := *d
			cp.ts = now
			keep = append(keep, &cp)
		}
	}
	r.m.docs = keep
	r.commitWrites(x.written, nil)
	return nil
}

// txnAbortAll aborts what is open, before a restart or the end of a run.
func (r *modelRun) txnAbortAll(why string) error {
	for slot := range r.tx.open {
		if err := r.txnAbort(slot, why); err != nil {
			return err
		}
	}
	return nil
}

// endTxn ends the transaction of slot before a plain operation that would
// wait for it: committed or aborted by the step's parity, so that a log
// replays the same.
func (r *modelRun) endTxn(ctx context.Context, slot int, why string) error {
	if r.steps%2 == 0 {
		return r.txnCommit(ctx, slot, why)
	}
	return r.txnAbort(slot, why)
}

// txnCatalog is the answer of the engine's catalog to x's use of the
// collection; it fixes the version x uses at its first use.
func (r *modelRun) txnCatalog(x *modelTxn) mongoerr.Code {
	tm := &r.tx
	if !r.m.exists {
		return 0
	}
	if !x.seen {
		if tm.collVer > x.start && tm.collVer != tm.collBorn {
			return mongoerr.SnapshotUnavailable
		}
		x.seen, x.seenVer = true, tm.collVer
		return 0
	}
	if x.seenVer != tm.collVer {
		return mongoerr.WriteConflict
	}
	return 0
}

// plainLocks are the keys a plain write may wait for, over-estimated: the
// _id of every document, expired or not, whose stored form matches its
// filter, and the _id and unique keys of every version it may write, with
// the _ids of the documents that hold those keys.
func (r *modelRun) plainLocks(op *modelOp) map[string]bool {
	keys := map[string]bool{}
	addVersion := func(doc bson.Raw) {
		if id, err := doc.LookupErr("_id"); err == nil {
			keys[idKey(rawIDValue(id))] = true
		}
		nd := &refDoc{doc: doc}
		for _, k := range entryKeys(r.m.indexes, nd) {
			keys[k] = true
		}
		for _, ix := range r.m.indexes {
			if !ix.unique {
				continue
			}
			for _, o := range r.m.docs {
				if ix.collide(doc, o.doc) {
					keys[idKey(o.id())] = true
				}
			}
		}
	}
	switch op.Kind {
	case "insert":
		for _, d := range op.Docs {
			addVersion(d)
		}
	case "update", "findAndModify", "delete":
		lf, err := r.letForms(op)
		if err != nil {
			return keys
		}
		// An _id point plan locks the _ids named that match (a superset
		// of them, to be safe: a wait in this one goroutine would hang).
		for k := range pointKeys(lf.engFilter) {
			keys[k] = true
		}
		f, err := refFilterOf(op, lf.refFilter)
		if err != nil {
			return keys
		}
		var u interface {
			Apply(bson.Raw, int) (bson.Raw, bool, error)
			ApplyUpsert(bson.Raw) (bson.Raw, error)
		}
		if op.Kind != "delete" && !op.Remove {
			if cu, err := compileUpdateOf(op, lf.refPipe, r.clock.Now()); err == nil {
				u = cu
			}
		}
		for _, d := range r.m.docs {
			ok, pos, _ := f.MatchPositional(d.doc)
			if !ok {
				continue
			}
			keys[idKey(d.id())] = true
			if u != nil {
				if nd, _, err := u.Apply(d.doc, pos); err == nil {
					addVersion(nd)
				}
			}
		}
		if u != nil && op.Upsert {
			if nd, err := u.ApplyUpsert(lf.refFilter); err == nil {
				addVersion(nd)
			}
		}
	}
	return keys
}

// plainPre is what txnBeforePlain leaves for txnAfterPlain.
type plainPre struct {
	ref    *refModel
	hidden []*refDoc
}

// txnBeforePlain makes way for a plain operation: it ends the
// transactions it would wait for, or that a restart, drop or $out ends,
// and keeps the reference as it was to see what the step writes. For a
// reaper pass it hides the documents transactions hold, which the reaper
// skips.
func (r *modelRun) txnBeforePlain(ctx context.Context, op *modelOp) (*plainPre, error) {
	if !r.anyTxnOpen() {
		return nil, nil
	}
	switch op.Kind {
	case "restart", "drop", "out":
		return nil, r.txnAbortAll(op.Kind)
	case "insert", "update", "findAndModify", "delete":
		keys := r.plainLocks(op)
		for slot, x := range r.tx.open {
			if x == nil {
				continue
			}
			for k := range keys {
				if x.locks[k] {
					if err := r.endTxn(ctx, slot, "beforePlainWrite"); err != nil {
						return nil, err
					}
					break
				}
			}
		}
	case "createIndexes", "dropIndexes", "collMod":
		// With TTL on, an index change may purge expired documents,
		// waiting for each one's lock: which ones, the expiry entries
		// say, so any transaction that holds a document ends first.
		if !r.m.setting().Enabled {
			break
		}
		for slot, x := range r.tx.open {
			if x != nil && len(x.locks) > 0 {
				if err := r.endTxn(ctx, slot, "beforePurge"); err != nil {
					return nil, err
				}
			}
		}
	}
	pre := &plainPre{ref: cloneRef(r.m)}
	if op.Kind == "reap" {
		var keep []*refDoc
		for _, d := range r.m.docs {
			held := false
			for _, x := range r.tx.open {
				held = held || x != nil && x.locks[idKey(d.id())]
			}
			if held {
				pre.hidden = append(pre.hidden, d)
			} else {
				keep = append(keep, d)
			}
		}
		r.m.docs = keep
	}
	return pre, nil
}

// txnAfterPlain records what a plain operation wrote and did to the
// catalog.
func (r *modelRun) txnAfterPlain(op *modelOp, pre *plainPre) error {
	if pre != nil {
		r.m.docs = append(r.m.docs, pre.hidden...)
		if r.anyTxnOpen() {
			w := diffWrites(pre.ref, r.m)
			// A document the model read back from the engine before (a
			// resync after a multi update) and reads back again now, the
			// same, may or may not have been rewritten by this plain write
			// (a refused multi update rewrites nothing): its serials and
			// generations cannot tell.
			pm, qm := docsByKey(pre.ref), docsByKey(r.m)
			for k := range w.written {
				a, b := pm[k], qm[k]
				if a != nil && b != nil && a.serial == 0 && b.serial == 0 &&
					bytes.Equal(a.doc, b.doc) && a.ts == b.ts && a.ttl == b.ttl {
					delete(w.written, k)
					w.maybe[k] = true
				}
			}
			r.commitWrites(w.written, w.maybe)
		}
	}
	if op.Kind == "restart" {
		r.tx.obs = r.observeCatalog()
		r.tx.clock++
		r.tx.collVer, r.tx.collBorn = r.tx.clock, r.tx.clock
		return nil
	}
	switch op.Kind {
	case "createIndexes", "dropIndexes", "collMod", "setValidation", "preImages", "drop", "out":
		_, err := r.catalogStep(true)
		return err
	}
	_, err := r.catalogStep(false)
	return err
}

// pointKeys are the _ids op's filter names at its top level or in a
// top-level $and (an equality or $in), which an _id point plan locks
// whether they match or not.
func pointKeys(filter bson.Raw) map[string]bool {
	keys := map[string]bool{}
	for k := range pointValues(filter) {
		keys[k] = true
	}
	return keys
}

// pointValues are the _ids of pointKeys, by key.
func pointValues(filter bson.Raw) map[string]bsoncore.Value {
	vals := map[string]bsoncore.Value{}
	add := func(v bson.RawValue) { vals[idKey(rawIDValue(v))] = rawIDValue(v) }
	if and, err := filter.LookupErr("$and"); err == nil {
		if arr, ok := and.ArrayOK(); ok {
			elems, _ := arr.Values()
			for _, v := range elems {
				if d, ok := v.DocumentOK(); ok {
					for k, x := range pointValues(bson.Raw(d)) {
						vals[k] = x
					}
				}
			}
		}
	}
	v, err := filter.LookupErr("_id")
	if err != nil {
		return vals
	}
	doc, ok := v.DocumentOK()
	if !ok || !bsonFirstKeyIsOp(doc) {
		add(v)
		return vals
	}
	if eq, err := doc.LookupErr("$eq"); err == nil {
		add(eq)
	}
	if in, err := doc.LookupErr("$in"); err == nil {
		if arr, ok := in.ArrayOK(); ok {
			elems, _ := arr.Values()
			for _, x := range elems {
				add(x)
			}
		}
	}
	return vals
}
