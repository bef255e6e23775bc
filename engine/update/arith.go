package update

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/mongoerr"
)

// arithOp is $inc and $mul.
type arithOp struct {
	operand  number
	multiply bool
}

func parseInc(name string, v bsoncore.Value) (*leaf, error) { return parseArith(name, v, false) }
func parseMul(name string, v bsoncore.Value) (*leaf, error) { return parseArith(name, v, true) }

func parseArith(name string, v bsoncore.Value, multiply bool) (*leaf, error) {
	if !isNumber(v.Type) {
		verb := "increment"
		if multiply {
			verb = "multiply"
		}
		return nil, mongoerr.New(mongoerr.TypeMismatch, "Cannot %s with non-numeric argument: {%s}", verb, describe(name, v))
	}
	return &leaf{op: arithOp{operand: toNumber(v), multiply: multiply}}, nil
}

func (o arithOp) modifier() string {
	if o.multiply {
		return "$mul"
	}
	return "$inc"
}

func (o arithOp) compute(cur number) (number, bool) {
	if o.multiply {
		return mul(o.operand, cur)
	}
	return add(o.operand, cur)
}

func (o arithOp) update(a *applier, t target) (bool, error) {
	cur := t.elem.encoded()
	if !isNumber(cur.Type) {
		return false, mongoerr.New(mongoerr.TypeMismatch, "Cannot apply %s to a value of non-numeric type. {%s} has the field '%s' of non-numeric type %s",
			o.modifier(), a.idString(), t.name(), typeName(cur.Type))
	}
	orig := toNumber(cur)
	res, ok := o.compute(orig)
	if ok && identical(res, orig) {
		return false, nil
	}
	if !ok {
		return false, mongoerr.New(mongoerr.BadValue, "Failed to apply %s operations to current value (%s) for document {%s}",
			o.modifier(), orig.debugString(), a.idString())
	}
	t.elem.replace(res.value())
	return true, nil
}

// create starts a missing field at the operand for $inc, and at a zero of
// the operand's type for $mul.
func (o arithOp) create(*applier) (*value, error) {
	if !o.multiply {
		return newValue(o.operand.value()), nil
	}
	zero, _ := mul(o.operand, number{typ: bsoncore.TypeInt32})
	return newValue(zero.value()), nil
}

// bitOp is $bit: a sequence of and, or and xor on an integer.
type bitOp struct{ steps []bitStep }

type bitStep struct {
	op      string // "and", "or" or "xor"
	operand number
}

func parseBit(_ string, v bsoncore.Value) (*leaf, error) {
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.BadValue, "The $bit modifier is not compatible with a %s. You must pass in an embedded document: {$bit: {field: {and/or/xor: #}}", typeName(v.Type))
	}
	elems, _ := v.Document().Elements()
	var op bitOp
	for _, e := range elems {
		switch e.Key() {
		case "and", "or", "xor":
		default:
			return nil, mongoerr.New(mongoerr.BadValue, "The $bit modifier only supports 'and', 'or', and 'xor', not '%s' which is an unknown operator: {%s}", e.Key(), describe(e.Key(), e.Value()))
		}
		if t := e.Value().Type; t != bsoncore.TypeInt32 && t != bsoncore.TypeInt64 {
			return nil, mongoerr.New(mongoerr.BadValue, "The $bit modifier field must be an Integer(32/64 bit); a '%s' is not supported here: {%s}", typeName(t), describe(e.Key(), e.Value()))
		}
		op.steps = append(op.steps, bitStep{op: e.Key(), operand: toNumber(e.Value())})
	}
	if len(op.steps) == 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "You must pass in at least one bitwise operation. The format is: {$bit: {field: {and/or/xor: #}}")
	}
	return &leaf{op: op}, nil
}

func (o bitOp) compute(n number) number {
	for _, s := range o.steps {
		var r int64
		switch s.op {
		case "and":
			r = n.i & s.operand.i
		case "or":
			r = n.i | s.operand.i
		default:
			r = n.i ^ s.operand.i
		}
		n = intResult(n, s.operand, r)
	}
	return n
}

func (o bitOp) update(a *applier, t target) (bool, error) {
	cur := t.elem.encoded()
	if cur.Type != bsoncore.TypeInt32 && cur.Type != bsoncore.TypeInt64 {
		return false, mongoerr.New(mongoerr.BadValue, "Cannot apply $bit to a value of non-integral type.%s has the field %s of non-integer type %s",
			a.idString(), t.name(), typeName(cur.Type))
	}
	orig := toNumber(cur)
	res := o.compute(orig)
	if identical(res, orig) {
		return false, nil
	}
	t.elem.replace(res.value())
	return true, nil
}

func (o bitOp) create(*applier) (*value, error) {
	return newValue(o.compute(number{typ: bsoncore.TypeInt32}).value()), nil
}
