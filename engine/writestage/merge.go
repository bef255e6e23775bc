package writestage

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/letvars"
	"github.com/lethedb/lethe/engine/pipeline"
	"github.com/lethedb/lethe/engine/update"
	"github.com/lethedb/lethe/mongoerr"
)

// Merge carries out $merge: each document finds the document of the
// target with the same on fields and is written as whenMatched or
// whenNotMatched say, through the update and insert paths of the engine.
func Merge(ctx context.Context, h Host, m *pipeline.Merge, docs []pipeline.MergeDoc) error {
	on := m.On
	byID := len(on) == 0 || len(on) == 1 && on[0] == "_id"
	// On fields the pipeline names, _id too, need a unique index that
	// holds under the aggregation's collation, as mongod checks them;
	// without on, the _id is the document key and goes unchecked.
	if len(on) > 0 && !h.UniqueIndexOn(ctx, m.DB, m.Coll, on) {
		return mongoerr.New(mongoerr.Code(51183), "Cannot find index to verify that join fields will be unique")
	}
	if byID {
		on = []string{"_id"}
	}
	w := mergeWriter{h: h, m: m}
	for _, md := range docs {
		if err := ctx.Err(); err != nil {
			return err
		}
		doc := md.Doc
		if _, ok := bsonvalue.Lookup(doc, "_id"); !ok && byID {
			// A document without an _id gets one, which nothing matches.
			doc = withID(doc)
		}
		filter, err := mergeFilter(doc, on)
		if err != nil {
			return err
		}
		if err := w.write(ctx, doc, filter, md.Vars); err != nil {
			return err
		}
	}
	if len(docs) == 0 && m.WhenNotMatched == "insert" {
		// As MongoDB does, $merge makes its target even when it writes
		// nothing into it.
		if err := h.EnsureCollection(m.DB, m.Coll, nil); err != nil {
			return err
		}
	}
	return nil
}

// mergeWriter writes the documents of one $merge.
type mergeWriter struct {
	h Host
	m *pipeline.Merge
}

func (w mergeWriter) write(ctx context.Context, doc, filter bson.Raw, vars pipeline.Vars) error {
	h, m := w.h, w.m
	insert := func() error { return h.Insert(ctx, m.DB, m.Coll, []bson.Raw{doc}) }
	var u *update.Update
	var err error
	switch m.WhenMatched {
	case "fail":
		return insert() // a match is a duplicate key
	case "keepExisting":
		if found, err := h.Exists(ctx, m.DB, m.Coll, filter); err != nil || found {
			return err
		}
		err := insert()
		if mongoerr.CodeOf(err) == mongoerr.DuplicateKey {
			return nil // it appeared since: kept
		}
		return err
	case "replace":
		u, err = update.Compile(doc, update.Options{})
	case "merge":
		set, _ := bson.Marshal(bson.D{{Key: "$set", Value: doc}})
		u, err = update.Compile(set, update.Options{})
	case "pipeline":
		var stages []bson.Raw
		if stages, err = letvars.Of(vars).Pipeline(m.Pipeline); err == nil {
			u, err = update.CompilePipeline(stages, update.Options{})
		}
	}
	if err != nil {
		return err
	}
	upsert := m.WhenNotMatched == "insert" && m.WhenMatched != "pipeline"
	matched, err := h.Update(ctx, m.DB, m.Coll, filter, u, upsert)
	if err != nil || matched > 0 || upsert {
		return err
	}
	switch m.WhenNotMatched {
	case "insert":
		// A pipeline's upsert would insert what the pipeline makes of the
		// filter; $merge inserts the document itself.
		return insert()
	case "fail":
		return mongoerr.New(mongoerr.Code(13113), "$merge could not find a matching document in the target collection for at least one document in the source collection")
	}
	return nil
}

// withID is doc with a new ObjectId _id first.
func withID(doc bson.Raw) bson.Raw {
	b := bsoncore.NewDocumentBuilder().AppendObjectID("_id", bson.NewObjectID())
	it := bsonvalue.ElementsOf(doc)
	for name, v, ok := it.Next(); ok; name, v, ok = it.Next() {
		b.AppendValue(string(name), v)
	}
	return bson.Raw(b.Build())
}

// mergeFilter is the filter that finds the target document of doc: its
// on fields, each of which must have a single value.
func mergeFilter(doc bson.Raw, on []string) (bson.Raw, error) {
	b := bsoncore.NewDocumentBuilder()
	for _, f := range on {
		v := pathValue(doc, f)
		switch v.Type {
		case 0, bsoncore.TypeNull, bsoncore.TypeUndefined:
			return nil, mongoerr.New(mongoerr.Code(51132), "$merge write error: 'on' field cannot be missing, null, undefined or an array")
		case bsoncore.TypeArray:
			return nil, mongoerr.New(mongoerr.Code(51185), "$merge write error: 'on' field cannot be missing, null, undefined or an array")
		}
		b.AppendDocument(f, bsoncore.NewDocumentBuilder().AppendValue("$eq", v).Build())
	}
	return bson.Raw(b.Build()), nil
}

// pathValue is the value at a dotted path through documents, or Missing.
func pathValue(doc []byte, path string) bsoncore.Value {
	v := bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}
	for _, part := range strings.Split(path, ".") {
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return bsonvalue.Missing
		}
		v, _ = bsonvalue.Lookup(v.Data, part)
	}
	return v
}
