package engine

import (
	"context"
	"fmt"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/mongoerr"
)

// The statements of the model's transactions (model_txn_test.go): the
// generator's operations, and how a step runs one in its transaction.

// txnStatementKinds are the operations a transaction runs.
var txnStatementKinds = map[string]bool{"insert": true, "update": true, "findAndModify": true, "delete": true, "count": true, "find": true, "distinct": true}

// txnOp makes op a transaction's operation: a begin, commit, abort or
// timeout of a slot, or a statement in it.
func (g *modelGen) txnOp(op *modelOp) {
	slot := 1 + g.r.Intn(2)
	switch k := g.r.Intn(14); {
	case k < 2:
		op.Kind = "txnBegin"
	case k < 4:
		op.Kind = "txnCommit"
	case k < 5:
		op.Kind = "txnAbort"
	case k < 6:
		// The server aborts a transaction left open past its lifetime.
		op.Kind = "txnTimeout"
	default:
		g.txns = false
		for {
			*op = *g.next()
			// Inserts bring their _ids: an ObjectId the engine makes in a
			// transaction is in no store the model can read.
			// A write through $near is checked by what it left in the
			// store, which a transaction's writes are not in yet.
			nearWrite := op.Kind != "find" && op.Kind != "count" && nearOperator(op.Filter) != ""
			if txnStatementKinds[op.Kind] && !nearWrite && !slices.ContainsFunc(op.Docs, func(d bson.Raw) bool { _, err := d.LookupErr("_id"); return err != nil }) {
				break
			}
		}
		g.txns = true
		op.Retry = false
		op.Ordered = true
	}
	op.InTxn = slot
}

// stepTxn runs a transaction's operation.
func (r *modelRun) stepTxn(ctx context.Context, op *modelOp) error {
	slot := op.InTxn - 1
	switch op.Kind {
	case "txnBegin":
		if r.tx.open[slot] != nil {
			return nil
		}
		return r.txnBegin(ctx, slot)
	case "txnCommit":
		return r.txnCommit(ctx, slot, "client")
	case "txnAbort":
		return r.txnAbort(slot, "client")
	case "txnTimeout":
		return r.txnAbort(slot, "timeout")
	}
	if r.tx.open[slot] == nil {
		if err := r.txnBegin(ctx, slot); err != nil {
			return err
		}
	}
	x := r.tx.open[slot]
	r.counts["txn."+kindLabel(op)]++
	global := r.m
	existed := global.exists
	x.view.exists = global.exists
	x.view.tally = global.tally
	r.m = x.view
	err := r.txnStatement(WithTransaction(ctx, x.t), x, slot, op)
	r.m = global
	if x.view.exists {
		global.exists = true
	}
	if err != nil {
		return err
	}
	marked, err := r.catalogStep(false)
	if err != nil {
		return err
	}
	if marked && r.tx.open[slot] == x {
		// The transaction's own write marked the index, and goes on under
		// the new state (Transaction.adoptMultikey).
		x.seenVer = r.tx.collVer
	}
	if r.tx.open[slot] == x && !existed && !x.seen && x.view.exists && r.tx.obs.c != nil && r.tx.collVer == r.tx.collBorn && r.tx.collVer > x.start {
		// Its statement created the collection, which it now uses (a
		// collection a plain write created is first used by the first
		// statement that reaches it: txnCatalog).
		x.seen, x.seenVer = true, r.tx.collVer
	}
	return nil
}

// txnStatement runs op in x, with r.m standing for x's view.
func (r *modelRun) txnStatement(ctx context.Context, x *modelTxn, slot int, op *modelOp) error {
	isRead := op.Kind == "count" || op.Kind == "find" || op.Kind == "distinct"
	lf, err := r.letForms(op)
	if err != nil {
		return err
	}
	if isRead {
		// A filter that does not compile fails before the catalog is
		// looked at; the step compares the errors, and nothing is fixed.
		if _, err := query.Compile(lf.refFilter); err != nil {
			return r.stepRead(ctx, op)
		}
	} else if (op.Kind == "update" || op.Kind == "findAndModify") && !op.Remove {
		if _, err := compileUpdateOf(op, lf.engPipe, r.clock.Now()); err != nil {
			r.counts["skipped.badUpdate"]++
			return nil
		}
	}
	// A dry run on a copy of the view says what a write locks, and how it
	// fails.
	var derr error
	var ambiguous bool
	var early []string
	var w refWrites
	if !isRead {
		dry := cloneRef(r.m)
		dry.tally = nil
		dry.bypass = op.Bypass
		r.m = dry
		derr, ambiguous, early = r.refDry(op)
		r.m = x.view
		w = diffWrites(x.view, dry)
	}
	if code := r.txnCatalog(x); code != 0 {
		err := r.execTxn(ctx, op)
		if c := codeOf(err); c != int(code) && (derr == nil || c != codeOf(derr)) {
			return fmt.Errorf("%s in a transaction: engine error %v, model code %d (the catalog changed)", op.Kind, err, code)
		}
		r.counts[fmt.Sprintf("txn.outcome.catalog.%d", codeOf(err))]++
		return r.txnAbort(slot, "afterError")
	}
	if isRead {
		return r.stepRead(ctx, op)
	}
	// What it wrote before it failed, and what it locked at the failure.
	locks := w.locks
	if derr != nil {
		for _, k := range early {
			locks[k] = true
		}
	}
	conf, maybe := r.conflicts(x, locks)
	switch {
	case !conf && !maybe && !ambiguous:
		if err := r.stepPlain(ctx, op); err != nil {
			return err
		}
		r.counts[kindLabel(op)]-- // counted as txn.*
		if derr != nil {
			r.counts[fmt.Sprintf("txn.outcome.%d", codeOf(derr))]++
			return r.txnAbort(slot, "afterError")
		}
		for k := range w.locks {
			x.locks[k] = true
		}
		for k := range w.written {
			x.written[k] = true
		}
		return nil
	case conf && derr == nil:
		err := r.execTxn(ctx, op)
		if codeOf(err) != int(mongoerr.WriteConflict) {
			return fmt.Errorf("%s in a transaction: engine error %v, model WriteConflict", op.Kind, err)
		}
		if me, _ := mongoerr.As(err); !slices.Contains(me.Labels, "TransientTransactionError") {
			return fmt.Errorf("%s in a transaction: WriteConflict without TransientTransactionError: %v", op.Kind, err)
		}
	case conf:
		err := r.execTxn(ctx, op)
		if c := codeOf(err); c != int(mongoerr.WriteConflict) && c != codeOf(derr) {
			return fmt.Errorf("%s in a transaction: engine error %v, model WriteConflict or code %d", op.Kind, err, codeOf(derr))
		}
	default:
		// The outcome depends on the plan, or on what the model took from
		// the engine: any MongoDB answer goes, and the transaction ends.
		err := r.execTxn(ctx, op)
		if codeOf(err) < 0 {
			return fmt.Errorf("%s in a transaction: %v", op.Kind, err)
		}
		r.counts["txn.outcome.ambiguous"]++
		return r.txnAbort(slot, "ambiguous")
	}
	r.counts["txn.outcome.writeConflict"]++
	return r.txnAbort(slot, "afterError")
}

