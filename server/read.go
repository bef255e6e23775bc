package server

// The read commands: find, count, distinct and aggregate.

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/concern"
	"github.com/lethedb/lethe/cursor"
	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/queryargs"
)

func (s *Server) find(ctx context.Context, req *Request) (bson.Raw, error) {
	coll, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	a, err := queryargs.ParseFind(req.Body, s.params.AllowDiskUseByDefault(), s.clock)
	if err != nil {
		return nil, err
	}
	spec, batchSize, lv, copts := a.Spec, a.BatchSize, a.Let, a.Copts
	tailable, awaitData := a.Tailable, a.AwaitData
	if _, isView := s.eng.View(ctx, req.DB, coll); isView {
		return s.findOnView(ctx, req, coll, spec, lv, batchSize)
	}
	if err := queryargs.CheckTailable(s.eng, req.DB, coll, spec, tailable, awaitData, copts.Single); err != nil {
		return nil, err
	}
	if err := queryargs.CheckMinMax(spec.Min, spec.Max); err != nil {
		return nil, err
	}
	if spec.Filter, err = lv.Filter(spec.Filter); err != nil {
		return nil, err
	}
	if spec.Projection, err = lv.Projection(spec.Projection); err != nil {
		return nil, err
	}
	if id, ok := pointID(spec); ok && batchSize != 0 {
		// Under another collation than its _id index's, an _id equality
		// may match several documents: it takes the general path.
		doc, point, err := s.eng.FindPointByID(ctx, req.DB, coll, id)
		if err != nil {
			return nil, err
		}
		if point {
			var docs []bson.Raw
			if doc != nil {
				docs = []bson.Raw{doc}
			}
			return cursor.AppendReply(&req.Request, "firstBatch", docs, 0, req.DB+"."+coll)
		}
	}
	if batchSize == 0 {
		batchSize = -1 // an empty first batch
	}
	// The cursor outlives this request's buffer.
	spec.Filter, spec.Sort, spec.Projection = cloneRaw(spec.Filter), cloneRaw(spec.Sort), cloneRaw(spec.Projection)
	spec.Min, spec.Max = cloneRaw(spec.Min), cloneRaw(spec.Max)
	spec.Hint = bson.RawValue{Type: spec.Hint.Type, Value: append([]byte(nil), spec.Hint.Value...)}
	cur, err := s.eng.Find(ctx, req.DB, coll, spec)
	if err != nil {
		return nil, err
	}
	src := snapshotCursor(req, cur)
	if batchSize < 0 {
		return s.cursors.ReplyEmpty(&req.Request, req, src, req.DB+"."+coll, copts.NoTimeout)
	}
	return s.cursors.Reply(ctx, &req.Request, req, src, req.DB+"."+coll, batchSize, copts)
}

// pointID recognizes the commonest query, find {_id: <value>} with no
// other shaping, which needs no compiled filter, plan or cursor: at most one
// document can match. Values that are operators, arrays or regexes match
// differently and take the general path.
func pointID(spec engine.FindSpec) (bsoncore.Value, bool) {
	if spec.Sort != nil || spec.Projection != nil || spec.Skip != 0 || spec.Hint.Type != 0 ||
		spec.ReturnKey || spec.Min != nil || spec.Max != nil {
		return bsoncore.Value{}, false
	}
	var v bsoncore.Value
	n := 0
	for key, raw := range command.Fields(spec.Filter) {
		if n++; n > 1 || string(key) != "_id" {
			return bsoncore.Value{}, false
		}
		v = bsoncore.Value{Type: bsoncore.Type(raw.Type), Data: raw.Value}
	}
	if n != 1 {
		return bsoncore.Value{}, false
	}
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray, bsoncore.TypeRegex, bsoncore.TypeNull,
		bsoncore.TypeUndefined, bsoncore.TypeMinKey, bsoncore.TypeMaxKey:
		return bsoncore.Value{}, false
	case bsoncore.TypeDouble:
		if f := v.Double(); f != f {
			return bsoncore.Value{}, false
		}
	}
	return v, true
}

func cloneRaw(r bson.Raw) bson.Raw {
	if r == nil {
		return nil
	}
	return append(bson.Raw(nil), r...)
}

func (s *Server) count(ctx context.Context, req *Request) (bson.Raw, error) {
	coll, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	a, err := queryargs.ParseCount(req.Body)
	if err != nil {
		return nil, err
	}
	filter, skip, limit, hint := a.Filter, a.Skip, a.Limit, a.Hint
	if _, isView := s.eng.View(ctx, req.DB, coll); isView {
		return s.countOnView(ctx, req, coll, filter, skip, limit, hint)
	}
	n, err := s.eng.Count(ctx, req.DB, coll, filter, skip, limit, hint)
	if err != nil {
		return nil, err
	}
	idx, dst := req.BeginReply()
	dst = bsoncore.AppendInt32Element(dst, "n", int32(n))
	return req.EndReply(idx, dst)
}

