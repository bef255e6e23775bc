package engine

import (
	"fmt"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// modelOp is one generated operation. It is plain data, so that a log of
// them replays against a fresh engine and model (for shrinking).
type modelOp struct {
	Kind    string
	Docs    []bson.Raw
	Ordered bool
	Filter  bson.Raw
	Upd     bson.Raw   // operators or replacement
	Pipe    []bson.Raw // an update pipeline, when set
	Multi   bool
	Upsert  bool
	Remove  bool
	New     bool
	Sort    bson.Raw
	Proj    bson.Raw
	Skip    int64
	Limit   int64
	Key     string
	Specs   []bson.Raw
	Which   bson.RawValue
	IxName  string
	IxKey   bson.Raw
	Expire  bson.RawValue
	Dur     time.Duration
	Hint    bson.RawValue
	// Collation is the collation a count, find, write or aggregate names
	// (model_collate_test.go); nil names none.
	Collation bson.Raw
	Hide      int // collMod hidden: 0 unchanged, 1 hide, 2 unhide
	// setValidation: the new validator, level and action (nil or "":
	// unchanged); Bypass skips the validator on a write.
	Validator bson.Raw
	Level     string
	Action    string
	Bypass    bool
	// preImages: the changeStreamPreAndPostImages setting collMod sets.
	PreImages bool
	// Retry makes a write a retryable write that the step repeats with
	// the same transaction number (model_retry_test.go).
	Retry bool
	// Let is a command's let: constants the filter's $expr and an update
	// pipeline read as $$name.
	Let bson.Raw
	// find: the hinted index's key range, and returnKey.
	Min, Max  bson.Raw
	ReturnKey bool
	// aggregate: the stages after the leading $match of Filter and $sort,
	// or after a $geoNear of GeoNear's spec, whose query is Filter
	// (model_near_test.go).
	Stages  []bson.Raw
	GeoNear bson.Raw
	// createView, dropView, readView (model_views_test.go): the view, and
	// the definition created.
	View, ViewOn string
	ViewPipe     []bson.Raw
	// InTxn, for a statement or a txn* operation, is the transaction
	// slot plus one (model_txn_test.go); 0 for a plain operation.
	InTxn int
}

func (op *modelOp) String() string {
	var b strings.Builder
	if op.InTxn != 0 {
		fmt.Fprintf(&b, "[txn%d] ", op.InTxn)
	}
	b.WriteString(op.Kind)
	if op.Kind == "preImages" {
		fmt.Fprintf(&b, " enabled=%v", op.PreImages)
	}
	raw := func(name string, r bson.Raw) {
		if r != nil {
			fmt.Fprintf(&b, " %s=%s", name, r.String())
		}
	}
	rawList := func(name string, rs []bson.Raw) {
		if rs != nil {
			parts := make([]string, len(rs))
			for i, r := range rs {
				parts[i] = r.String()
			}
			fmt.Fprintf(&b, " %s=[%s]", name, strings.Join(parts, ", "))
		}
	}
	rawList("docs", op.Docs)
	if op.Kind == "insert" {
		fmt.Fprintf(&b, " ordered=%v", op.Ordered)
	}
	raw("filter", op.Filter)
	raw("collation", op.Collation)
	raw("update", op.Upd)
	rawList("pipeline", op.Pipe)
	for _, f := range []struct {
		name string
		on   bool
	}{{"multi", op.Multi}, {"upsert", op.Upsert}, {"remove", op.Remove}, {"new", op.New}} {
		if f.on {
			b.WriteString(" " + f.name)
		}
	}
	raw("sort", op.Sort)
	raw("proj", op.Proj)
	if op.Skip != 0 || op.Limit != 0 {
		fmt.Fprintf(&b, " skip=%d limit=%d", op.Skip, op.Limit)
	}
	if op.Key != "" {
		b.WriteString(" key=" + op.Key)
	}
	rawList("specs", op.Specs)
	if op.Which.Type != 0 {
		b.WriteString(" which=" + op.Which.String())
	}
	if op.IxName != "" {
		b.WriteString(" index=" + op.IxName)
	}
	raw("keyPattern", op.IxKey)
	if op.Expire.Type != 0 {
		b.WriteString(" expireAfterSeconds=" + op.Expire.String())
	}
	if op.Dur != 0 {
		fmt.Fprintf(&b, " by=%v", op.Dur)
	}
	if op.Hint.Type != 0 {
		b.WriteString(" hint=" + op.Hint.String())
	}
	if op.Hide != 0 {
		fmt.Fprintf(&b, " hidden=%v", op.Hide == 1)
	}
	raw("validator", op.Validator)
	if op.Level != "" {
		b.WriteString(" validationLevel=" + op.Level)
	}
	if op.Action != "" {
		b.WriteString(" validationAction=" + op.Action)
	}
	if op.Bypass {
		b.WriteString(" bypassDocumentValidation")
	}
	if op.Retry {
		b.WriteString(" retry")
	}
	raw("let", op.Let)
	raw("min", op.Min)
	raw("max", op.Max)
	if op.ReturnKey {
		b.WriteString(" returnKey")
	}
	raw("geoNear", op.GeoNear)
	rawList("stages", op.Stages)
	if op.View != "" {
		b.WriteString(" view=" + op.View)
	}
	if op.Kind == "createView" || op.Kind == "modifyView" {
		b.WriteString(" viewOn=" + op.ViewOn)
		rawList("viewPipeline", op.ViewPipe)
	}
	return b.String()
}

// modelGen makes random operations over a deliberately small value space
// so that _ids, unique keys and filters collide often.
type modelGen struct {
	r   *rand.Rand
	now func() time.Time
	// noDrop leaves out collection drops (the concurrent test keeps one
	// collection to check at the end).
	noDrop bool
	// views mixes in view operations (model_views_test.go).
	views bool
	// txns mixes in transactions (model_txn_test.go).
	txns bool
}

func modelRaw(v any) bson.Raw {
	raw, err := bson.Marshal(v)
	if err != nil {
		panic(err)
	}
	return raw
}

func rawValue(v any) bson.RawValue {
	return modelRaw(bson.D{{Key: "v", Value: v}}).Lookup("v")
}

// num is n as one of the four numeric types, all of which compare equal.
func (g *modelGen) num(n int) any {
	switch g.r.Intn(4) {
	case 0:
		return int32(n)
	case 1:
		return int64(n)
	case 2:
		return float64(n)
	}
	d, _ := bson.ParseDecimal128(strconv.Itoa(n))
	return d
}

func (g *modelGen) scalar() any {
	switch k := g.r.Intn(20); {
	case k < 12:
		return g.num(g.r.Intn(4))
	case k < 15:
		// "X" equals "x" under a case-insensitive collation.
		return []string{"x", "y", "X"}[g.r.Intn(3)]
	case k < 17:
		return nil
	case k < 18:
		return true
	case k < 19:
		return 1.5
	}
	return g.date()
}

func (g *modelGen) date() bson.DateTime {
	return bson.NewDateTimeFromTime(g.now().Add(time.Duration(g.r.Intn(40)-25) * time.Second))
}

func (g *modelGen) id() any {
	switch k := g.r.Intn(20); {
	case k < 14:
		return g.num(g.r.Intn(6))
	case k < 18:
		return "k" + strconv.Itoa(g.r.Intn(3))
	case k < 19:
		return bson.D{{Key: "k", Value: g.num(g.r.Intn(2))}}
	}
	return nil
}

func (g *modelGen) array() bson.A {
	a := bson.A{}
	for i := g.r.Intn(4); i > 0; i-- {
		switch g.r.Intn(10) {
		case 0:
			a = append(a, bson.D{{Key: "x", Value: g.num(g.r.Intn(3))}})
		case 1, 2:
			inner := bson.A{g.num(g.r.Intn(3))}
			if g.r.Intn(2) == 0 {
				inner = append(inner, g.num(g.r.Intn(3)))
			}
			a = append(a, inner)
		default:
			a = append(a, g.scalar())
		}
	}
	return a
}

func (g *modelGen) ttlValue() any {
	return []any{int32(-1), int32(1), int32(3), int32(20), int64(5), 8.0, int32(0), 20.5, "x", int64(3000000000), nil}[g.r.Intn(11)]
}

// doc is a small document; a few rare shapes are invalid on purpose.
func (g *modelGen) doc() bson.Raw {
	d := bson.D{}
	idLast := g.r.Intn(12) == 0
	if !idLast {
		d = append(d, bson.E{Key: "_id", Value: g.id()})
	}
	maybe := func(p int, key string, v func() any) {
		if g.r.Intn(100) < p {
			d = append(d, bson.E{Key: key, Value: v()})
		}
	}
	maybe(70, "a", g.scalar)
	maybe(50, "u", func() any {
		if g.r.Intn(8) == 0 {
			return nil
		}
		return g.num(g.r.Intn(5))
	})
	maybe(30, "v", func() any { return g.num(g.r.Intn(3)) })
	maybe(45, "arr", func() any {
		if g.r.Intn(5) == 0 {
			return g.scalar()
		}
		return g.array()
	})
	maybe(30, "s", func() any {
		if g.r.Intn(2) == 0 {
			return bson.D{{Key: "x", Value: g.num(g.r.Intn(3))}}
		}
		return bson.A{bson.D{{Key: "x", Value: g.num(g.r.Intn(3))}}, bson.D{{Key: "x", Value: g.num(g.r.Intn(3))}}}
	})
	maybe(35, "d", func() any {
		switch g.r.Intn(4) {
		case 0:
			return bson.A{g.date(), g.date()}
		case 1:
			return "not a date"
		}
		return g.date()
	})
	maybe(35, "ttl", g.ttlValue)
	maybe(45, "loc", g.point)
	maybe(25, "t", func() any { return modelPhrases[g.r.Intn(len(modelPhrases))] })
	if idLast && g.r.Intn(3) != 0 {
		// Sometimes none at all: the engine makes an ObjectId.
		d = append(d, bson.E{Key: "_id", Value: g.id()})
	}
	switch g.r.Intn(60) {
	case 0:
		d = append(d, bson.E{Key: "_ts", Value: int32(1)})
	case 1:
		d = append(d, bson.E{Key: "_id", Value: bson.A{int32(1)}})
		d = d[len(d)-1:]
	}
	return modelRaw(d)
}

func (g *modelGen) filter() bson.Raw {
	s := g.scalar
	n := func() any { return g.num(g.r.Intn(4)) }
	var f bson.D
	switch g.r.Intn(25) {
	case 0:
		f = bson.D{}
	case 1, 2, 3:
		f = bson.D{{Key: "_id", Value: g.id()}}
	case 4:
		f = bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{g.id(), g.id()}}}}}
	case 5:
		f = bson.D{{Key: "a", Value: s()}}
	case 6:
		f = bson.D{{Key: "a", Value: bson.D{{Key: []string{"$gt", "$gte", "$lt", "$lte", "$ne"}[g.r.Intn(5)], Value: n()}}}}
	case 7:
		f = bson.D{{Key: "u", Value: n()}}
	case 8:
		f = bson.D{{Key: "arr", Value: s()}}
	case 9:
		f = bson.D{{Key: "arr.0", Value: s()}}
	case 10:
		f = bson.D{{Key: "s.x", Value: n()}}
	case 11:
		f = bson.D{{Key: "a", Value: nil}}
	case 12:
		f = bson.D{{Key: "a", Value: bson.D{{Key: "$exists", Value: g.r.Intn(2) == 0}}}}
	case 13:
		f = bson.D{{Key: "u", Value: n()}, {Key: "a", Value: s()}}
	case 14:
		f = bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "a", Value: s()}}, bson.D{{Key: "u", Value: n()}}}}}
	case 15:
		f = bson.D{{Key: "d", Value: bson.D{{Key: "$lt", Value: g.date()}}}}
	case 16:
		f = bson.D{{Key: "ttl", Value: g.ttlValue()}}
	case 17:
		f = bson.D{{Key: "a", Value: bson.D{{Key: "$in", Value: bson.A{s(), s()}}}}}
	case 18:
		f = bson.D{{Key: "arr", Value: bson.D{{Key: "$elemMatch", Value: bson.D{{Key: "$gte", Value: n()}}}}}}
	case 19:
		f = bson.D{{Key: "a", Value: n()}, {Key: "v", Value: bson.D{{Key: "$lte", Value: n()}}}}
	case 20:
		f = bson.D{{Key: "_id", Value: g.id()}, {Key: "a", Value: s()}}
	case 21:
		f = bson.D{{Key: "u", Value: bson.D{{Key: "$gte", Value: n()}}}, {Key: "u", Value: bson.D{{Key: "$lt", Value: n()}}}}
	case 22:
		f = bson.D{{Key: []string{"arr.x", "s.0.x", "s.1.x", "arr.1", "arr.0.0"}[g.r.Intn(5)], Value: n()}}
	case 23:
		f = bson.D{{Key: "arr.0", Value: bson.D{{Key: []string{"$gt", "$lte", "$in"}[g.r.Intn(3)], Value: n()}}}}
	case 24:
		f = bson.D{{Key: "loc", Value: g.geoPredicate()}}
	}
	return modelRaw(f)
}

