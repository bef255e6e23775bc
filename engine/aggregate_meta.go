package engine

import (
	"context"
	"os"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/pipeline"
	"github.com/lethedb/lethe/engine/usage"
	"github.com/lethedb/lethe/mongoerr"
)

// The pipelines over a collection whose first stage reports on it,
// $collStats and $indexStats, rather than read its documents.

// isStatsStage reports whether a pipeline's first stage is $collStats or
// $indexStats.
func isStatsStage(stages []bson.Raw) bool {
	if len(stages) == 0 {
		return false
	}
	name, _, err := pipeline.StageOf(stages[0])
	return err == nil && (name == "$collStats" || name == "$indexStats")
}

// aggregateStats runs a pipeline that starts with $collStats or
// $indexStats: the stage's documents go through the rest of it.
func (e *Engine) aggregateStats(ctx context.Context, db, coll string, stages []bson.Raw, opts AggregateOptions) ([]bson.Raw, error) {
	p, err := pipeline.Compile(stages, e.pipelineOptions(db, opts))
	if err != nil {
		return nil, err
	}
	docs, err := e.statsDocs(db, coll, stages[0], opts)
	if err != nil {
		return nil, err
	}
	return p.Run(ctx, pipeline.Slice(docs))
}

// hostOr is host, or the machine's name when the caller gave none.
func hostOr(host string) string {
	if host != "" {
		return host
	}
	name, _ := os.Hostname()
	return name
}

// collStatsDoc is the one document of $collStats, with MongoDB's fields in
// its order. A collection that does not exist has latency statistics (all
// zero) but no storage statistics, count or execution statistics.
func (e *Engine) collStatsDoc(db, coll string, spec pipeline.CollStatsSpec, host string) (bson.Raw, error) {
	out := bson.D{
		{Key: "ns", Value: db + "." + coll},
		{Key: "host", Value: hostOr(host)},
		{Key: "localTime", Value: bson.NewDateTimeFromTime(e.clock.Now())},
	}
	c := e.collection(db, coll)
	if spec.Latency {
		u := &usage.Counters{}
		if c != nil {
			u = &c.usage
		}
		out = append(out, bson.E{Key: "latencyStats", Value: u.LatencyDoc(spec.Histograms)})
	}
	missing := func(what string) error {
		return mongoerr.New(mongoerr.NamespaceNotFound, "Unable to retrieve %s in $collStats stage :: caused by :: Collection [%s.%s] not found.", what, db, coll)
	}
	var st CollStats
	if spec.Storage || spec.Count {
		var ok bool
		var err error
		if st, ok, err = e.Stats(db, coll); err != nil {
			return nil, err
		} else if !ok {
			if spec.Storage {
				return nil, missing("storageStats")
			}
			return nil, missing("count")
		}
	}
	if spec.Storage {
		out = append(out, bson.E{Key: "storageStats", Value: st.storageDoc(spec.Scale)})
	}
	if spec.Count {
		out = append(out, bson.E{Key: "count", Value: st.Count})
	}
	if spec.QueryExec {
		if c == nil {
			return nil, missing("queryExecStats")
		}
		n := c.usage.CollScans()
		out = append(out, bson.E{Key: "queryExecStats", Value: bson.D{
			{Key: "collectionScans", Value: bson.D{{Key: "total", Value: n}, {Key: "nonTailable", Value: n}}},
		}})
	}
	return bson.Marshal(out)
}

// storageDoc is storageStats in units of scale bytes, with the fields of
// MongoDB 7 that have a meaning here; avgObjSize, as in MongoDB, is not
// scaled and only shown for a collection with documents.
func (st CollStats) storageDoc(scale int64) bson.D {
	d := bson.D{
		{Key: "size", Value: st.Size / scale},
		{Key: "count", Value: st.Count},
		{Key: "numOrphanDocs", Value: int32(0)},
	}
	if st.Count > 0 {
		d = append(d, bson.E{Key: "avgObjSize", Value: st.Size / st.Count})
	}
	sizes := bson.D{{Key: "_id_", Value: st.IndexSizes["_id_"] / scale}}
	for name, n := range st.IndexSizes {
		if name != "_id_" {
			sizes = append(sizes, bson.E{Key: name, Value: n / scale})
		}
	}
	return append(d,
		bson.E{Key: "storageSize", Value: st.StorageSize / scale},
		bson.E{Key: "freeStorageSize", Value: int64(0)},
		bson.E{Key: "capped", Value: false},
		bson.E{Key: "nindexes", Value: int32(st.NIndexes)},
		bson.E{Key: "indexBuilds", Value: bson.A{}},
		bson.E{Key: "totalIndexSize", Value: st.IndexSize / scale},
		bson.E{Key: "totalSize", Value: (st.StorageSize + st.IndexSize) / scale},
		bson.E{Key: "indexSizes", Value: sizes},
		bson.E{Key: "scaleFactor", Value: int32(min(scale, 1<<31-1))},
	)
}

// indexStatsDocs are the documents of $indexStats, one per index, the _id
// index first: how many operations used it since when. A collection that
// does not exist has none.
func (e *Engine) indexStatsDocs(db, coll, host string) ([]bson.Raw, error) {
	c := e.collection(db, coll)
	if c == nil {
		return nil, nil
	}
	host = hostOr(host)
	type ix struct {
		id   uint64
		spec bson.D
		key  any
		name string
	}
	idKey := bson.D{{Key: "_id", Value: int32(1)}}
	all := []ix{{id: 0, name: "_id_", key: idKey, spec: bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: idKey}, {Key: "name", Value: "_id_"}}}}
	for _, im := range c.st().meta.Indexes {
		all = append(all, ix{id: im.ID, name: im.Name, key: im.Key, spec: im.Spec()})
	}
	docs := make([]bson.Raw, 0, len(all))
	for _, x := range all {
		a := c.usage.Access(x.id, e.clock)
		raw, err := bson.Marshal(bson.D{
			{Key: "name", Value: x.name},
			{Key: "key", Value: x.key},
			{Key: "host", Value: host},
			{Key: "accesses", Value: bson.D{{Key: "ops", Value: a.Ops.Load()}, {Key: "since", Value: bson.NewDateTimeFromTime(a.Since)}}},
			{Key: "spec", Value: x.spec},
		})
		if err != nil {
			return nil, err
		}
		docs = append(docs, raw)
	}
	return docs, nil
}

// AggregateDocs runs a pipeline of db whose first stage's documents the
// caller made, as the server makes those of $currentOp and
// $listLocalSessions: docs go through the rest of the stages.
func (e *Engine) AggregateDocs(ctx context.Context, db string, docs []bson.Raw, stages []bson.Raw, opts AggregateOptions) ([]bson.Raw, error) {
	p, err := pipeline.Compile(stages, e.pipelineOptions(db, opts))
	if err != nil {
		return nil, err
	}
	return p.Run(ctx, pipeline.Slice(docs))
}

// checkCollectionPipeline applies the rules of a pipeline over a
// collection that come before its stages are compiled, in MongoDB's order:
// where the metadata stages may run, checked as the stages are parsed;
// then that the first stage needs a collection.
func (e *Engine) checkCollectionPipeline(db string, stages []bson.Raw) error {
	if err := pipeline.CheckNamespace(stages, db, false); err != nil {
		return err
	}
	if len(stages) > 0 && pipeline.MakesDocuments(stages[0]) {
		return mongoerr.New(mongoerr.InvalidNamespace, "'%s' can only be run with {aggregate: 1}", firstStageName(stages))
	}
	return nil
}
