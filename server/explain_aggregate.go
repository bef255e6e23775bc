package server

import (
	"context"
	"os"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/cursor"
	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/queryargs"
)

// explainAggregate explains the aggregate command body, as explain
// {aggregate: ...} and aggregate with explain: true ask. The reply has
// MongoDB's shapes: a pipeline the planner takes whole explains like a
// find (queryPlanner, executionStats); any other lists its stages, the
// planner's part first as a $cursor stage holding the plan, each with
// nReturned and executionTimeMillisEstimate when executed.
func (s *Server) explainAggregate(ctx context.Context, req *Request, body bson.Raw, verbosity string) (bson.Raw, error) {
	coll, onCollection := command.FirstValue(body).StringValueOK()
	if onCollection {
		if err := engine.ValidateNamespace(req.DB, coll); err != nil {
			return nil, err
		}
	}
	var stages []bson.Raw
	var lv *engine.Let
	opts := engine.AggregateOptions{Host: s.hostPort()}
	havePipeline := false
	var err error
	for key, v := range command.Args(body) {
		switch string(key) {
		case "pipeline":
			stages, err = statements(req, "aggregate", "pipeline", v)
			havePipeline = true
		case "hint":
			opts.Hint, err = command.Hint(v)
		case "allowDiskUse":
			opts.AllowDiskUse, err = command.StrictBool("allowDiskUse", v)
		case "let":
			lv, err = queryargs.Let("aggregate", v, s.clock)
		case "collation":
			err = command.CheckCollation("aggregate", v)
		// The rest only checked, as aggregate itself checks them: explain
		// refuses what the command would refuse.
		case "cursor":
			if err = queryargs.CheckCursorBatchSize(v); err == nil {
				var batchSize int
				err = cursor.Option("aggregate", v, &batchSize)
			}
		case "bypassDocumentValidation":
			_, err = command.StrictBool("bypassDocumentValidation", v)
		case "explain":
			_, err = command.StrictBool("explain", v)
		default:
			err = command.UnknownField("aggregate", key)
		}
		if err != nil {
			return nil, err
		}
	}
	if _, err := maxTime("aggregate", body); err != nil {
		return nil, err
	}
	if !havePipeline {
		return nil, command.MissingField("aggregate", "pipeline")
	}
	if stages, err = lv.Pipeline(stages); err != nil {
		return nil, err
	}
	if err := engine.CheckPipelineNamespace(stages, req.DB, !onCollection); err != nil {
		return nil, err
	}
	var docs []bson.Raw
	ns := req.DB + "." + coll
	if !onCollection {
		coll, ns = "", req.DB+".$cmd.aggregate"
		if docs, err = s.databaseDocs(ctx, req, stages); err != nil {
			return nil, err
		}
	}
	ex, err := s.eng.ExplainAggregate(ctx, req.DB, coll, stages, docs, opts, verbosity != "queryPlanner")
	if err != nil {
		return nil, err
	}
	elems := []bson.E{{Key: "explainVersion", Value: "1"}}
	if ex.Cursor != nil && len(ex.Stages) == 0 {
		qp, es := cursorExplain(ns, ex.Cursor, ex.Query, verbosity)
		elems = append(elems, qp)
		if es.Key != "" {
			elems = append(elems, es)
		}
	} else {
		list := bson.A{}
		if ex.Cursor != nil {
			qp, es := cursorExplain(ns, ex.Cursor, ex.Query, verbosity)
			cursor := bson.D{qp}
			if es.Key != "" {
				cursor = append(cursor, es)
			}
			d := bson.D{{Key: "$cursor", Value: cursor}}
			if ex.Executed {
				d = append(d, bson.E{Key: "nReturned", Value: ex.Cursor.NReturned}, bson.E{Key: "executionTimeMillisEstimate", Value: ex.Cursor.Millis})
			}
			list = append(list, d)
		}
		for _, st := range ex.Stages {
			d := bson.D{}
			if el, err := st.Spec.IndexErr(0); err == nil {
				d = append(d, bson.E{Key: el.Key(), Value: el.Value()})
			}
			if ex.Executed {
				d = append(d, bson.E{Key: "nReturned", Value: st.NReturned}, bson.E{Key: "executionTimeMillisEstimate", Value: st.Millis})
			}
			list = append(list, d)
		}
		elems = append(elems, bson.E{Key: "stages", Value: list})
	}
	host, _ := os.Hostname()
	elems = append(elems,
		bson.E{Key: "command", Value: body},
		bson.E{Key: "serverInfo", Value: bson.D{{Key: "host", Value: host}, {Key: "version", Value: mongoVersion}}},
	)
	return command.OK(elems...)
}

// cursorExplain renders the planner's query of a pipeline: its
// queryPlanner and, when it ran, its executionStats.
func cursorExplain(ns string, ex *engine.Explanation, q engine.FindSpec, verbosity string) (qp, es bson.E) {
	filter := q.Filter
	if filter == nil {
		filter, _ = bson.Marshal(bson.D{})
	}
	plan := planDoc(*ex, filter, q.Sort)
	qp = bson.E{Key: "queryPlanner", Value: bson.D{
		{Key: "namespace", Value: ns},
		{Key: "indexFilterSet", Value: false},
		{Key: "parsedQuery", Value: filter},
		{Key: "winningPlan", Value: plan},
		{Key: "rejectedPlans", Value: bson.A{}},
	}}
	if !ex.Executed {
		return qp, bson.E{}
	}
	stats := bson.D{
		{Key: "executionSuccess", Value: true},
		{Key: "nReturned", Value: ex.NReturned},
		{Key: "executionTimeMillis", Value: ex.Millis},
		{Key: "totalKeysExamined", Value: ex.KeysExam},
		{Key: "totalDocsExamined", Value: ex.DocsExam},
		{Key: "executionStages", Value: plan},
	}
	if verbosity == "allPlansExecution" {
		stats = append(stats, bson.E{Key: "allPlansExecution", Value: bson.A{}})
	}
	return qp, bson.E{Key: "executionStats", Value: stats}
}

// databaseDocs makes the documents of a database pipeline's first stage
// when the server makes them ($currentOp, $listLocalSessions); nil for
// the others, which make their own.
func (s *Server) databaseDocs(ctx context.Context, req *Request, stages []bson.Raw) ([]bson.Raw, error) {
	if len(stages) == 0 {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "{aggregate: 1} is not valid for an empty pipeline")
	}
	name, arg, err := engine.StageOf(stages[0])
	if err != nil {
		return nil, err
	}
	switch name {
	case "$currentOp":
		spec, err := engine.ParseCurrentOp(arg)
		if err != nil {
			return nil, err
		}
		return s.currentOpDocs(req, spec), nil
	case "$listLocalSessions":
		spec, err := engine.ParseListLocalSessions(arg)
		if err != nil {
			return nil, err
		}
		return s.listLocalSessions(ctx, req, spec)
	case "$documents":
		return nil, nil
	}
	return nil, mongoerr.New(mongoerr.InvalidNamespace, "{aggregate: 1} is not valid for '%s'; a collection is required.", name)
}