// point is a location: a GeoJSON point or a legacy pair, on a grid of
// half degrees near the origin, so that documents share places.
func (g *modelGen) point() any {
	lng, lat := float64(g.r.Intn(9)-4)/2, float64(g.r.Intn(9)-4)/2
	if g.r.Intn(3) == 0 {
		return bson.A{lng, lat}
	}
	return bson.D{{Key: "type", Value: "Point"}, {Key: "coordinates", Value: bson.A{lng, lat}}}
}

// geoPredicate is a $geoWithin or $geoIntersects on loc whose shapes'
// edges fall between the points' grid lines, so that no point lies on a
// boundary, where rounding would decide.
func (g *modelGen) geoPredicate() bson.D {
	c := func() float64 { return float64(g.r.Intn(8)-4)/2 + 0.25 }
	switch g.r.Intn(3) {
	case 0:
		x0, y0 := c(), c()
		x1, y1 := x0+float64(1+g.r.Intn(4))/2, y0+float64(1+g.r.Intn(4))/2
		ring := bson.A{bson.A{x0, y0}, bson.A{x1, y0}, bson.A{x1, y1}, bson.A{x0, y1}, bson.A{x0, y0}}
		return bson.D{{Key: "$geoWithin", Value: bson.D{{Key: "$geometry", Value: bson.D{{Key: "type", Value: "Polygon"}, {Key: "coordinates", Value: bson.A{ring}}}}}}}
	case 1:
		// A radius of 0.0123 radians (about 0.7 degrees) meets no grid
		// point's distance from a center off the grid exactly.
		return bson.D{{Key: "$geoWithin", Value: bson.D{{Key: "$centerSphere", Value: bson.A{bson.A{c(), c()}, 0.0123}}}}}
	}
	x0, y0 := c(), c()
	ring := bson.A{bson.A{x0, y0}, bson.A{x0 + 1, y0}, bson.A{x0 + 1, y0 + 1}, bson.A{x0, y0 + 1}, bson.A{x0, y0}}
	return bson.D{{Key: "$geoIntersects", Value: bson.D{{Key: "$geometry", Value: bson.D{{Key: "type", Value: "Polygon"}, {Key: "coordinates", Value: bson.A{ring}}}}}}}
}

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

