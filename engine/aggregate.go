package engine

import (
	"context"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/mongoerr"
	"github.com/lethedb/lethe/engine/project"
	"github.com/lethedb/lethe/engine/query"
)

// Aggregate runs a pipeline over db.coll and returns all its output. The
// leading $match/$sort/$skip/$limit stages become one query, so they use
// the planner and indexes; the rest run in memory.
//
// Supported stages: $match, $sort, $skip, $limit, $project, $addFields
// ($set), $unset, $replaceWith ($replaceRoot), $count and $group ($sum,
// $avg, $min, $max, $first, $last, $push, $addToSet, $count), all on the
// aggregation expression language of package query.
func (e *Engine) Aggregate(ctx context.Context, db, coll string, pipeline []bson.Raw, opts AggregateOptions) ([]bson.Raw, error) {
	res, err := e.AggregateStream(ctx, db, coll, pipeline, opts)
	return res.Docs, err
}

// AggregateResult is the output of a pipeline over a collection.
type AggregateResult struct {
	Docs []bson.Raw
	// Source is the collection the output streams from: in MongoDB a
	// pipeline reads its collection as its cursor is read, and dropping or
	// renaming the collection kills the cursor (Source.Check), unless a
	// blocking stage ($sort without an index, $group, $count) read all of
	// it before the first result. Source is zero then.
	Source Incarnation
}

// AggregateStream is Aggregate that also tells what kills its cursor.
func (e *Engine) AggregateStream(ctx context.Context, db, coll string, pipeline []bson.Raw, opts AggregateOptions) (AggregateResult, error) {
	docs, src, err := e.aggregate(ctx, db, coll, pipeline, opts)
	return AggregateResult{Docs: docs, Source: src}, err
}

func (e *Engine) aggregate(ctx context.Context, db, coll string, pipeline []bson.Raw, opts AggregateOptions) ([]bson.Raw, Incarnation, error) {
	spec := FindSpec{AllowDiskUse: opts.AllowDiskUse, Hint: opts.Hint}
	var filters []bson.Raw
	i := 0
	for ; i < len(pipeline); i++ {
		name, arg, err := stageOf(pipeline[i])
		if err != nil {
			return nil, Incarnation{}, err
		}
		if name == "$match" && spec.Sort == nil && spec.Skip == 0 && spec.Limit == 0 {
			doc, ok := arg.DocumentOK()
			if !ok {
				return nil, Incarnation{}, mongoerr.New(mongoerr.Code(15959), "the match filter must be an expression in an object")
			}
			filters = append(filters, doc)
			continue
		}
		if name == "$sort" && spec.Sort == nil && spec.Skip == 0 && spec.Limit == 0 {
			doc, ok := arg.DocumentOK()
			if !ok {
				return nil, Incarnation{}, mongoerr.New(mongoerr.Code(15973), "the $sort key specification must be an object")
			}
			spec.Sort = doc
			continue
		}
		break
	}
	switch len(filters) {
	case 0:
	case 1:
		spec.Filter = filters[0]
	default:
		arr := make(bson.A, len(filters))
		for j, f := range filters {
			arr[j] = f
		}
		spec.Filter, _ = bson.Marshal(bson.D{{Key: "$and", Value: arr}})
	}
	cur, err := e.Find(ctx, db, coll, spec)
	if err != nil {
		return nil, Incarnation{}, err
	}
	r := e.newPipelineRun(ctx, opts.AllowDiskUse)
	rest := pipeline[i:]
	var src Incarnation
	if !cur.materialized && !blocks(rest) {
		src = cur.incarnation()
	}
	var docs []bson.Raw
	if name, arg, _ := stageOf(firstOf(rest)); name == "$group" {
		// A $group first takes the query's documents as they come rather
		// than all at once.
		docs, err = group(ctx, arg, cursorDocs(ctx, cur), r.now, r.blocking(groupExceeded))
		rest = rest[1:]
	} else {
		docs, err = r.read(cur, r.limitBefore(rest))
	}
	if err != nil {
		return nil, Incarnation{}, err
	}
	docs, err = r.run(docs, rest)
	return docs, src, err
}

// blocks reports whether one of stages reads all its input before its
// first output.
func blocks(stages []bson.Raw) bool {
	for _, st := range stages {
		switch name, _, _ := stageOf(st); name {
		case "$sort", "$group", "$count":
			return true
		}
	}
	return false
}