func (s *Server) distinct(ctx context.Context, req *Request) (bson.Raw, error) {
	coll, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	key, filter, err := queryargs.ParseDistinct(req.Body)
	if err != nil {
		return nil, err
	}
	if _, isView := s.eng.View(ctx, req.DB, coll); isView {
		return s.distinctOnView(ctx, req, coll, key, filter)
	}
	vals, err := s.eng.Distinct(ctx, req.DB, coll, key, filter)
	if err != nil {
		return nil, err
	}
	arr := bsoncore.NewArrayBuilder()
	for _, v := range vals {
		arr.AppendValue(v)
	}
	idx, dst := req.BeginReply()
	dst = bsoncore.AppendArrayElement(dst, "values", arr.Build())
	return req.EndReply(idx, dst)
}

func (s *Server) aggregate(ctx context.Context, req *Request) (bson.Raw, error) {
	v := command.FirstValue(req.Body)
	_, onCollection := v.StringValueOK()
	coll := ""
	if onCollection {
		var err error
		if coll, err = collectionName(req); err != nil {
			return nil, err
		}
	}
	var err error
	var pipeline []bson.Raw
	havePipeline, haveCursor, bypass, explain := false, false, false, false
	allowDiskUse := s.params.AllowDiskUseByDefault()
	batchSize := 101
	var hint bson.RawValue
	var lv *engine.Let
	for key, v := range command.Args(req.Body) {
		switch string(key) {
		case "pipeline":
			pipeline, err = statements(req, "aggregate", "pipeline", v)
			havePipeline = true
		case "cursor":
			if err = queryargs.CheckCursorBatchSize(v); err == nil {
				err = cursor.Option("aggregate", v, &batchSize)
			}
			haveCursor = err == nil
		case "explain":
			explain, err = command.StrictBool("explain", v)
		case "collation":
			err = command.CheckCollation("aggregate", v)
		case "allowDiskUse":
			allowDiskUse, err = command.StrictBool("allowDiskUse", v)
		case "hint":
			hint, err = command.Hint(v)
		case "let":
			lv, err = queryargs.Let("aggregate", v, s.clock)
		case "bypassDocumentValidation":
			bypass, err = command.StrictBool("bypassDocumentValidation", v)
		default:
			err = command.UnknownField("aggregate", key)
		}
		if err != nil {
			return nil, err
		}
	}
	if !havePipeline {
		return nil, command.MissingField("aggregate", "pipeline")
	}
	if explain {
		return s.explainAggregate(ctx, req, req.Body, "queryPlanner")
	}
	if !haveCursor {
		return nil, mongoerr.New(mongoerr.FailedToParse, "The 'cursor' option is required, except for aggregate with the explain argument")
	}
	if pipeline, err = lv.Pipeline(pipeline); err != nil {
		return nil, err
	}
	if isChangeStream(pipeline) {
		return s.changeStream(ctx, req, coll, pipeline, batchSize, engine.AggregateOptions{AllowDiskUse: allowDiskUse, Host: s.hostPort()})
	}
	if err = engine.CheckPipelineNamespace(pipeline, req.DB, !onCollection); err != nil {
		return nil, err
	}
	if err = concern.CheckWriteStage(req.Body, pipeline); err != nil {
		return nil, err
	}
	// A view's pipeline runs first, over the collection it reads.
	from := coll
	if onCollection {
		if _, isView := s.eng.View(ctx, req.DB, coll); isView && isCollStats(pipeline) {
			return nil, errIsView(req.DB, coll)
		}
		if from, pipeline, err = s.resolveRead(req.DB, coll, pipeline); err != nil {
			return nil, err
		}
	}
	opts := engine.AggregateOptions{AllowDiskUse: allowDiskUse, Hint: hint, BypassDocumentValidation: bypass, Host: s.hostPort()}
	var docs []bson.Raw
	var source engine.Incarnation
	var rest engine.Results
	if onCollection {
		var res engine.AggregateResult
		// A final sort that spilled stays on disk for the cursor.
		opts.Stream = true
		res, err = s.eng.AggregateStream(ctx, req.DB, from, pipeline, opts)
		docs, source, rest = res.Docs, res.Source, res.Rest
	} else {
		coll = "$cmd.aggregate"
		docs, err = s.aggregateDB(ctx, req, pipeline, opts)
	}
	if err != nil {
		return nil, err
	}
	var src cursor.Source = cursor.NewSlice(docs, source)
	if rest != nil {
		src = rest
	}
	src = snapshotCursor(req, src)
	if batchSize == 0 {
		return s.cursors.ReplyEmpty(&req.Request, req, src, req.DB+"."+coll, false)
	}
	return s.cursors.Reply(ctx, &req.Request, req, src, req.DB+"."+coll, batchSize, cursor.Options{})
}