func (g *modelGen) sort() bson.Raw {
	fields := []string{"a", "u", "arr", "s.x", "d", "v"}
	var d bson.D
	for i := 1 + g.r.Intn(2); i > 0; i-- {
		f := fields[g.r.Intn(len(fields))]
		dup := false
		for _, e := range d {
			dup = dup || e.Key == f
		}
		if !dup {
			d = append(d, bson.E{Key: f, Value: []int32{1, -1}[g.r.Intn(2)]})
		}
	}
	if g.r.Intn(4) != 0 {
		// A tiebreak on _id makes the order unique.
		d = append(d, bson.E{Key: "_id", Value: []int32{1, -1}[g.r.Intn(2)]})
	}
	return modelRaw(d)
}

func (g *modelGen) projection() bson.Raw {
	switch g.r.Intn(6) {
	case 0:
		return modelRaw(bson.D{{Key: "a", Value: 1}})
	case 1:
		return modelRaw(bson.D{{Key: "_id", Value: 0}, {Key: "u", Value: 1}, {Key: "arr", Value: 1}})
	case 2:
		return modelRaw(bson.D{{Key: "arr", Value: 0}, {Key: "s", Value: 0}})
	}
	return nil
}

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

var poolIndexNames = []string{"u_1", "a_1", "a_1_v_-1", "v_1", "arr_1", "arr.0_1", "s.x_1", "a_1_u_1", "u_1_arr_1", "arr_-1", "d_1", "d_-1", "_ts_1", "ttl_1", "s.0.x_1", "arr.x_1", "arr.1_-1", "a_hashed", "u_1_a_hashed", "a_-1_ci", "loc_2dsphere", "t_text", "_id_", "nope"}