func firstOf(stages []bson.Raw) bson.Raw {
	if len(stages) == 0 {
		return nil
	}
	return stages[0]
}

// docSource calls fn with documents in turn until fn fails.
type docSource func(fn func(doc bson.Raw) error) error

func sliceDocs(docs []bson.Raw) docSource {
	return func(fn func(bson.Raw) error) error {
		for _, d := range docs {
			if err := fn(d); err != nil {
				return err
			}
		}
		return nil
	}
}

// cursorDocs reads a cursor a batch at a time.
func cursorDocs(ctx context.Context, cur *Cursor) docSource {
	return func(fn func(bson.Raw) error) error {
		for !cur.Exhausted() {
			b, err := cur.NextBatch(ctx, 0, 16<<20)
			if err != nil {
				return err
			}
			for _, d := range b {
				if err := fn(d); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

// pipelineRun is one run of the in-memory stages of a pipeline.
type pipelineRun struct {
	ctx          context.Context
	now          time.Time
	allowDiskUse bool
	sortLimit    int64
	memLimit     int64
}

func (e *Engine) newPipelineRun(ctx context.Context, allowDiskUse bool) *pipelineRun {
	return &pipelineRun{ctx: ctx, now: e.clock.Now(), allowDiskUse: allowDiskUse, sortLimit: e.sortLimit, memLimit: e.memLimit}
}

// blocking is the limit of what a blocking stage holds.
func (r *pipelineRun) blocking(exceeded func(int64) error) memoryLimit {
	if r.allowDiskUse {
		return memoryLimit{bytes: r.memLimit, exceeded: queryExceeded}
	}
	return memoryLimit{bytes: r.sortLimit, exceeded: exceeded}
}

// limitBefore is the limit of the documents made for the stages that
// follow: those a $sort will hold count against the sort's limit as they
// are made, the others against the limit of the request.
func (r *pipelineRun) limitBefore(stages []bson.Raw) memoryLimit {
	if len(stages) > 0 {
		if name, _, _ := stageOf(stages[0]); name == "$sort" {
			return r.blocking(sortExceeded)
		}
	}
	return memoryLimit{bytes: r.memLimit, exceeded: queryExceeded}
}

// read drains a cursor, counting what it holds.
func (r *pipelineRun) read(cur *Cursor, limit memoryLimit) ([]bson.Raw, error) {
	h := held{limit: limit}
	var all []bson.Raw
	for !cur.Exhausted() {
		b, err := cur.NextBatch(r.ctx, 0, 16<<20)
		if err == nil {
			err = h.add(sizeOf(b))
		}
		if err != nil {
			return nil, err
		}
		all = append(all, b...)
	}
	return all, nil
}

// run passes docs through stages, and checks that none of the documents
// it returns is too large to send.
func (r *pipelineRun) run(docs []bson.Raw, stages []bson.Raw) ([]bson.Raw, error) {
	for j, st := range stages {
		if err := r.ctx.Err(); err != nil {
			return nil, err
		}
		name, arg, err := stageOf(st)
		if err != nil {
			return nil, err
		}
		if docs, err = r.stage(name, arg, docs, r.limitBefore(stages[j+1:])); err != nil {
			return nil, err
		}
	}
	for _, d := range docs {
		if len(d) > maxDocBytes {
			return nil, docTooLarge(len(d), firstKey(d))
		}
	}
	return docs, nil
}

// AggregateOptions are the options of an aggregate command that shape how
// its pipeline runs.
type AggregateOptions struct {
	// AllowDiskUse lifts the memory limit of sorts, as for FindSpec.
	AllowDiskUse bool
	// Hint names the index (by name or key pattern) that reads the
	// collection for the leading $match and $sort stages.
	Hint bson.RawValue
}

// ApplyStages runs pipeline stages over documents the caller produced, such
// as the server's answer to $collStats or $currentOp.
func (e *Engine) ApplyStages(ctx context.Context, docs []bson.Raw, stages []bson.Raw) ([]bson.Raw, error) {
	return e.newPipelineRun(ctx, false).run(docs, stages)
}

func stageOf(stage bson.Raw) (string, bson.RawValue, error) {
	elems, err := stage.Elements()
	if err != nil || len(elems) != 1 {
		return "", bson.RawValue{}, mongoerr.New(mongoerr.Code(40323), "A pipeline stage specification object must contain exactly one field.")
	}
	return elems[0].Key(), elems[0].Value(), nil
}

// stage runs one stage; limit bounds the documents it makes.
func (r *pipelineRun) stage(name string, arg bson.RawValue, docs []bson.Raw, limit memoryLimit) ([]bson.Raw, error) {
	ctx, now := r.ctx, r.now
	switch name {
	case "$match":
		f, err := query.CompileWith(arg.Document(), query.Options{Now: now})
		if err != nil {
			return nil, err
		}
		out := docs[:0]
		for _, d := range docs {
			if f.Match(d) {
				out = append(out, d)
			}
		}
		return out, nil
	case "$sort":
		s, err := query.CompileSort(arg.Document())
		if err != nil {
			return nil, err
		}
		h := held{limit: r.blocking(sortExceeded)}
		if err := h.add(sizeOf(docs)); err != nil {
			return nil, err
		}
		sortRaw(docs, s)
		return docs, nil
	case "$skip", "$limit":
		n, ok := arg.AsInt64OK()
		if !ok || n < 0 || (name == "$limit" && n == 0) {
			return nil, mongoerr.New(mongoerr.Code(15956), "invalid argument to %s stage: %s", name, arg.String())
		}
		if name == "$skip" {
			return docs[min(int(n), len(docs)):], nil
		}
		return docs[:min(int(n), len(docs))], nil
	case "$project", "$addFields", "$set", "$unset":
		p, err := compileShapeStage(name, arg, now)
		if err != nil {
			return nil, err
		}
		h := held{limit: limit, n: int64(sizeOf(docs))}
		for j, d := range docs {
			if docs[j], err = p.ApplyContext(ctx, d, -1); err != nil {
				return nil, err
			}
			if err := h.add(len(docs[j]) - len(d)); err != nil {
				return nil, err
			}
		}
		return docs, nil
	case "$replaceWith", "$replaceRoot":
		return replaceRoot(ctx, name, arg, docs, now, limit)
	case "$count":
		field, ok := arg.StringValueOK()
		if !ok || field == "" || strings.HasPrefix(field, "$") || strings.Contains(field, ".") {
			return nil, mongoerr.New(mongoerr.Code(40156), "the count field must be a non-empty string not starting with '$' and without '.'")
		}
		if len(docs) == 0 {
			return nil, nil
		}
		out, _ := bson.Marshal(bson.D{{Key: field, Value: int32(len(docs))}})
		return []bson.Raw{out}, nil
	case "$group":
		return group(ctx, arg, sliceDocs(docs), now, r.blocking(groupExceeded))
	}
	return nil, mongoerr.New(mongoerr.Code(40324), "Unrecognized pipeline stage name: '%s'", name)
}

func sortRaw(docs []bson.Raw, s *query.Sort) {
	sortStableRaw(docs, s.Compare)
}

// compileShapeStage compiles the stages that reshape each document.
func compileShapeStage(name string, arg bson.RawValue, now time.Time) (*project.Projection, error) {
	opts := project.Options{Now: now}
	if name == "$unset" {
		return project.CompileUnset(bsoncore.Value{Type: bsoncore.Type(arg.Type), Data: arg.Value})
	}
	spec, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.Code(15969), "%s specification must be an object", name)
	}
	if name == "$project" {
		return project.CompileProject(spec, opts)
	}
	return project.CompileAddFields(spec, opts)
}

// replaceRoot makes each document the value of an expression.
func replaceRoot(ctx context.Context, name string, arg bson.RawValue, docs []bson.Raw, now time.Time, limit memoryLimit) ([]bson.Raw, error) {
	v := bsoncore.Value{Type: bsoncore.Type(arg.Type), Data: arg.Value}
	if name == "$replaceRoot" {
		spec, ok := arg.DocumentOK()
		nr, err := spec.LookupErr("newRoot")
		if !ok || err != nil {
			return nil, mongoerr.New(mongoerr.Code(40231), "no newRoot specified for the $replaceRoot stage")
		}
		v = bsoncore.Value{Type: bsoncore.Type(nr.Type), Data: nr.Value}
	}
	ex, err := expr.CompileExprWith(v, expr.ExprOptions{Now: now})
	if err != nil {
		return nil, err
	}
	h := held{limit: limit, n: int64(sizeOf(docs))}
	for j, d := range docs {
		out, err := ex.EvalContext(ctx, d)
		if err != nil {
			return nil, err
		}
		doc, ok := out.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.Code(40228), "'newRoot' expression must evaluate to an object, but resulting value was of type %s", bson.Type(out.Type))
		}
		if err := h.add(len(doc) - len(d)); err != nil {
			return nil, err
		}
		docs[j] = append(bson.Raw(nil), doc...)
	}
	return docs, nil
}

