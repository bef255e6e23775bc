package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/engine/update"
	"github.com/lethedb/lethe/mongoerr"
)

const modelDB, modelColl = "db", "c"

// modelRun drives one engine and one reference model with the same
// operations and compares every answer and the state after each step.
type modelRun struct {
	e       *Engine
	backend string // the kv backend, for restarts (model_backend_test.go)
	dir     string
	clock   *clock.Manual
	m       *refModel
	timeout time.Duration
	hung    bool // an engine call never returned: the engine is unusable
	// validateEvery runs the full validation every so many steps.
	validateEvery int
	steps         int
	counts        map[string]int
	// views are the model's view definitions, by name.
	views map[string]*View
	// replica is the collection rebuilt from the oplog (model_oplog_test.go).
	replica *oplogReplica
	// txnNumber is the last transaction number of the retryable writes
	// (model_retry_test.go).
	txnNumber int64
	// tx is the transactions' model (model_txn_test.go).
	tx txnModel
}

var errModelHang = errors.New("engine call hung")

// guard runs fn with the watchdog: if it does not return within the
// timeout, the error carries every goroutine's stack.
func (r *modelRun) guard(what string, fn func()) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	timer := time.NewTimer(r.timeout)
	defer timer.Stop()
	select {
	case <-done:
		return nil
	case <-timer.C:
		r.hung = true
		return fmt.Errorf("%w: %s did not finish within %v; goroutines:\n%s", errModelHang, what, r.timeout, goroutineDump())
	}
}

func goroutineDump() string {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
	return buf.String()
}

func codeOf(err error) int {
	if err == nil {
		return 0
	}
	if e, ok := mongoerr.As(err); ok {
		return int(e.Code)
	}
	return -1
}

func (r *modelRun) now() int64 { return r.clock.Now().UnixMilli() }

func rawIDValue(v bson.RawValue) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value}
}

// uniqueFirst makes the document a single-document write picks independent
// of the plan: without a sort, or with a sort that ties on the first
// matches, a tiebreak on _id is added. Recorded in the op, so logs replay.
func (r *modelRun) uniqueFirst(op *modelOp, f *query.Filter) {
	matches := r.m.matching(f, r.now())
	if len(matches) < 2 {
		return
	}
	if op.Sort == nil {
		op.Sort = modelRaw(bson.D{{Key: "_id", Value: 1}})
		return
	}
	if _, err := op.Sort.LookupErr("_id"); err == nil {
		return
	}
	srt, err := refSortOf(op)
	if err != nil {
		return
	}
	slices.SortStableFunc(matches, func(a, b *refDoc) int { return srt.Compare(a.doc, b.doc) })
	if srt.Compare(matches[0].doc, matches[1].doc) == 0 {
		op.Sort = append(op.Sort[:len(op.Sort)-1:len(op.Sort)-1], bsoncore.AppendInt32Element(nil, "_id", 1)...)
		op.Sort = append(op.Sort, 0)
		op.Sort = bson.Raw(fixLength(op.Sort))
	}
}

func fixLength(doc []byte) []byte {
	n := int32(len(doc))
	doc[0], doc[1], doc[2], doc[3] = byte(n), byte(n>>8), byte(n>>16), byte(n>>24)
	return doc
}

func (r *modelRun) clone() *refModel {
	c := &refModel{exists: r.m.exists, val: r.m.val}
	for _, d := range r.m.docs {
		cp := *d
		c.docs = append(c.docs, &cp)
	}
	for _, ix := range r.m.indexes {
		cp := *ix
		c.indexes = append(c.indexes, &cp)
	}
	return c
}

// kindLabel names an operation's kind for the summary: the kind, its
// variant, and the options that take other paths through the engine.
// indexChange is the collMod op's change to an index.
func (op *modelOp) indexChange() IndexChange {
	ch := IndexChange{Name: op.IxName, KeyPattern: op.IxKey}
	if op.Expire.Type != 0 {
		ev := rawIDValue(op.Expire)
		ch.ExpireAfter = &ev
	}
	if op.Hide != 0 {
		hide := op.Hide == 1
		ch.Hidden = &hide
	}
	return ch
}

