package update

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/mongoerr"
)

// setOp is $set, and $setOnInsert: the element takes the operand's value.
type setOp struct{ val bsoncore.Value }

func parseSet(_ string, v bsoncore.Value) (*leaf, error) {
	return &leaf{op: setOp{v}}, nil
}

func parseSetOnInsert(_ string, v bsoncore.Value) (*leaf, error) {
	return &leaf{op: setOp{v}, insertOnly: true}, nil
}

func (o setOp) update(_ *applier, t target) (bool, error) {
	if t.elem.identical(o.val) {
		return false, nil
	}
	t.elem.replace(o.val)
	return true, nil
}

func (o setOp) create(*applier) (*value, error) { return newValue(o.val), nil }

// unsetOp is $unset. It removes a field, but nulls an array element, so that
// the elements after it keep their indexes.
type unsetOp struct{}

func parseUnset(string, bsoncore.Value) (*leaf, error) {
	return &leaf{op: unsetOp{}, tolerant: true, removes: true}, nil
}

func (unsetOp) update(_ *applier, t target) (bool, error) {
	if t.parent.isArray() {
		t.elem.replace(bsoncore.Value{Type: bsoncore.TypeNull})
	} else {
		t.parent.removeField(t.name())
	}
	return true, nil
}

func (unsetOp) create(*applier) (*value, error) { return nil, nil }

// compareOp is $min and $max: the element takes the operand's value when
// that sorts before (min) or after (max) the current one.
type compareOp struct {
	val  bsoncore.Value
	max  bool
	coll *collation.Collator // strings compare under it
}

func parseMin(_ string, v bsoncore.Value) (*leaf, error) { return &leaf{op: compareOp{val: v}}, nil }
func parseMax(_ string, v bsoncore.Value) (*leaf, error) {
	return &leaf{op: compareOp{val: v, max: true}}, nil
}

// parseMinMaxUnder is $min or $max under a collation.
func parseMinMaxUnder(max bool) func(*collation.Collator) func(string, bsoncore.Value) (*leaf, error) {
	return func(coll *collation.Collator) func(string, bsoncore.Value) (*leaf, error) {
		return func(_ string, v bsoncore.Value) (*leaf, error) {
			return &leaf{op: compareOp{val: v, max: max, coll: coll}}, nil
		}
	}
}

func (o compareOp) update(_ *applier, t target) (bool, error) {
	c := o.coll.Compare(t.elem.encoded(), o.val)
	if c == 0 || o.max == (c > 0) {
		return false, nil
	}
	t.elem.replace(o.val)
	return true, nil
}

func (o compareOp) create(*applier) (*value, error) { return newValue(o.val), nil }

// currentDateOp is $currentDate. It always writes, so it always changes the
// document.
type currentDateOp struct{ timestamp bool }

func parseCurrentDate(_ string, v bsoncore.Value) (*leaf, error) {
	switch v.Type {
	case bsoncore.TypeBoolean:
		return &leaf{op: currentDateOp{}}, nil
	case bsoncore.TypeEmbeddedDocument:
	default:
		return nil, mongoerr.New(mongoerr.BadValue, "%s is not valid type for $currentDate. Please use a boolean ('true') or a $type expression ({$type: 'timestamp/date'}).", typeName(v.Type))
	}
	elems, _ := v.Document().Elements()
	var op currentDateOp
	valid := false
	for _, e := range elems {
		if e.Key() != "$type" {
			return nil, mongoerr.New(mongoerr.BadValue, "Unrecognized $currentDate option: %s", e.Key())
		}
		switch s, _ := e.Value().StringValueOK(); s {
		case "date":
			op, valid = currentDateOp{}, true
		case "timestamp":
			op, valid = currentDateOp{timestamp: true}, true
		}
	}
	if !valid {
		return nil, mongoerr.New(mongoerr.BadValue, "The '$type' string field is required to be 'date' or 'timestamp': {$currentDate: {field : {$type: 'date'}}}")
	}
	return &leaf{op: op}, nil
}

func (o currentDateOp) value(a *applier) bsoncore.Value {
	if o.timestamp {
		// The increment orders writes within a second of an oplog; there
		// is no oplog here, so every timestamp is the first of its second.
		return bsoncore.Value{Type: bsoncore.TypeTimestamp, Data: bsoncore.AppendTimestamp(nil, uint32(a.now.Unix()), 1)}
	}
	return bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, a.now.UnixMilli())}
}

func (o currentDateOp) update(a *applier, t target) (bool, error) {
	t.elem.replace(o.value(a))
	return true, nil
}

func (o currentDateOp) create(a *applier) (*value, error) { return newValue(o.value(a)), nil }