// evalOrNull evaluates ex, giving null for a missing result.
func evalOrNull(ctx context.Context, ex *expr.Expr, doc bson.Raw) (bsoncore.Value, error) {
	v, err := ex.EvalContext(ctx, doc)
	if err == nil && v.Type == 0 {
		v = nullValue
	}
	return v, err
}

type accumulator struct {
	field string
	op    string
	arg   *expr.Expr
}

type groupState struct {
	id   bsoncore.Value
	accs []accState
}

type accState struct {
	sum    numberSum
	count  int64
	val    bsoncore.Value
	set    bool
	values []bsoncore.Value
	keys   map[string]bool
	bytes  int // held for values, by $push and $addToSet
}

// size is the bytes of the accumulator's result, at least.
func (s *accState) size() int {
	if s.values == nil {
		return max(len(s.val.Data), 16)
	}
	n := 5
	for i, v := range s.values {
		n += 2 + len(strconv.Itoa(i)) + len(v.Data)
	}
	return n
}

// group is $group; limit bounds the state of its groups.
func group(ctx context.Context, arg bson.RawValue, docs docSource, now time.Time, limit memoryLimit) ([]bson.Raw, error) {
	spec, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.Code(15947), "a group's fields must be specified in an object")
	}
	elems, _ := spec.Elements()
	var idExpr *expr.Expr
	exprOpts := expr.ExprOptions{Now: now}
	var accs []accumulator
	for _, el := range elems {
		if el.Key() == "_id" {
			v := el.Value()
			ex, err := expr.CompileExprWith(bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value}, exprOpts)
			if err != nil {
				return nil, err
			}
			idExpr = ex
			continue
		}
		d, ok := el.Value().DocumentOK()
		ops, _ := d.Elements()
		if !ok || len(ops) != 1 {
			return nil, mongoerr.New(mongoerr.Code(40234), "The field '%s' must be an accumulator object", el.Key())
		}
		op := ops[0].Key()
		switch op {
		case "$sum", "$avg", "$min", "$max", "$first", "$last", "$push", "$addToSet", "$count":
		default:
			return nil, mongoerr.New(mongoerr.Code(15952), "unknown group operator '%s'", op)
		}
		av := ops[0].Value()
		ex, err := expr.CompileExprWith(bsoncore.Value{Type: bsoncore.Type(av.Type), Data: av.Value}, exprOpts)
		if err != nil {
			return nil, err
		}
		accs = append(accs, accumulator{field: el.Key(), op: op, arg: ex})
	}
	if idExpr == nil {
		return nil, mongoerr.New(mongoerr.Code(15955), "a group specification must include an _id")
	}
	groups := map[string]*groupState{}
	var order []string
	h := held{limit: limit}
	j := 0
	err := docs(func(doc bson.Raw) error {
		if j++; j%256 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		id, err := evalOrNull(ctx, idExpr, doc)
		if err != nil {
			return err
		}
		k := string(keycodec.Append(nil, id))
		g := groups[k]
		if g == nil {
			g = &groupState{id: own(id, doc), accs: make([]accState, len(accs))}
			groups[k] = g
			order = append(order, k)
			if err := h.add(len(k) + len(id.Data)); err != nil {
				return err
			}
		}
		for i, a := range accs {
			grew, err := accumulate(ctx, &g.accs[i], a, doc)
			if err == nil {
				err = h.add(grew)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]bson.Raw, 0, len(order))
	for _, k := range order {
		g := groups[k]
		// Refuse a document too large to return before building it.
		size := 5 + 6 + len(g.id.Data)
		for i, a := range accs {
			size += 2 + len(a.field) + g.accs[i].size()
		}
		if size > maxDocBytes {
			return nil, docTooLarge(size, "_id")
		}
		b := bsoncore.NewDocumentBuilder().AppendValue("_id", g.id)
		for i, a := range accs {
			b.AppendValue(a.field, finish(&g.accs[i], a))
		}
		out = append(out, bson.Raw(b.Build()))
	}
	return out, nil
}

// accumulate adds doc to an accumulator, and returns how many more bytes
// the accumulator holds.
func accumulate(ctx context.Context, s *accState, a accumulator, doc bson.Raw) (int, error) {
	if a.op == "$count" {
		s.sum.add(bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 1)})
		return 0, nil
	}
	v, err := a.arg.EvalContext(ctx, doc)
	if err != nil {
		return 0, err
	}
	old := len(s.val.Data)
	v = own(v, doc)
	ok := v.Type != 0
	switch a.op {
	case "$sum", "$avg":
		if ok && isNumber(v) {
			s.sum.add(v)
			s.count++
		}
	case "$min", "$max":
		if !ok || v.Type == bsoncore.TypeNull || v.Type == bsoncore.TypeUndefined {
			return 0, nil
		}
		c := 0
		if s.set {
			c = keycodec.Compare(v, s.val)
		}
		if !s.set || (a.op == "$min" && c < 0) || (a.op == "$max" && c > 0) {
			s.val, s.set = v, true
		}
	case "$first":
		if !s.set {
			s.val, s.set = v, true
			if !ok {
				s.val = nullValue
			}
		}
	case "$last":
		s.val, s.set = v, true
		if !ok {
			s.val = nullValue
		}
	case "$push":
		if ok {
			s.values = append(s.values, v)
			return s.gathered(a.op, len(v.Data))
		}
	case "$addToSet":
		if ok {
			k := string(keycodec.Append(nil, v))
			if s.keys == nil {
				s.keys = map[string]bool{}
			}
			if !s.keys[k] {
				s.keys[k] = true
				s.values = append(s.values, v)
				return s.gathered(a.op, len(k)+len(v.Data))
			}
		}
	}
	return len(s.val.Data) - old, nil
}