func kindLabel(op *modelOp) string {
	l := baseKindLabel(op)
	if op.Bypass {
		l += ".bypass"
	}
	if op.Let != nil {
		l += ".let"
	}
	if op.Min != nil || op.Max != nil {
		l += ".minmax"
	}
	if op.ReturnKey {
		l += ".returnKey"
	}
	if op.Collation != nil {
		l += ".collation"
	}
	if op.Filter != nil && op.Filter.Lookup("$text").Type != 0 {
		l += ".text"
	}
	if path, near := nearPath(op.Filter); near != "" {
		l += "." + near[1:]
		if path == "pt" {
			l += ".2d"
		}
	}
	if op.GeoNear != nil {
		l += ".geoNear"
	}
	return l
}

func baseKindLabel(op *modelOp) string {
	switch op.Kind {
	case "insert":
		if len(op.Docs) > 1 {
			if op.Ordered {
				return "insertMany.ordered"
			}
			return "insertMany.unordered"
		}
		return "insertOne"
	case "update", "findAndModify":
		l := op.Kind
		switch {
		case op.Remove:
			l += ".remove"
		case op.Pipe != nil:
			l += ".pipeline"
		case !bsonFirstKeyIsOp(op.Upd):
			l += ".replace"
		default:
			l += ".operators"
		}
		if op.Multi {
			l += ".multi"
		}
		if op.Upsert {
			l += ".upsert"
		}
		return l
	case "delete":
		if op.Limit == 1 {
			return "deleteOne"
		}
		return "deleteMany"
	}
	return op.Kind
}

// step runs op on the engine and the model and compares the answers: a
// transaction's operation, or a plain one around which the transactions'
// model keeps its books (model_txn_test.go).
func (r *modelRun) step(ctx context.Context, op *modelOp) error {
	r.steps++
	if op.InTxn != 0 {
		return r.stepTxn(ctx, op)
	}
	pre, err := r.txnBeforePlain(ctx, op)
	if err != nil {
		return err
	}
	err = r.stepPlain(ctx, op)
	if aerr := r.txnAfterPlain(op, pre); err == nil {
		err = aerr
	}
	return err
}