// execTxn runs op on the engine in the transaction of ctx, for an outcome
// the model knows only as an error code.
func (r *modelRun) execTxn(ctx context.Context, op *modelOp) error {
	var err error
	if herr := r.guard(op.Kind+" in a transaction", func() {
		if op.Kind == "insert" {
			var res InsertResult
			res, err = r.e.Insert(ctx, modelDB, modelColl, op.Docs, op.Ordered, WriteOptions{BypassDocumentValidation: op.Bypass})
			if err == nil && len(res.Errors) > 0 {
				err = res.Errors[0].Err
			}
			return
		}
		err = execConcurrentOp(ctx, r.e, r.clock, op)
	}); herr != nil {
		return herr
	}
	return err
}

// refDry applies op to r.m as the step would, and returns its error,
// whether its outcome depends on the plan, and the keys it locks before it
// fails: those of the document whose insert finds a duplicate, the _ids of
// the documents an update or findAndModify matched.
func (r *modelRun) refDry(op *modelOp) (error, bool, []string) {
	now := r.now()
	lf, err := r.letForms(op)
	if err != nil {
		return err, false, nil
	}
	versionKeys := func(doc bson.Raw) []string {
		keys := entryKeys(r.m.indexes, &refDoc{doc: doc})
		if id, err := doc.LookupErr("_id"); err == nil {
			keys = append(keys, idKey(rawIDValue(id)))
		}
		return keys
	}
	matchKeys := func(matches []*refDoc) []string {
		var keys []string
		for _, d := range matches {
			keys = append(keys, idKey(d.id()))
		}
		return keys
	}
	switch op.Kind {
	case "insert":
		for _, d := range op.Docs {
			if _, err := r.m.insert(d, bsoncore.Value{}, now); err != nil {
				var early []string
				if codeOf(err) == int(mongoerr.DuplicateKey) {
					early = versionKeys(d)
				}
				return err, false, early
			}
		}
	case "update":
		ru, err := compileUpdateOf(op, lf.refPipe, r.clock.Now())
		if err != nil {
			return err, false, nil
		}
		f, err := refFilterOf(op, lf.refFilter)
		if err != nil {
			return err, false, nil
		}
		if !op.Multi {
			r.uniqueFirst(op, f)
		}
		srt, _ := refSortOf(op)
		want := r.m.update(f, srt, lf.refFilter, ru, op.Multi, op.Upsert, bsoncore.Value{}, now)
		early := matchKeys(want.matches)
		if want.err != nil && len(want.matches) == 0 && op.Upsert {
			if doc, err := ru.ApplyUpsert(lf.refFilter); err == nil {
				early = versionKeys(doc)
			}
		}
		return want.err, want.ambiguous, early
	case "findAndModify":
		spec := FindAndModifySpec{Filter: lf.refFilter, Sort: op.Sort, Remove: op.Remove, New: op.New, Upsert: op.Upsert}
		if !op.Remove {
			ru, err := compileUpdateOf(op, lf.refPipe, r.clock.Now())
			if err != nil {
				return err, false, nil
			}
			spec.Update = ru
		}
		q, err := refQueryOf(op, FindSpec{Filter: lf.refFilter, Sort: op.Sort, Projection: op.Proj})
		if err != nil {
			return err, false, nil
		}
		r.uniqueFirst(op, q.filter)
		if q, err = refQueryOf(op, FindSpec{Filter: lf.refFilter, Sort: op.Sort, Projection: op.Proj}); err != nil {
			return err, false, nil
		}
		spec.Sort = op.Sort
		_, matches, _, err := r.m.findAndModify(q.filter, q.sort, q.proj, spec, bsoncore.Value{}, now)
		early := matchKeys(matches)
		if err != nil && len(matches) == 0 && spec.Upsert && !spec.Remove {
			if doc, uerr := spec.Update.ApplyUpsert(lf.refFilter); uerr == nil {
				early = versionKeys(doc)
			}
		}
		return err, false, early
	case "delete":
		f, err := refFilterOf(op, lf.refFilter)
		if err != nil {
			return err, false, nil
		}
		matches := r.m.matching(f, now)
		if op.Limit == 1 && len(matches) > 1 {
			return nil, true, nil
		}
		r.m.remove(matches...)
	}
	return nil, false, nil
}
