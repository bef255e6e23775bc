package storeadmin

import (
	"context"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/mongoerr"
)

// dataSize reports the bytes and number of the documents of a collection,
// or of those between min and max of an index's key pattern, as mongod's
// dataSize does (src/mongo/db/commands/dbcommands.cpp, CmdDatasize). Its
// namespace is the full "db.collection".
func (s *Service) dataSize(ctx context.Context, req *command.Request) (bson.Raw, error) {
	ns, err := command.String("dataSize", "dataSize", command.FirstValue(req.Body))
	if err != nil {
		return nil, err
	}
	db, coll, ok := strings.Cut(ns, ".")
	if !ok {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "Invalid namespace specified '%s'", ns)
	}
	if err := engine.ValidateNamespace(db, coll); err != nil {
		return nil, err
	}
	if s.cfg.Auth && db != req.DB {
		// Authorization checked find on req.DB's namespace: a size of
		// another database's collection is not the client's to read.
		return nil, mongoerr.New(mongoerr.Unauthorized, "not authorized on %s to execute command dataSize on %s: run it on %s", req.DB, ns, db)
	}
	var keyPattern, minKey, maxKey bson.Raw
	for key, v := range command.Args(req.Body) {
		switch k := string(key); k {
		case "keyPattern":
			keyPattern, err = command.Doc("dataSize", k, v)
		case "min":
			minKey, err = command.Doc("dataSize", k, v)
		case "max":
			maxKey, err = command.Doc("dataSize", k, v)
		case "estimate":
			_, err = command.Bool("dataSize", k, v)
		default:
			err = command.UnknownField("dataSize", key)
		}
		if err != nil {
			return nil, err
		}
	}
	start := time.Now()
	reply := func(size, n int64) (bson.Raw, error) {
		return command.OK(
			bson.E{Key: "estimate", Value: false},
			bson.E{Key: "size", Value: size},
			bson.E{Key: "numObjects", Value: n},
			bson.E{Key: "millis", Value: int32(time.Since(start).Milliseconds())},
		)
	}
	if !s.eng.CollectionExists(ctx, db, coll) {
		return reply(0, 0)
	}
	if len(keyPattern) <= 5 && len(minKey) <= 5 && len(maxKey) <= 5 {
		st, _, err := s.eng.Stats(ctx, db, coll)
		if err != nil {
			return nil, err
		}
		return reply(st.Size, st.Count)
	}
	if len(keyPattern) <= 5 {
		return nil, mongoerr.New(mongoerr.BadValue, "dataSize with min or max needs a keyPattern")
	}
	// The range is one of the key pattern's index, as in mongod: scan
	// that index between min (inclusive) and max (exclusive).
	cur, err := s.eng.Find(ctx, db, coll, engine.FindSpec{
		Hint: bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: keyPattern},
		Min:  minKey, Max: maxKey,
	})
	if err != nil {
		return nil, err
	}
	defer cur.Close()
	var size, n int64
	for !cur.Exhausted() {
		batch, err := cur.NextBatch(ctx, 1000, 16<<20)
		if err != nil {
			return nil, err
		}
		for _, d := range batch {
			size += int64(len(d))
			n++
		}
		if len(batch) == 0 {
			break
		}
	}
	return reply(size, n)
}

// compact compacts a collection's documents and indexes in the store and
// reports the bytes given back, as mongod's compact reports bytesFreed
// (src/mongo/db/commands/compact.cpp). Pebble compacts without blocking
// reads or writes.
func (s *Service) compact(ctx context.Context, req *command.Request) (bson.Raw, error) {
	coll, err := command.CollectionArg(req)
	if err != nil {
		return nil, err
	}
	if err := engine.ValidateNamespace(req.DB, coll); err != nil {
		return nil, err
	}
	for key, v := range command.Args(req.Body) {
		switch k := string(key); k {
		case "force", "dryRun":
			_, err = command.Bool("compact", k, v)
		case "freeSpaceTargetMB":
			_, err = command.Int64("compact", k, v)
		default:
			err = command.UnknownField("compact", key)
		}
		if err != nil {
			return nil, err
		}
	}
	if _, isView := s.eng.View(ctx, req.DB, coll); isView {
		return nil, mongoerr.New(mongoerr.CommandNotSupportedOnView, "can't compact a view")
	}
	freed, err := s.eng.CompactCollection(ctx, req.DB, coll)
	if err != nil {
		return nil, err
	}
	return command.OK(bson.E{Key: "bytesFreed", Value: freed})
}