// stepPlain runs a plain operation (outside any transaction).
func (r *modelRun) stepPlain(ctx context.Context, op *modelOp) error {
	r.counts[kindLabel(op)]++
	now := r.now()
	r.m.bypass = op.Bypass
	defer func() { r.m.bypass = false }()
	switch op.Kind {
	case "insert":
		var res InsertResult
		opts := WriteOptions{BypassDocumentValidation: op.Bypass}
		err := r.retryable(op, &opts.Txn)
		if opts.Txn != nil {
			opts.StmtIDs = make([]int32, len(op.Docs))
			for i := range opts.StmtIDs {
				opts.StmtIDs[i] = int32(i)
			}
		}
		if err != nil {
			return err
		}
		if herr := r.guard("insert", func() {
			res, err = r.e.Insert(ctx, modelDB, modelColl, op.Docs, op.Ordered, opts)
		}); herr != nil {
			return herr
		}
		if err != nil {
			return fmt.Errorf("insert: unexpected error %v", err)
		}
		// Documents without _id get ObjectIds from the engine, which only
		// it knows: the new ones, in the order they were made, go to the
		// documents the model stores.
		gen, err := r.newObjectIDs()
		if err != nil {
			return err
		}
		n := 0
		var want []string
		for i, d := range op.Docs {
			var genID bsoncore.Value
			if _, err := d.LookupErr("_id"); err != nil && len(gen) > 0 {
				genID = gen[0]
			}
			if _, err := r.m.insert(d, genID, now); err != nil {
				want = append(want, fmt.Sprintf("%d:%d", i, codeOf(err)))
				if op.Ordered {
					break
				}
				continue
			}
			if genID.Type != 0 {
				gen = gen[1:]
			}
			n++
		}
		var got []string
		for _, we := range res.Errors {
			got = append(got, fmt.Sprintf("%d:%d", we.Index, codeOf(we.Err)))
			if err := checkFailingDocumentID(we.Err, op.Docs[we.Index]); err != nil {
				return fmt.Errorf("insert of document %d: %v", we.Index, err)
			}
		}
		if res.N != n || !slices.Equal(got, want) {
			return fmt.Errorf("insert: engine n=%d errors(index:code)=%v, model n=%d errors=%v", res.N, got, n, want)
		}
		if opts.Txn != nil && len(res.Errors) == 0 {
			again, err := r.e.Insert(context.Background(), modelDB, modelColl, op.Docs, op.Ordered, opts)
			if err != nil || again.N != res.N || len(again.Errors) != 0 {
				return fmt.Errorf("retried insert: n=%d errors=%v, %v; first n=%d", again.N, again.Errors, err, res.N)
			}
		}
	case "update":
		return r.stepUpdate(ctx, op)
	case "findAndModify":
		return r.stepFindAndModify(ctx, op)
	case "delete":
		return r.stepDelete(ctx, op)
	case "count", "find", "distinct", "aggregate":
		return r.stepRead(ctx, op)
	case "out":
		return r.stepOut(ctx, op)
	case "createIndexes":
		var res CreateIndexesResult
		var err error
		if herr := r.guard("createIndexes", func() { res, err = r.e.CreateIndexes(ctx, modelDB, modelColl, op.Specs) }); herr != nil {
			return herr
		}
		want, werr := r.m.createIndexes(op.Specs, now)
		if codeOf(err) != codeOf(werr) {
			return fmt.Errorf("createIndexes: engine error %v, model code %d", err, codeOf(werr))
		}
		if err == nil && (res.Before != want.Before || res.After != want.After || res.CreatedCollection != want.CreatedCollection) {
			return fmt.Errorf("createIndexes: engine %+v, model %+v", res, want)
		}
	case "dropIndexes":
		var before int
		var err error
		if herr := r.guard("dropIndexes", func() { before, err = r.e.DropIndexes(ctx, modelDB, modelColl, op.Which) }); herr != nil {
			return herr
		}
		want, werr := r.m.dropIndexes(op.Which, now)
		if codeOf(err) != codeOf(werr) || before != want {
			return fmt.Errorf("dropIndexes: engine (%d, %v), model (%d, code %d)", before, err, want, codeOf(werr))
		}
	case "collMod":
		ch := op.indexChange()
		var res CollModResult
		var err error
		if herr := r.guard("collMod", func() { res, err = r.e.CollModIndex(ctx, modelDB, modelColl, ch) }); herr != nil {
			return herr
		}
		want, werr := r.m.collMod(ch)
		fmtp := func(p *int32) string {
			if p == nil {
				return "nil"
			}
			return fmt.Sprint(*p)
		}
		fmtb := func(p *bool) string {
			if p == nil {
				return "nil"
			}
			return fmt.Sprint(*p)
		}
		if err == nil && (fmtb(res.OldHidden) != fmtb(want.OldHidden) || fmtb(res.NewHidden) != fmtb(want.NewHidden)) {
			return fmt.Errorf("collMod: engine hidden %s->%s, model %s->%s", fmtb(res.OldHidden), fmtb(res.NewHidden), fmtb(want.OldHidden), fmtb(want.NewHidden))
		}
		if codeOf(err) != codeOf(werr) || fmtp(res.OldExpireAfter) != fmtp(want.OldExpireAfter) || fmtp(res.NewExpireAfter) != fmtp(want.NewExpireAfter) {
			return fmt.Errorf("collMod: engine (%s->%s, %v), model (%s->%s, code %d)", fmtp(res.OldExpireAfter), fmtp(res.NewExpireAfter), err, fmtp(want.OldExpireAfter), fmtp(want.NewExpireAfter), codeOf(werr))
		}
	case "clock":
		r.clock.Advance(op.Dur)
	case "reap":
		var n int
		var err error
		if herr := r.guard("reaper pass", func() { n, err = r.e.Reaper().Pass() }); herr != nil {
			return herr
		}
		if err != nil {
			return fmt.Errorf("reaper pass: %v", err)
		}
		if want := r.m.reap(now); n != want {
			return fmt.Errorf("reaper pass purged %d documents, model %d", n, want)
		}
	case "restart":
		if err := r.e.Close(); err != nil {
			return fmt.Errorf("close: %v", err)
		}
		e, err := openModelEngine(r.backend, r.dir, Options{Clock: r.clock, NoReaper: true, Oplog: true})
		if err != nil {
			return fmt.Errorf("reopen: %v", err)
		}
		r.e = e
	case "findBatches":
		return r.stepFindBatches(ctx, op)
	case "createView", "modifyView", "dropView", "readView":
		return r.stepView(ctx, op)
	case "setValidation":
		return r.stepSetValidation(op)
	case "preImages":
		var err error
		if herr := r.guard("preImages", func() { err = r.e.SetPreAndPostImages(ctx, modelDB, modelColl, op.PreImages) }); herr != nil {
			return herr
		}
		want := 0
		if !r.m.exists {
			want = int(mongoerr.NamespaceNotFound)
		}
		if codeOf(err) != want {
			return fmt.Errorf("preImages: engine error %v, model code %d", err, want)
		}
	case "drop":
		var existed bool
		var err error
		if herr := r.guard("drop", func() { existed, err = r.e.DropCollection(ctx, modelDB, modelColl) }); herr != nil {
			return herr
		}
		if err != nil || existed != r.m.exists {
			return fmt.Errorf("drop: engine (%v, %v), model existed %v", existed, err, r.m.exists)
		}
		*r.m = refModel{tally: r.m.tally}
	default:
		return fmt.Errorf("unknown op %q", op.Kind)
	}
	return nil
}