// hintable index names: complete indexes, whose use cannot change results.
var hintableIndexes = map[string]bool{"a_1": true, "a_1_v_-1": true, "arr_1": true, "arr.0_1": true, "s.x_1": true, "u_1": true, "u_1_arr_1": true, "ttl_1": true, "d_1": true, "s.0.x_1": true, "a_hashed": true, "u_1_a_hashed": true}

func (g *modelGen) next() *modelOp {
	op := &modelOp{}
	if g.views && g.r.Intn(16) == 0 {
		g.viewOp(op)
		return op
	}
	if g.txns && g.r.Intn(4) == 0 {
		g.txnOp(op)
		return op
	}
	switch k := g.r.Intn(122); {
	case k < 14:
		op.Kind = "insert"
		op.Docs = []bson.Raw{g.doc()}
		op.Ordered = true
		op.Bypass = g.r.Intn(8) == 0
		op.Retry = g.r.Intn(5) == 0
	case k < 22:
		op.Kind = "insert"
		for i := 2 + g.r.Intn(4); i > 0; i-- {
			op.Docs = append(op.Docs, g.doc())
		}
		op.Ordered = g.r.Intn(2) == 0
		op.Bypass = g.r.Intn(8) == 0
		op.Retry = g.r.Intn(5) == 0
	case k < 40:
		op.Kind = "update"
		op.Filter = g.filter()
		g.setUpdate(op)
		op.Multi = op.Upd != nil && g.r.Intn(3) == 0 && !strings.HasPrefix(op.Upd.String(), `{"_id"`) && bsonFirstKeyIsOp(op.Upd)
		op.Upsert = g.r.Intn(2) == 0
		if !op.Multi && g.r.Intn(3) == 0 {
			op.Sort = g.sort()
		}
		op.Bypass = g.r.Intn(8) == 0
		op.Retry = !op.Multi && g.r.Intn(5) == 0
		g.maybeCollation(op)
		g.maybeLet(op)
	case k < 52:
		op.Kind = "findAndModify"
		op.Filter = g.filter()
		op.Remove = g.r.Intn(4) == 0
		if !op.Remove {
			g.setUpdate(op)
			op.Upsert = g.r.Intn(2) == 0
		}
		op.New = g.r.Intn(2) == 0
		if g.r.Intn(2) == 0 {
			op.Sort = g.sort()
		}
		op.Proj = g.projection()
		op.Bypass = !op.Remove && g.r.Intn(8) == 0
		op.Retry = g.r.Intn(5) == 0
		g.maybeCollation(op)
		g.maybeLet(op)
	case k < 60:
		op.Kind = "delete"
		op.Filter = g.filter()
		if g.r.Intn(2) == 0 {
			op.Limit = 1
		}
		op.Retry = g.r.Intn(5) == 0
		g.maybeCollation(op)
		g.maybeLet(op)
		if g.r.Intn(8) == 0 {
			g.nearDelete(op) // model_near_test.go
		}
	case k < 66:
		op.Kind = "count"
		op.Filter = g.filter()
		if g.r.Intn(3) == 0 {
			op.Skip, op.Limit = int64(g.r.Intn(3)), int64(g.r.Intn(4))
		}
		op.Hint = g.hint()
		g.maybeCollation(op)
		g.maybeText(op)
		if g.r.Intn(8) == 0 {
			g.nearCount(op) // model_near_test.go
		}
	case k < 71:
		op.Kind = "distinct"
		op.Filter = g.filter()
		op.Key = []string{"a", "u", "arr", "s.x", "_id", "v", "ttl", "arr.0", "s.0.x", "arr.1"}[g.r.Intn(10)]
	case k < 84:
		op.Kind = "find"
		op.Filter = g.filter()
		if g.r.Intn(3) != 0 {
			op.Sort = g.sort()
		}
		op.Proj = g.projection()
		if g.r.Intn(3) == 0 {
			op.Skip, op.Limit = int64(g.r.Intn(3)), int64(g.r.Intn(4))
		}
		op.Hint = g.hint()
		if g.r.Intn(5) == 0 {
			g.minMax(op)
		}
		op.ReturnKey = op.Hint.Type != 0 && g.r.Intn(3) == 0
		if op.Hint.Type == 0 && op.Min == nil && op.Max == nil && g.r.Intn(6) == 0 {
			g.nearFind(op)
			break
		}
		if op.Min == nil && op.Max == nil && !op.ReturnKey {
			// min and max bound the hinted index's keys as stored,
			// whatever the collation (docs/compatibility.md).
			g.maybeCollation(op)
			g.maybeText(op)
		}
		g.maybeLet(op)
	case k < 91:
		op.Kind = "createIndexes"
		op.Specs = []bson.Raw{g.indexSpec()}
		if g.r.Intn(4) == 0 {
			s := g.indexSpec()
			if s.Lookup("name").StringValue() != op.Specs[0].Lookup("name").StringValue() {
				op.Specs = append(op.Specs, s)
			}
		}
	case k < 94:
		op.Kind = "dropIndexes"
		switch g.r.Intn(6) {
		case 0:
			op.Which = rawValue("*")
		case 1:
			op.Which = rawValue(g.indexSpec().Lookup("key").Document())
		case 2:
			op.Which = rawValue(bson.A{poolIndexNames[g.r.Intn(len(poolIndexNames))], poolIndexNames[g.r.Intn(len(poolIndexNames))]})
		default:
			op.Which = rawValue(poolIndexNames[g.r.Intn(len(poolIndexNames))])
		}
	case k < 97:
		op.Kind = "collMod"
		if g.r.Intn(3) == 0 {
			op.IxKey = g.indexSpec().Lookup("key").Document()
		} else {
			op.IxName = []string{"_ts_1", "_ts_1", "d_1", "d_-1", "a_1", "a_1_v_-1", "nope"}[g.r.Intn(7)]
		}
		if g.r.Intn(4) == 0 {
			op.Hide = 1 + g.r.Intn(2)
		} else {
			op.Expire = rawValue([]any{int32(-1), int32(1), int32(5), int32(30), int64(3600), int32(0), int32(-3), 2.5}[g.r.Intn(8)])
		}
	case k < 104:
		op.Kind = "clock"
		op.Dur = time.Duration(g.r.Intn(9000)) * time.Millisecond
		if g.r.Intn(10) == 0 {
			op.Dur = -time.Duration(g.r.Intn(6000)) * time.Millisecond
		}
	case k < 109:
		op.Kind = "reap"
	case k < 110:
		if g.noDrop {
			op.Kind = "reap"
		} else {
			op.Kind = "drop"
		}
	case k < 114:
		// A cursor read in two parts with the clock moved in between:
		// what expires meanwhile must not come back (rule 15).
		op.Kind = "findBatches"
		op.Filter = g.filter()
		if g.r.Intn(2) == 0 {
			op.Sort = g.sort()
		}
		op.Dur = time.Duration(g.r.Intn(15000)) * time.Millisecond
	case k < 116:
		if g.noDrop {
			op.Kind = "reap"
		} else {
			op.Kind = "restart"
		}
	case k < 119:
		if g.r.Intn(3) == 0 {
			op.Kind, op.PreImages = "preImages", g.r.Intn(2) == 0
		} else {
			g.setValidation(op)
		}
	default:
		g.aggregate(op)
	}
	return op
}

