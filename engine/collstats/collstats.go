package collstats

import (
	"os"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/pipeline"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/engine/usage"
	"github.com/lethedb/lethe/mongoerr"
)

// Stats are the figures collStats and dbStats report. Expired documents
// are not counted (TTL spec rule 17).
type Stats struct {
	Count       int64
	Size        int64 // bytes of live user documents
	StorageSize int64 // estimated bytes on disk of documents
	IndexSize   int64 // estimated bytes on disk of secondary index entries
	NIndexes    int
	IndexSizes  map[string]int64
}

// hostOr is host, or the machine's name when the caller gave none.
func hostOr(host string) string {
	if host != "" {
		return host
	}
	name, _ := os.Hostname()
	return name
}

// CollStatsDoc is the one document of $collStats over db.coll, with
// MongoDB's fields in its order; host is the server's "host:port" (the
// machine's name if empty). u are the collection's usage counters, nil if
// it does not exist: it then has latency statistics (all zero) but no
// storage statistics, count or execution statistics. stats measures the
// collection, ok false if it does not exist.
func CollStatsDoc(db, coll string, spec pipeline.CollStatsSpec, host string, now time.Time, u *usage.Counters, stats func() (s Stats, ok bool, err error)) (bson.Raw, error) {
	out := bson.D{
		{Key: "ns", Value: db + "." + coll},
		{Key: "host", Value: hostOr(host)},
		{Key: "localTime", Value: bson.NewDateTimeFromTime(now)},
	}
	if spec.Latency {
		lu := &usage.Counters{}
		if u != nil {
			lu = u
		}
		out = append(out, bson.E{Key: "latencyStats", Value: lu.LatencyDoc(spec.Histograms)})
	}
	missing := func(what string) error {
		return mongoerr.New(mongoerr.NamespaceNotFound, "Unable to retrieve %s in $collStats stage :: caused by :: Collection [%s.%s] not found.", what, db, coll)
	}
	var st Stats
	if spec.Storage || spec.Count {
		var ok bool
		var err error
		if st, ok, err = stats(); err != nil {
			return nil, err
		} else if !ok {
			if spec.Storage {
				return nil, missing("storageStats")
			}
			return nil, missing("count")
		}
	}
	if spec.Storage {
		out = append(out, bson.E{Key: "storageStats", Value: st.StorageDoc(spec.Scale)})
	}
	if spec.Count {
		out = append(out, bson.E{Key: "count", Value: st.Count})
	}
	if spec.QueryExec {
		if u == nil {
			return nil, missing("queryExecStats")
		}
		n := u.CollScans()
		out = append(out, bson.E{Key: "queryExecStats", Value: bson.D{
			{Key: "collectionScans", Value: bson.D{{Key: "total", Value: n}, {Key: "nonTailable", Value: n}}},
		}})
	}
	return bson.Marshal(out)
}

// StorageDoc is storageStats in units of scale bytes, with the fields of
// MongoDB 7 that have a meaning here; avgObjSize, as in MongoDB, is not
// scaled and only shown for a collection with documents.
func (st Stats) StorageDoc(scale int64) bson.D {
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

// IndexStatsDocs are the documents of $indexStats, one per index, the _id
// index first: how many operations used it since when, from the usage
// counters u of a collection whose secondary indexes are indexes.
func IndexStatsDocs(host string, indexes []record.IndexMeta, u *usage.Counters, clk clock.Clock) ([]bson.Raw, error) {
	host = hostOr(host)
	type ix struct {
		id   uint64
		spec bson.D
		key  any
		name string
	}
	idKey := bson.D{{Key: "_id", Value: int32(1)}}
	all := []ix{{id: 0, name: "_id_", key: idKey, spec: bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: idKey}, {Key: "name", Value: "_id_"}}}}
	for _, im := range indexes {
		all = append(all, ix{id: im.ID, name: im.Name, key: im.Key, spec: im.Spec()})
	}
	docs := make([]bson.Raw, 0, len(all))
	for _, x := range all {
		a := u.Access(x.id, clk)
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