func (r *modelRun) stepUpdate(ctx context.Context, op *modelOp) error {
	if nearOperator(op.Filter) != "" {
		return r.stepNearUpdate(ctx, op) // model_near_write_test.go
	}
	now := r.now()
	lf, err := r.letForms(op)
	if err != nil {
		return err
	}
	u, err := compileUpdateOf(op, lf.engPipe, r.clock.Now())
	if err != nil {
		r.counts["skipped.badUpdate"]++
		return nil
	}
	ru, err := compileUpdateOf(op, lf.refPipe, r.clock.Now())
	if err != nil {
		return fmt.Errorf("update: the model's form of the pipeline %v: %v", lf.refPipe, err)
	}
	f, ferr := refFilterOf(op, lf.refFilter)
	if ferr == nil && !op.Multi {
		r.uniqueFirst(op, f)
	}
	spec := UpdateSpec{Filter: lf.engFilter, Update: u, Multi: op.Multi, Upsert: op.Upsert, Sort: op.Sort, BypassDocumentValidation: op.Bypass}
	if err := r.retryable(op, &spec.Txn); err != nil {
		return err
	}
	var res UpdateResult
	if herr := r.guard("update", func() { res, err = r.e.Update(WithCollation(ctx, op.Collation), modelDB, modelColl, spec) }); herr != nil {
		return herr
	}
	if ferr != nil {
		if codeOf(err) != codeOf(ferr) {
			return fmt.Errorf("update: engine error %v, model code %d", err, codeOf(ferr))
		}
		return nil
	}
	srt, _ := refSortOf(op)
	pre := r.clone()
	want := r.m.update(f, srt, lf.refFilter, ru, op.Multi, op.Upsert, rawIDValue(res.Upserted), now)
	if want.ambiguous {
		r.counts["resync.multiUpdate"]++
		return r.resyncAfterMulti(pre, f, want.matches, ru, err)
	}
	if codeOf(err) != codeOf(want.err) {
		return fmt.Errorf("update: engine error %v, model code %d", err, codeOf(want.err))
	}
	if res.Matched != want.res.Matched || res.Modified != want.res.Modified {
		return fmt.Errorf("update: engine matched %d modified %d, model %d %d", res.Matched, res.Modified, want.res.Matched, want.res.Modified)
	}
	if want.needID && want.err == nil && res.Upserted.Type != bson.TypeObjectID {
		return fmt.Errorf("update: upsert without _id reported _id %v", res.Upserted)
	}
	if (res.Upserted.Type == 0) != (want.res.Upserted.Type == 0) || (res.Upserted.Type != 0 && !valuesEqual(rawIDValue(res.Upserted), rawIDValue(want.res.Upserted))) {
		return fmt.Errorf("update: engine upserted %v, model %v", res.Upserted, want.res.Upserted)
	}
	if spec.Txn != nil && err == nil {
		again, err := r.e.Update(ctx, modelDB, modelColl, spec)
		if err != nil || again.Matched != res.Matched || again.Modified != res.Modified || !again.Upserted.Equal(res.Upserted) {
			return fmt.Errorf("retried update: %+v, %v; first %+v", again, err, res)
		}
	}
	return nil
}