// modelPhrases are the values of documents' t, which the text index
// indexes: words that share stems, stop words, case and accents.
var modelPhrases = []string{"Coffee and cakes", "coffee shop", "Baking a cake", "baked", "café con leche", "Cafe", "the shop", "shopping for COFFEE"}

// maybeText makes a read without a hint a $text search one time in
// four: terms, a phrase or a negation, sometimes case sensitive.
func (g *modelGen) maybeText(op *modelOp) {
	if op.Hint.Type != 0 || g.r.Intn(4) != 0 {
		return
	}
	search := []string{"coffee", "cake bake", "\"coffee shop\"", "coffee -shop", "café", "shopping", "the", "COFFEE"}[g.r.Intn(8)]
	t := bson.D{{Key: "$search", Value: search}}
	if g.r.Intn(4) == 0 {
		t = append(t, bson.E{Key: "$caseSensitive", Value: true})
	}
	op.Filter = modelRaw(bson.D{{Key: "$text", Value: t}})
}

// caseInsensitive is the collation of the model's collated index, and
// one a query may name.
var caseInsensitive = bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: int32(2)}}

// maybeCollation has a read name a collation, one time in three: one that
// ignores case, one that also ignores accents, or the simple one. Half of
// those reads then filter on strings, where the collation tells.
func (g *modelGen) maybeCollation(op *modelOp) {
	switch g.r.Intn(9) {
	case 0:
		op.Collation = modelRaw(caseInsensitive)
	case 1:
		op.Collation = modelRaw(bson.D{{Key: "locale", Value: "fr"}, {Key: "strength", Value: int32(1)}})
	case 2:
		op.Collation = modelRaw(bson.D{{Key: "locale", Value: "simple"}})
	default:
		return
	}
	if g.r.Intn(2) == 0 {
		return
	}
	str := func() string { return []string{"x", "y", "X"}[g.r.Intn(3)] }
	switch g.r.Intn(4) {
	case 0:
		op.Filter = modelRaw(bson.D{{Key: "a", Value: str()}})
	case 1:
		op.Filter = modelRaw(bson.D{{Key: "a", Value: bson.D{{Key: "$in", Value: bson.A{str(), str()}}}}})
	case 2:
		op.Filter = modelRaw(bson.D{{Key: "a", Value: bson.D{{Key: []string{"$gt", "$gte", "$lt", "$lte", "$ne"}[g.r.Intn(5)], Value: str()}}}})
	case 3:
		op.Filter = modelRaw(bson.D{{Key: "arr", Value: str()}})
	}
}

func (g *modelGen) hint() bson.RawValue {
	if g.r.Intn(4) != 0 {
		return bson.RawValue{}
	}
	names := make([]string, 0, len(hintableIndexes))
	for _, n := range poolIndexNames {
		if hintableIndexes[n] {
			names = append(names, n)
		}
	}
	if g.r.Intn(5) == 0 {
		return rawValue(bson.D{{Key: "$natural", Value: 1}})
	}
	return rawValue(names[g.r.Intn(len(names))])
}

func bsonFirstKeyIsOp(doc bson.Raw) bool {
	el, err := doc.IndexErr(0)
	return err == nil && strings.HasPrefix(el.Key(), "$")
}
