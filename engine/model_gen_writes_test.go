package engine

import (
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The generator's updates: operators, replacements and pipelines.

// update is an operator update touching one or two distinct fields.
func (g *modelGen) update() bson.Raw {
	ops := map[string]bson.D{}
	used := map[string]bool{}
	add := func(op, path string, v any) {
		root := strings.Split(path, ".")[0]
		if used[root] {
			return
		}
		used[root] = true
		ops[op] = append(ops[op], bson.E{Key: path, Value: v})
	}
	for i := 1 + g.r.Intn(2); i > 0; i-- {
		switch g.r.Intn(23) {
		case 0, 1:
			add("$set", "a", g.scalar())
		case 2:
			add("$inc", "a", g.num(g.r.Intn(3)))
		case 3:
			add("$unset", "a", "")
		case 4, 5:
			add("$set", "u", g.num(g.r.Intn(5)))
		case 6:
			add("$push", "arr", g.scalar())
		case 7:
			add("$addToSet", "arr", g.scalar())
		case 8:
			add("$pull", "arr", g.scalar())
		case 9:
			add("$set", "arr.0", g.scalar())
		case 10:
			add("$set", "s.x", g.num(g.r.Intn(3)))
		case 11:
			add("$set", "ttl", g.ttlValue())
		case 12:
			add("$unset", "ttl", "")
		case 13:
			add("$set", "d", g.date())
		case 14:
			add("$min", "v", g.num(g.r.Intn(3)))
		case 15:
			add("$max", "u", g.num(g.r.Intn(5)))
		case 16:
			add("$mul", "v", g.num(2))
		case 17:
			add("$set", "_id", g.id())
		case 18:
			add("$setOnInsert", "v", g.num(g.r.Intn(3)))
		case 19:
			if g.r.Intn(4) == 0 {
				add("$set", "_ts", int32(1))
			} else {
				add("$unset", "u", "")
			}
		case 20:
			add("$currentDate", "d", true)
		case 21:
			// Positional: an error unless the filter matched arr.
			add("$set", "arr.$", g.scalar())
		case 22:
			if !used["v"] {
				used["v"] = true
				add("$rename", "a", "v")
			}
		}
	}
	// In a fixed order, so that a seed replays byte for byte.
	names := make([]string, 0, len(ops))
	for op := range ops {
		names = append(names, op)
	}
	sort.Strings(names)
	d := bson.D{}
	for _, op := range names {
		d = append(d, bson.E{Key: op, Value: ops[op]})
	}
	return modelRaw(d)
}

func (g *modelGen) replacement() bson.Raw {
	doc := g.doc()
	if g.r.Intn(2) == 0 {
		var d bson.D
		_ = bson.Unmarshal(doc, &d)
		out := bson.D{}
		for _, e := range d {
			if e.Key != "_id" {
				out = append(out, e)
			}
		}
		return modelRaw(out)
	}
	return doc
}

func (g *modelGen) pipeline() []bson.Raw {
	switch g.r.Intn(4) {
	case 0:
		return []bson.Raw{modelRaw(bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: "$u"}}}})}
	case 1:
		return []bson.Raw{modelRaw(bson.D{{Key: "$unset", Value: bson.A{"arr"}}})}
	case 2:
		return []bson.Raw{modelRaw(bson.D{{Key: "$set", Value: bson.D{{Key: "u", Value: bson.D{{Key: "$literal", Value: g.num(g.r.Intn(5))}}}}}})}
	}
	return []bson.Raw{modelRaw(bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$add", Value: bson.A{bson.D{{Key: "$ifNull", Value: bson.A{"$v", 0}}}, 1}}}}}}})}
}

func (g *modelGen) setUpdate(op *modelOp) {
	switch g.r.Intn(10) {
	case 0, 1:
		op.Upd = g.replacement()
	case 2:
		op.Pipe = g.pipeline()
	default:
		op.Upd = g.update()
	}
}