// resyncAfterMulti accepts a multi update whose outcome depends on the
// visiting order: every document the engine now shows must be as before,
// or, if it matched, what the update makes of it; then the model takes the
// engine's documents.
func (r *modelRun) resyncAfterMulti(pre *refModel, f *query.Filter, matches []*refDoc, u *update.Update, engineErr error) error {
	if c := codeOf(engineErr); c < 0 {
		return fmt.Errorf("update: engine error %v", engineErr)
	}
	now := r.now()
	got, err := r.engineDocs(true)
	if err != nil {
		return err
	}
	preVis := pre.visible(now)
	vis := 0
	for _, g := range got {
		if !pre.live(&refDoc{ts: g.ts, ttl: g.ttl}, now) {
			continue
		}
		vis++
		var old *refDoc
		for _, d := range preVis {
			if valuesEqual(d.id(), g.id()) {
				old = d
			}
		}
		if old == nil {
			return fmt.Errorf("multi update: engine shows _id %v that was not there", g.id())
		}
		if bytes.Equal(old.doc, g.doc) {
			continue
		}
		matched := slices.ContainsFunc(matches, func(d *refDoc) bool { return valuesEqual(d.id(), g.id()) })
		_, pos, _ := f.MatchPositional(old.doc)
		after, _, aerr := u.Apply(old.doc, pos)
		if !matched || aerr != nil || !bytes.Equal(after, g.doc) {
			return fmt.Errorf("multi update: document %v became %v, which the update cannot make of %v", g.id(), g.doc, old.doc)
		}
	}
	if vis != len(preVis) {
		return fmt.Errorf("multi update: %d documents visible after, %d before", vis, len(preVis))
	}
	r.m.docs = got
	return nil
}

func (r *modelRun) stepFindAndModify(ctx context.Context, op *modelOp) error {
	if nearOperator(op.Filter) != "" {
		return r.stepNearFindAndModify(ctx, op) // model_near_write_test.go
	}
	now := r.now()
	lf, err := r.letForms(op)
	if err != nil {
		return err
	}
	var u, ru *update.Update
	if !op.Remove {
		if u, err = compileUpdateOf(op, lf.engPipe, r.clock.Now()); err != nil {
			r.counts["skipped.badUpdate"]++
			return nil
		}
		if ru, err = compileUpdateOf(op, lf.refPipe, r.clock.Now()); err != nil {
			return fmt.Errorf("findAndModify: the model's form of the pipeline %v: %v", lf.refPipe, err)
		}
	}
	q, qerr := refQueryOf(op, FindSpec{Filter: lf.refFilter, Sort: op.Sort, Projection: op.Proj})
	if qerr == nil {
		r.uniqueFirst(op, q.filter)
		q, qerr = refQueryOf(op, FindSpec{Filter: lf.refFilter, Sort: op.Sort, Projection: op.Proj})
	}
	spec := FindAndModifySpec{Filter: lf.engFilter, Sort: op.Sort, Fields: op.Proj, Remove: op.Remove, Update: u, New: op.New, Upsert: op.Upsert, BypassDocumentValidation: op.Bypass}
	if err := r.retryable(op, &spec.Txn); err != nil {
		return err
	}
	var res FindAndModifyResult
	if herr := r.guard("findAndModify", func() { res, err = r.e.FindAndModify(WithCollation(ctx, op.Collation), modelDB, modelColl, spec) }); herr != nil {
		return herr
	}
	if qerr != nil {
		if codeOf(err) != codeOf(qerr) {
			return fmt.Errorf("findAndModify: engine error %v, model code %d", err, codeOf(qerr))
		}
		return nil
	}
	refSpec := spec
	refSpec.Filter, refSpec.Update = lf.refFilter, ru
	want, _, needID, werr := r.m.findAndModify(q.filter, q.sort, q.proj, refSpec, rawIDValue(res.Upserted), now)
	if codeOf(err) != codeOf(werr) {
		return fmt.Errorf("findAndModify: engine error %v, model code %d", err, codeOf(werr))
	}
	if werr != nil {
		return nil
	}
	if needID && res.Upserted.Type != bson.TypeObjectID {
		return fmt.Errorf("findAndModify: upsert without _id reported _id %v", res.Upserted)
	}
	if res.N != want.N || res.UpdatedExisting != want.UpdatedExisting || !bytes.Equal(res.Value, want.Value) ||
		(res.Upserted.Type == 0) != (want.Upserted.Type == 0) || (res.Upserted.Type != 0 && !valuesEqual(rawIDValue(res.Upserted), rawIDValue(want.Upserted))) {
		return fmt.Errorf("findAndModify: engine n=%d updatedExisting=%v upserted=%v value=%v; model n=%d updatedExisting=%v upserted=%v value=%v",
			res.N, res.UpdatedExisting, res.Upserted, res.Value, want.N, want.UpdatedExisting, want.Upserted, want.Value)
	}
	if spec.Txn != nil {
		again, err := r.e.FindAndModify(ctx, modelDB, modelColl, spec)
		if err != nil || again.N != res.N || again.UpdatedExisting != res.UpdatedExisting || !bytes.Equal(again.Value, res.Value) || !again.Upserted.Equal(res.Upserted) {
			return fmt.Errorf("retried findAndModify: %+v, %v; first %+v", again, err, res)
		}
	}
	return nil
}

