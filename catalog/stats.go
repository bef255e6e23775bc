package catalog

import (
	"context"
	"slices"
	"strings"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/mongoerr"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// missingCollStats is collStats of a collection that does not exist:
// MongoDB 7 answers ok with zero sizes, its collStats ignoring the
// NamespaceNotFound of appendCollectionStorageStats
// (src/mongo/db/commands/dbcommands.cpp, CmdCollStats;
// src/mongo/db/stats/storage_stats.cpp).
func missingCollStats(db, coll string, scale int64) (bson.Raw, error) {
	return command.OK(
		bson.E{Key: "ns", Value: db + "." + coll},
		bson.E{Key: "size", Value: int64(0)},
		bson.E{Key: "count", Value: int64(0)},
		bson.E{Key: "numOrphanDocs", Value: int64(0)},
		bson.E{Key: "storageSize", Value: int64(0)},
		bson.E{Key: "totalSize", Value: int64(0)},
		bson.E{Key: "nindexes", Value: int32(0)},
		bson.E{Key: "totalIndexSize", Value: int64(0)},
		bson.E{Key: "indexDetails", Value: bson.D{}},
		bson.E{Key: "indexSizes", Value: bson.D{}},
		bson.E{Key: "scaleFactor", Value: int32(scale)},
	)
}

// indexOrder lists db.coll's index names in listIndexes order, _id_ first,
// the order MongoDB's catalog gives indexSizes.
func (s *Service) indexOrder(db, coll string) []string {
	specs, err := s.eng.ListIndexes(context.TODO(), db, coll)
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(specs))
	for _, spec := range specs {
		for _, e := range spec {
			if e.Key == "name" {
				if name, ok := e.Value.(string); ok {
					names = append(names, name)
				}
			}
		}
	}
	return names
}

// indexSizes is collStats' indexSizes: the sizes in order, so that the
// same collection gives the same document every time, then any index the
// order does not name (built meanwhile) in name order.
func indexSizes(sizes map[string]int64, order []string, scale int64) bson.D {
	out := make(bson.D, 0, len(sizes))
	seen := make(map[string]bool, len(order))
	for _, name := range order {
		if n, ok := sizes[name]; ok && !seen[name] {
			out = append(out, bson.E{Key: name, Value: n / scale})
			seen[name] = true
		}
	}
	var rest []string
	for name := range sizes {
		if !seen[name] {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	for _, name := range rest {
		out = append(out, bson.E{Key: name, Value: sizes[name] / scale})
	}
	return out
}

func scaleArg(cmd string, body bson.Raw) (int64, error) {
	scale := int64(1)
	if v, err := body.LookupErr("scale"); err == nil {
		n, err := command.Int64(cmd, "scale", v)
		if err != nil {
			return 0, err
		}
		if n < 1 {
			return 0, mongoerr.New(mongoerr.BadValue, "Scale factor must be greater than zero")
		}
		scale = n
	}
	return scale, nil
}

func (s *Service) collStats(ctx context.Context, req *command.Request, by Caller) (bson.Raw, error) {
	coll, err := collectionName(req)
	if err != nil {
		return nil, err
	}
	scale, err := scaleArg("collStats", req.Body)
	if err != nil {
		return nil, err
	}
	st, ok, err := s.eng.Stats(ctx, req.DB, coll)
	if err != nil {
		return nil, err
	}
	if !ok {
		return missingCollStats(req.DB, coll, scale)
	}
	elems := append(bson.D{{Key: "ns", Value: req.DB + "." + coll}}, storageStats(st, scale, s.indexOrder(req.DB, coll))...)
	return command.OK(elems...)
}

// storageStats is what collStats and $collStats report of a collection's
// size, in units of scale bytes.
func storageStats(st engine.CollStats, scale int64, order []string) bson.D {
	var avg int64
	if st.Count > 0 {
		avg = st.Size / st.Count
	}
	sizes := indexSizes(st.IndexSizes, order, scale)
	return bson.D{
		{Key: "count", Value: st.Count},
		{Key: "size", Value: st.Size / scale},
		{Key: "avgObjSize", Value: avg},
		{Key: "storageSize", Value: st.StorageSize / scale},
		// Pebble gives the space of deleted records back through
		// compaction rather than keeping it for the collection to reuse:
		// none is free in WiredTiger's sense.
		{Key: "freeStorageSize", Value: int64(0)},
		{Key: "nindexes", Value: int32(st.NIndexes)},
		{Key: "totalIndexSize", Value: st.IndexSize / scale},
		{Key: "totalSize", Value: (st.StorageSize + st.IndexSize) / scale},
		{Key: "indexSizes", Value: sizes},
		{Key: "scaleFactor", Value: int32(scale)},
		{Key: "capped", Value: false},
	}
}

func (s *Service) dbStats(ctx context.Context, req *command.Request, by Caller) (bson.Raw, error) {
	scale, err := scaleArg("dbStats", req.Body)
	if err != nil {
		return nil, err
	}
	var objects, dataSize, storage, indexes, indexSize int64
	names := s.eng.CollectionNames(ctx, req.DB)
	for _, name := range names {
		st, ok, err := s.eng.Stats(ctx, req.DB, name)
		if err != nil {
			return nil, err
		}
		if ok {
			objects += st.Count
			dataSize += st.Size
			storage += st.StorageSize
			indexes += int64(st.NIndexes)
			indexSize += st.IndexSize
		}
	}
	var avg float64
	if objects > 0 {
		avg = float64(dataSize) / float64(objects)
	}
	return command.OK(
		bson.E{Key: "db", Value: req.DB},
		bson.E{Key: "collections", Value: int64(len(names))},
		bson.E{Key: "views", Value: int64(len(s.eng.Views(ctx, req.DB)))},
		bson.E{Key: "objects", Value: objects},
		bson.E{Key: "avgObjSize", Value: avg},
		bson.E{Key: "dataSize", Value: float64(dataSize / scale)},
		bson.E{Key: "storageSize", Value: float64(storage / scale)},
		bson.E{Key: "indexes", Value: indexes},
		bson.E{Key: "indexSize", Value: float64(indexSize / scale)},
		bson.E{Key: "totalSize", Value: float64((storage + indexSize) / scale)},
		bson.E{Key: "scaleFactor", Value: scale},
	)
}

// Stats is serverStatus' catalogStats section: the collections and
// views of the catalog, those of the admin, config and local databases and
// system.* collections counted apart as internal, as mongod counts them
// (src/mongo/db/catalog/collection_catalog.cpp, CollectionCatalog::Stats;
// docs/reference/command/serverStatus, catalogStats). Lethe has no capped,
// clustered or time series collections.
func (s *Service) Stats() bson.D {
	var collections, internal, views, internalViews int32
	for _, db := range s.eng.Databases(context.TODO()) {
		internalDB := db == "admin" || db == "config" || db == "local"
		for _, name := range s.eng.CollectionNames(context.TODO(), db) {
			if internalDB || strings.HasPrefix(name, "system.") {
				internal++
			} else {
				collections++
			}
		}
		n := int32(len(s.eng.Views(context.TODO(), db)))
		if internalDB {
			internalViews += n
		} else {
			views += n
		}
	}
	return bson.D{
		{Key: "collections", Value: collections},
		{Key: "capped", Value: int32(0)},
		{Key: "clustered", Value: int32(0)},
		{Key: "timeseries", Value: int32(0)},
		{Key: "views", Value: views},
		{Key: "internalCollections", Value: internal},
		{Key: "internalViews", Value: internalViews},
	}
}
