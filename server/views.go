package server

// Views: collMod of a view, reads through one, and the answers of every
// other command that names one (package catalog creates and lists them). As MongoDB does, a read of a
// view is an aggregation over the collection the view reads, with the
// pipelines of the views on the way first: find becomes $match, $sort,
// $skip, $limit and $project stages, count a $count, and distinct runs
// over the pipeline's output.

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/cursor"
	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/mongoerr"
)

func errIsView(db, coll string) error {
	return mongoerr.New(mongoerr.CommandNotSupportedOnView, "Namespace %s.%s is a view, not a collection", db, coll)
}

// viewNamed is the view the command's first value names, if any.
func (s *Server) viewNamed(req *Request) (string, bool) {
	coll, ok := command.FirstValue(req.Body).StringValueOK()
	if !ok || engine.ValidateNamespace(req.DB, coll) != nil {
		return "", false
	}
	_, isView := s.eng.View(context.TODO(), req.DB, coll)
	return coll, isView
}

// viewHandler answers a command that names the view coll; next is the
// command's own handler.
type viewHandler func(ctx context.Context, req *Request, coll string, next handlerFunc) (bson.Raw, error)

// guardViews makes the commands that need a collection refuse a view with
// CommandNotSupportedOnView, and drop and collMod act on views. The write
// commands are refused by the engine, statement by statement.
func (s *Server) guardViews() {
	wrap := func(name string, onView viewHandler) {
		cmd := s.commands[name]
		if cmd == nil {
			return
		}
		next := cmd.handle
		cmd.handle = func(ctx context.Context, req *Request) (bson.Raw, error) {
			if coll, isView := s.viewNamed(req); isView {
				return onView(ctx, req, coll, next)
			}
			return next(ctx, req)
		}
	}
	refuse := func(_ context.Context, req *Request, coll string, _ handlerFunc) (bson.Raw, error) {
		return nil, errIsView(req.DB, coll)
	}
	for _, name := range []string{"createIndexes", "listIndexes", "dropIndexes", "validate", "collStats"} {
		wrap(name, refuse)
	}
	wrap("drop", func(ctx context.Context, req *Request, coll string, _ handlerFunc) (bson.Raw, error) {
		if _, err := s.eng.DropView(ctx, req.DB, coll); err != nil {
			return nil, err
		}
		return command.OK(bson.E{Key: "ns", Value: req.DB + "." + coll})
	})
	if cmd := s.commands["collMod"]; cmd != nil {
		next := cmd.handle
		cmd.handle = func(ctx context.Context, req *Request) (bson.Raw, error) {
			return s.collModCollection(ctx, req, next)
		}
	}
	wrap("collMod", s.collModView)
	// A read of a view runs under the view's collation: another is
	// refused as MongoDB refuses overriding a view's.
	for _, name := range []string{"find", "aggregate", "count", "distinct"} {
		wrap(name, func(ctx context.Context, req *Request, coll string, next handlerFunc) (bson.Raw, error) {
			ctx, err := s.viewReadCollation(ctx, req, coll)
			if err != nil {
				return nil, err
			}
			return next(ctx, req)
		})
	}
	// explain shows plans over collections only: refused rather than
	// answered with the plan of an empty collection.
	if cmd := s.commands["explain"]; cmd != nil {
		next := cmd.handle
		cmd.handle = func(ctx context.Context, req *Request) (bson.Raw, error) {
			if inner, ok := command.FirstValue(req.Body).DocumentOK(); ok {
				if el, err := inner.IndexErr(0); err == nil {
					if coll, ok := el.Value().StringValueOK(); ok {
						if _, isView := s.eng.View(ctx, req.DB, coll); isView {
							return nil, mongoerr.New(mongoerr.NotImplemented, "explain of a read through a view is not supported")
						}
					}
				}
			}
			return next(ctx, req)
		}
	}
}