func (r *modelRun) stepDelete(ctx context.Context, op *modelOp) error {
	if nearOperator(op.Filter) != "" {
		return r.stepNearDelete(ctx, op) // model_near_test.go
	}
	now := r.now()
	lf, err := r.letForms(op)
	if err != nil {
		return err
	}
	var n int64
	var txn *Txn
	if err := r.retryable(op, &txn); err != nil {
		return err
	}
	ctx = WithCollation(ctx, op.Collation)
	del := func() (int64, error) {
		if txn != nil {
			return r.e.Delete(ctx, modelDB, modelColl, lf.engFilter, int(op.Limit), bson.RawValue{}, txn)
		}
		return r.e.Delete(ctx, modelDB, modelColl, lf.engFilter, int(op.Limit), bson.RawValue{})
	}
	if herr := r.guard("delete", func() { n, err = del() }); herr != nil {
		return herr
	}
	if txn != nil && err == nil {
		// The repeat removes nothing more, whatever matches now.
		if again, err := del(); err != nil || again != n {
			return fmt.Errorf("retried delete: n=%d, %v; first n=%d", again, err, n)
		}
	}
	f, ferr := refFilterOf(op, lf.refFilter)
	if ferr != nil || err != nil {
		if codeOf(err) != codeOf(ferr) {
			return fmt.Errorf("delete: engine error %v, model code %d", err, codeOf(ferr))
		}
		return nil
	}
	matches := r.m.matching(f, now)
	if op.Limit == 1 && len(matches) > 1 {
		// Which one goes depends on the plan: it must be one of them.
		if n != 1 {
			return fmt.Errorf("deleteOne of %d matches removed %d", len(matches), n)
		}
		got, err := r.engineDocs(true)
		if err != nil {
			return err
		}
		var gone []*refDoc
		for _, d := range matches {
			if !slices.ContainsFunc(got, func(g *refDoc) bool { return valuesEqual(g.id(), d.id()) }) {
				gone = append(gone, d)
			}
		}
		if len(gone) != 1 {
			return fmt.Errorf("deleteOne removed %d of the matching documents", len(gone))
		}
		r.m.remove(gone...)
		return nil
	}
	if op.Limit == 1 && len(matches) > 1 {
		matches = matches[:1]
	}
	r.m.remove(matches...)
	if n != int64(len(matches)) {
		return fmt.Errorf("delete: engine removed %d, model %d", n, len(matches))
	}
	return nil
}
