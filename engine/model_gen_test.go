package engine

import (
	"math/rand"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

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
		if g.r.Intn(8) == 0 {
			g.nearWrite(op) // model_near_write_test.go
		}
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
		if g.r.Intn(8) == 0 {
			g.nearWrite(op) // model_near_write_test.go
		}
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

func bsonFirstKeyIsOp(doc bson.Raw) bool {
	el, err := doc.IndexErr(0)
	return err == nil && strings.HasPrefix(el.Key(), "$")
}
