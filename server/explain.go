package server

import (
	"context"
	"os"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/queryargs"
)

func (s *Server) explainCommands() []commandDef {
	return []commandDef{{name: "explain", handle: s.explain}}
}

// explain reports the plan of find, count, distinct, aggregate, update,
// delete and findAndModify, and with executionStats runs the read part of it.
func (s *Server) explain(ctx context.Context, req *Request) (bson.Raw, error) {
	inner, err := command.Doc("explain", "explain", command.FirstValue(req.Body))
	if err != nil {
		return nil, err
	}
	verbosity := "allPlansExecution"
	for key, v := range command.Args(req.Body) {
		switch string(key) {
		case "verbosity":
			verbosity, err = command.String("explain", "verbosity", v)
		default:
			err = command.UnknownField("explain", key)
		}
		if err != nil {
			return nil, err
		}
	}
	switch verbosity {
	case "queryPlanner", "executionStats", "allPlansExecution":
	default:
		return nil, mongoerr.New(mongoerr.BadValue, "verbosity string must be one of {'queryPlanner', 'executionStats', 'allPlansExecution'}")
	}
	first, err := inner.IndexErr(0)
	if err != nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "explain command requires a nested object")
	}
	ctx = withBodyCollation(ctx, inner)
	if first.Key() == "aggregate" {
		return s.explainAggregate(ctx, req, inner, verbosity)
	}
	coll, ok := first.Value().StringValueOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "collection name has invalid type %s", command.TypeName(first.Value().Type))
	}
	if err := s.checkExplained(first.Key(), inner); err != nil {
		return nil, err
	}
	spec, err := explainSpec(first.Key(), inner)
	if err != nil {
		return nil, err
	}
	if letDoc, ok := inner.Lookup("let").DocumentOK(); ok {
		lv, err := engine.ParseLet(letDoc, s.clock.Now())
		if err != nil {
			return nil, err
		}
		if spec.Filter, err = lv.Filter(spec.Filter); err != nil {
			return nil, err
		}
	}
	ex, err := s.eng.Explain(ctx, req.DB, coll, spec, verbosity != "queryPlanner")
	if err != nil {
		return nil, err
	}
	filter := spec.Filter
	if filter == nil {
		filter, _ = bson.Marshal(bson.D{})
	}
	plan := planDoc(ex, filter, spec.Sort)
	qp := bson.D{
		{Key: "namespace", Value: req.DB + "." + coll},
		{Key: "indexFilterSet", Value: false},
		{Key: "parsedQuery", Value: filter},
	}
	if ex.Collation != nil {
		qp = append(qp, bson.E{Key: "collation", Value: ex.Collation})
	}
	qp = append(qp, bson.E{Key: "winningPlan", Value: plan}, bson.E{Key: "rejectedPlans", Value: bson.A{}})
	elems := []bson.E{
		{Key: "explainVersion", Value: "1"},
		{Key: "queryPlanner", Value: qp},
	}
	if ex.Executed {
		elems = append(elems, bson.E{Key: "executionStats", Value: bson.D{
			{Key: "executionSuccess", Value: true},
			{Key: "nReturned", Value: ex.NReturned},
			{Key: "executionTimeMillis", Value: ex.Millis},
			{Key: "totalKeysExamined", Value: ex.KeysExam},
			{Key: "totalDocsExamined", Value: ex.DocsExam},
			{Key: "executionStages", Value: plan},
		}})
	}
	host, _ := os.Hostname()
	elems = append(elems,
		bson.E{Key: "command", Value: inner},
		bson.E{Key: "serverInfo", Value: bson.D{{Key: "host", Value: host}, {Key: "version", Value: mongoVersion}}},
	)
	return command.OK(elems...)
}

// checkExplained parses the explained command's arguments with the
// command's own parser, as MongoDB's explain does before planning (the
// parseExplain... and Invocation::explain paths of find_cmd.cpp,
// count_cmd.cpp and distinct.cpp), so that explain refuses what the command
// would refuse, with the same codes.
func (s *Server) checkExplained(cmd string, inner bson.Raw) error {
	if _, err := maxTime(cmd, inner); err != nil {
		return err
	}
	var err error
	switch cmd {
	case "find":
		_, err = queryargs.ParseFind(inner, s.params.AllowDiskUseByDefault(), s.clock)
	case "count":
		_, err = queryargs.ParseCount(inner)
	case "distinct":
		_, _, err = queryargs.ParseDistinct(inner)
	}
	return err
}