// collModView changes a view's viewOn or pipeline; a view has no other
// options.
func (s *Server) collModView(ctx context.Context, req *Request, coll string, _ handlerFunc) (bson.Raw, error) {
	var viewOn string
	var pipeline []bson.Raw
	var err error
	for key, v := range command.Args(req.Body) {
		switch k := string(key); k {
		case "viewOn":
			if viewOn, err = command.String("collMod", k, v); err == nil && viewOn == "" {
				err = mongoerr.New(mongoerr.BadValue, "'viewOn' cannot be empty")
			}
		case "pipeline":
			if pipeline, err = statements(req, "collMod", k, v); err == nil && pipeline == nil {
				pipeline = []bson.Raw{}
			}
		default:
			err = mongoerr.New(mongoerr.InvalidOptions, "option not supported on a view: %s", k)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := s.eng.ModifyView(ctx, req.DB, coll, viewOn, pipeline); err != nil {
		return nil, err
	}
	return command.OK()
}

// collModCollection refuses the view options of collMod on what is not a
// view (views get collModView first).
func (s *Server) collModCollection(ctx context.Context, req *Request, next handlerFunc) (bson.Raw, error) {
	for key := range command.Args(req.Body) {
		if k := string(key); k == "viewOn" || k == "pipeline" {
			coll, _ := command.FirstValue(req.Body).StringValueOK()
			if !s.eng.CollectionExists(ctx, req.DB, coll) {
				return nil, mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist")
			}
			return nil, mongoerr.New(mongoerr.InvalidOptions, "'%s' option only supported on a view", k)
		}
	}
	return next(ctx, req)
}

// resolveRead is the collection a read of db.coll reads and the pipeline
// it runs there: the views' pipelines, then the read's own stages.
func (s *Server) resolveRead(db, coll string, stages []bson.Raw) (string, []bson.Raw, error) {
	source, vp, isView, err := s.eng.ResolveView(context.TODO(), db, coll)
	if err != nil || !isView {
		return coll, stages, err
	}
	return source, append(vp, stages...), nil
}

func stage(name string, arg any) bson.Raw {
	raw, _ := bson.Marshal(bson.D{{Key: name, Value: arg}})
	return raw
}

// findOnView answers find on a view with the aggregation MongoDB turns it
// into, refusing the options an aggregation has no counterpart for.
func (s *Server) findOnView(ctx context.Context, req *Request, coll string, spec engine.FindSpec, lv *engine.Let, batchSize int) (bson.Raw, error) {
	truthy := func(field string) bool {
		v, err := req.Body.LookupErr(field)
		if err != nil {
			return false
		}
		if d, ok := v.DocumentOK(); ok {
			return len(d) > 5
		}
		b, ok := v.BooleanOK()
		return ok && b
	}
	for _, field := range []string{"min", "max", "returnKey", "showRecordId", "noCursorTimeout", "allowPartialResults", "readOnce"} {
		if truthy(field) {
			return nil, mongoerr.New(mongoerr.InvalidPipelineOperator, "Option %s not supported in aggregation.", field)
		}
	}
	if truthy("tailable") {
		return nil, mongoerr.New(mongoerr.InvalidPipelineOperator, "Tailable cursors are not supported in aggregation.")
	}
	// A $natural sort asks for the order the view reads its collection in
	// (allowed on views since MongoDB 4.4): a hint of that collection.
	if elems, _ := spec.Sort.Elements(); len(elems) == 1 && elems[0].Key() == "$natural" {
		if spec.Hint.Type == 0 {
			spec.Hint = bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: spec.Sort}
		}
		spec.Sort = nil
	}
	single := truthy("singleBatch")
	if single && spec.Limit != 1 {
		return nil, mongoerr.New(mongoerr.InvalidPipelineOperator, "Option singleBatch not supported in aggregation.")
	}
	var stages []bson.Raw
	if len(spec.Filter) > 5 {
		stages = append(stages, stage("$match", spec.Filter))
	}
	if len(spec.Sort) > 5 {
		stages = append(stages, stage("$sort", spec.Sort))
	}
	if spec.Skip > 0 {
		stages = append(stages, stage("$skip", spec.Skip))
	}
	if spec.Limit > 0 {
		stages = append(stages, stage("$limit", spec.Limit))
	}
	if len(spec.Projection) > 5 {
		stages = append(stages, stage("$project", spec.Projection))
	}
	stages, err := lv.Pipeline(stages)
	if err != nil {
		return nil, err
	}
	source, pipeline, err := s.resolveRead(req.DB, coll, stages)
	if err != nil {
		return nil, err
	}
	res, err := s.eng.AggregateStream(ctx, req.DB, source, pipeline, engine.AggregateOptions{AllowDiskUse: spec.AllowDiskUse, Hint: spec.Hint})
	if err != nil {
		return nil, err
	}
	src := cursor.NewSlice(res.Docs, res.Source)
	if batchSize == 0 {
		return s.cursors.ReplyEmpty(&req.Request, req, src, req.DB+"."+coll, false)
	}
	return s.cursors.Reply(ctx, &req.Request, req, src, req.DB+"."+coll, batchSize, cursor.Options{Single: single})
}

// countOnView counts a view's documents with $match, $skip, $limit and
// $count stages.
func (s *Server) countOnView(ctx context.Context, req *Request, coll string, filter bson.Raw, skip, limit int64, hint bson.RawValue) (bson.Raw, error) {
	var stages []bson.Raw
	if len(filter) > 5 {
		stages = append(stages, stage("$match", filter))
	}
	if skip > 0 {
		stages = append(stages, stage("$skip", skip))
	}
	if limit > 0 {
		stages = append(stages, stage("$limit", limit))
	}
	stages = append(stages, stage("$count", "count"))
	source, pipeline, err := s.resolveRead(req.DB, coll, stages)
	if err != nil {
		return nil, err
	}
	docs, err := s.eng.Aggregate(ctx, req.DB, source, pipeline, engine.AggregateOptions{Hint: hint})
	if err != nil {
		return nil, err
	}
	n := int32(0)
	if len(docs) > 0 {
		n = docs[0].Lookup("count").Int32()
	}
	return command.OK(bson.E{Key: "n", Value: n})
}

// distinctOnView runs distinct over the output of the view's pipeline.
func (s *Server) distinctOnView(ctx context.Context, req *Request, coll, key string, filter bson.Raw) (bson.Raw, error) {
	var stages []bson.Raw
	if len(filter) > 5 {
		stages = append(stages, stage("$match", filter))
	}
	source, pipeline, err := s.resolveRead(req.DB, coll, stages)
	if err != nil {
		return nil, err
	}
	docs, err := s.eng.Aggregate(ctx, req.DB, source, pipeline, engine.AggregateOptions{})
	if err != nil {
		return nil, err
	}
	vals, err := engine.DistinctOfUnder(ctx, docs, key)
	if err != nil {
		return nil, err
	}
	arr := make(bson.A, len(vals))
	for i, v := range vals {
		arr[i] = bson.RawValue{Type: bson.Type(v.Type), Value: v.Data}
	}
	return command.OK(bson.E{Key: "values", Value: arr})
}

// isCollStats reports whether a pipeline starts with $collStats, which
// reads a collection's storage and so fails on a view.
func isCollStats(pipeline []bson.Raw) bool {
	if len(pipeline) == 0 {
		return false
	}
	el, err := pipeline[0].IndexErr(0)
	return err == nil && el.Key() == "$collStats"
}
