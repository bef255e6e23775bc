package engine

import (
	"go.mongodb.org/mongo-driver/v2/bson"
)

// The generator's indexes: the pool of specs and names that
// createIndexes, dropIndexes, collMod and hints draw on.

// indexPool lists every index the generator creates: each key pattern has
// exactly one name, and only the expireAfterSeconds of the TTL ones varies.
func (g *modelGen) indexSpec() bson.Raw {
	k := func(pairs ...any) bson.D {
		var d bson.D
		for i := 0; i < len(pairs); i += 2 {
			d = append(d, bson.E{Key: pairs[i].(string), Value: pairs[i+1]})
		}
		return d
	}
	specs := []bson.D{
		{{Key: "key", Value: k("u", 1)}, {Key: "name", Value: "u_1"}, {Key: "unique", Value: true}},
		{{Key: "key", Value: k("a", 1)}, {Key: "name", Value: "a_1"}},
		{{Key: "key", Value: k("a", 1, "v", -1)}, {Key: "name", Value: "a_1_v_-1"}},
		{{Key: "key", Value: k("v", 1)}, {Key: "name", Value: "v_1"}, {Key: "unique", Value: true}, {Key: "sparse", Value: true}},
		{{Key: "key", Value: k("arr", 1)}, {Key: "name", Value: "arr_1"}},
		{{Key: "key", Value: k("arr.0", 1)}, {Key: "name", Value: "arr.0_1"}},
		{{Key: "key", Value: k("s.x", 1)}, {Key: "name", Value: "s.x_1"}, {Key: "unique", Value: true}},
		{{Key: "key", Value: k("a", 1, "u", 1)}, {Key: "name", Value: "a_1_u_1"}, {Key: "unique", Value: true}, {Key: "partialFilterExpression", Value: k("a", k("$gt", 1))}},
		{{Key: "key", Value: k("u", 1, "arr", 1)}, {Key: "name", Value: "u_1_arr_1"}, {Key: "unique", Value: true}},
		{{Key: "key", Value: k("arr", -1)}, {Key: "name", Value: "arr_-1"}, {Key: "unique", Value: true}, {Key: "sparse", Value: true}},
		{{Key: "key", Value: k("d", 1)}, {Key: "name", Value: "d_1"}, {Key: "expireAfterSeconds", Value: []int32{0, 5, 30}[g.r.Intn(3)]}},
		{{Key: "key", Value: k("d", -1)}, {Key: "name", Value: "d_-1"}, {Key: "expireAfterSeconds", Value: int32(2)}, {Key: "partialFilterExpression", Value: k("v", k("$exists", true))}},
		{{Key: "key", Value: k("_ts", 1)}, {Key: "name", Value: "_ts_1"}, {Key: "expireAfterSeconds", Value: []int32{-1, 4, 10, 60}[g.r.Intn(4)]}},
		{{Key: "key", Value: k("ttl", 1)}, {Key: "name", Value: "ttl_1"}},
		{{Key: "key", Value: k("s.0.x", 1)}, {Key: "name", Value: "s.0.x_1"}},
		{{Key: "key", Value: k("arr.x", 1)}, {Key: "name", Value: "arr.x_1"}, {Key: "unique", Value: true}, {Key: "sparse", Value: true}},
		{{Key: "key", Value: k("arr.1", -1)}, {Key: "name", Value: "arr.1_-1"}, {Key: "unique", Value: true}},
		// Hashed: a is never an array, which a hashed field refuses.
		{{Key: "key", Value: k("a", "hashed")}, {Key: "name", Value: "a_hashed"}},
		{{Key: "key", Value: k("u", 1, "a", "hashed")}, {Key: "name", Value: "u_1_a_hashed"}},
		{{Key: "key", Value: k("t", "text")}, {Key: "name", Value: "t_text"}},
		// A 2dsphere index: documents' loc are always valid places.
		{{Key: "key", Value: k("loc", "2dsphere")}, {Key: "name", Value: "loc_2dsphere"}},
		// A 2d index: documents' pt are always legacy pairs
		// (model_near_flat_test.go).
		{{Key: "key", Value: k("pt", "2d")}, {Key: "name", Value: "pt_2d"}},
		// Unique under a case-insensitive collation: "x" and "X" collide.
		{{Key: "key", Value: k("a", -1)}, {Key: "name", Value: "a_-1_ci"}, {Key: "unique", Value: true},
			{Key: "partialFilterExpression", Value: k("a", k("$type", "string"))}, {Key: "collation", Value: caseInsensitive}},
	}
	// The _ts index, which turns TTL on, comes up more often.
	if g.r.Intn(4) == 0 {
		return modelRaw(specs[12])
	}
	// And so does the 2dsphere one, without which $near and $geoNear
	// only fail (model_near_test.go).
	if g.r.Intn(4) == 0 {
		return modelRaw(bson.D{{Key: "key", Value: k("loc", "2dsphere")}, {Key: "name", Value: "loc_2dsphere"}})
	}
	return modelRaw(specs[g.r.Intn(len(specs))])
}

var poolIndexNames = []string{"u_1", "a_1", "a_1_v_-1", "v_1", "arr_1", "arr.0_1", "s.x_1", "a_1_u_1", "u_1_arr_1", "arr_-1", "d_1", "d_-1", "_ts_1", "ttl_1", "s.0.x_1", "arr.x_1", "arr.1_-1", "a_hashed", "u_1_a_hashed", "a_-1_ci", "loc_2dsphere", "pt_2d", "t_text", "_id_", "nope"}

// hintable index names: complete indexes, whose use cannot change results.
var hintableIndexes = map[string]bool{"a_1": true, "a_1_v_-1": true, "arr_1": true, "arr.0_1": true, "s.x_1": true, "u_1": true, "u_1_arr_1": true, "ttl_1": true, "d_1": true, "s.0.x_1": true, "a_hashed": true, "u_1_a_hashed": true}
