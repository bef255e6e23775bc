package server

import (
	"slices"

	"github.com/lethedb/lethe/command"
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
func (s *Server) indexOrder(db, coll string) []string {
	specs, err := s.eng.ListIndexes(db, coll)
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