// gathered counts n more bytes of values in a $push or $addToSet, which
// MongoDB bounds on their own.
func (s *accState) gathered(op string, n int) (int, error) {
	if s.bytes += n; s.bytes > maxAccumulatorBytes {
		return 0, accumulatorExceeded(op)
	}
	return n, nil
}

// own returns v, which may point into doc, as a value a group can keep: a
// copy, unless v is most of doc, which the group then keeps whole rather
// than holding its bytes twice.
func own(v bsoncore.Value, doc bson.Raw) bsoncore.Value {
	if 2*len(v.Data) > len(doc) {
		return v
	}
	return bsoncore.Value{Type: v.Type, Data: append([]byte(nil), v.Data...)}
}

func finish(s *accState, a accumulator) bsoncore.Value {
	switch a.op {
	case "$sum", "$count":
		return s.sum.value()
	case "$avg":
		if s.count == 0 {
			return nullValue
		}
		return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, s.sum.float()/float64(s.count))}
	case "$min", "$max", "$first", "$last":
		if !s.set {
			return nullValue
		}
		return s.val
	}
	arr := bsoncore.NewArrayBuilder()
	for _, v := range s.values {
		arr.AppendValue(v)
	}
	return bsoncore.Value{Type: bsoncore.TypeArray, Data: arr.Build()}
}

func isNumber(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble:
		return true
	}
	return false
}

// numberSum adds numbers with MongoDB's result type: int32 while it fits,
// then int64, double once any double is added.
type numberSum struct {
	i       int64
	f       float64
	isFloat bool
	isLong  bool
}

func (n *numberSum) add(v bsoncore.Value) {
	switch v.Type {
	case bsoncore.TypeInt32:
		n.i += int64(v.Int32())
	case bsoncore.TypeInt64:
		n.i += v.Int64()
		n.isLong = true
	case bsoncore.TypeDouble:
		n.f += v.Double()
		n.isFloat = true
	}
}

func (n *numberSum) float() float64 { return n.f + float64(n.i) }

func (n *numberSum) value() bsoncore.Value {
	switch {
	case n.isFloat:
		return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, n.float())}
	case n.isLong || n.i != int64(int32(n.i)):
		return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, n.i)}
	}
	return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(n.i))}
}