// explainSpec extracts the query part of an explained command.
func explainSpec(cmd string, inner bson.Raw) (engine.FindSpec, error) {
	var spec engine.FindSpec
	doc := func(key string) bson.Raw {
		d, _ := inner.Lookup(key).DocumentOK()
		return d
	}
	num := func(key string) int64 {
		n, _ := inner.Lookup(key).AsInt64OK()
		return n
	}
	firstStatement := func(key string) bson.Raw {
		arr, ok := inner.Lookup(key).ArrayOK()
		if !ok {
			return nil
		}
		vals, err := arr.Values()
		if err != nil || len(vals) == 0 {
			return nil
		}
		d, _ := vals[0].DocumentOK()
		return d
	}
	switch cmd {
	case "find":
		spec = engine.FindSpec{Filter: doc("filter"), Sort: doc("sort"), Projection: doc("projection"), Skip: num("skip"), Limit: num("limit"), Hint: inner.Lookup("hint"),
			Min: doc("min"), Max: doc("max")}
	case "count":
		spec = engine.FindSpec{Filter: doc("query"), Skip: num("skip"), Limit: num("limit"), Hint: inner.Lookup("hint")}
	case "distinct":
		spec = engine.FindSpec{Filter: doc("query")}
	case "findAndModify", "findandmodify":
		spec = engine.FindSpec{Filter: doc("query"), Sort: doc("sort"), Limit: 1, Hint: inner.Lookup("hint")}
	case "update", "delete":
		field := map[string]string{"update": "updates", "delete": "deletes"}[cmd]
		st := firstStatement(field)
		if st == nil {
			return spec, mongoerr.New(mongoerr.FailedToParse, "explain of %s needs at least one statement in '%s'", cmd, field)
		}
		q, _ := st.Lookup("q").DocumentOK()
		spec = engine.FindSpec{Filter: q, Hint: st.Lookup("hint")}
	default:
		return spec, mongoerr.New(mongoerr.CommandNotSupported, "explain of '%s' is not supported", cmd)
	}
	return spec, nil
}

// planDoc renders a plan the way MongoDB's explain nests its stages.
func planDoc(ex engine.Explanation, filter, sort bson.Raw) bson.D {
	var plan bson.D
	switch ex.Stage {
	case "IXSCAN":
		plan = bson.D{{Key: "stage", Value: "FETCH"}, {Key: "filter", Value: filter}, {Key: "inputStage", Value: bson.D{
			{Key: "stage", Value: "IXSCAN"},
			{Key: "keyPattern", Value: ex.KeyPattern},
			{Key: "indexName", Value: ex.IndexName},
			{Key: "direction", Value: ex.Direction},
		}}}
		if ex.IndexBounds != nil {
			ixscan := plan[2].Value.(bson.D)
			plan[2].Value = append(ixscan, bson.E{Key: "indexBounds", Value: ex.IndexBounds})
		}
	case "IDHACK":
		plan = bson.D{{Key: "stage", Value: "IDHACK"}, {Key: "indexName", Value: ex.IndexName}}
	case "TEXT_MATCH":
		// $text: the terms' index scans, their union, the matcher.
		plan = bson.D{{Key: "stage", Value: "TEXT_MATCH"}, {Key: "indexName", Value: ex.IndexName}, {Key: "parsedTextQuery", Value: ex.TextQuery}, {Key: "textIndexVersion", Value: ex.TextIndexVersion},
			{Key: "inputStage", Value: bson.D{{Key: "stage", Value: "TEXT_OR"}, {Key: "inputStage", Value: bson.D{
				{Key: "stage", Value: "IXSCAN"}, {Key: "keyPattern", Value: ex.KeyPattern}, {Key: "indexName", Value: ex.IndexName}, {Key: "direction", Value: ex.Direction},
			}}}}}
	default:
		plan = bson.D{{Key: "stage", Value: ex.Stage}, {Key: "filter", Value: filter}, {Key: "direction", Value: ex.Direction}}
	}
	if ex.Sort {
		plan = bson.D{{Key: "stage", Value: "SORT"}, {Key: "sortPattern", Value: sort}, {Key: "inputStage", Value: plan}}
	}
	return plan
}
