package query

import (
	"math"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
)

// exists matches any value that is there, null included.
type exists struct{}

func (exists) test(v bsoncore.Value) bool { return v.Type != 0 }

func compileExists(op operand) (fieldExpr, error) {
	e := &leafExpr{pred: exists{}, leafArrays: true}
	if bsonvalue.Truthy(op.value) {
		return e, nil
	}
	return notExpr{e}, nil
}

// typeSet matches values whose BSON type is in the set.
type typeSet [4]uint64

func (s *typeSet) add(t bsoncore.Type) { s[t/64] |= 1 << (t % 64) }

func (s *typeSet) test(v bsoncore.Value) bool {
	return v.Type != 0 && s[v.Type/64]&(1<<(v.Type%64)) != 0
}

func compileType(op operand) (fieldExpr, error) {
	var set typeSet
	empty := true
	add := func(v bsoncore.Value) error {
		empty = false
		return addType(&set, v)
	}
	if op.value.Type == bsoncore.TypeArray {
		it := bsonvalue.ElementsOf(op.value.Data)
		for {
			_, e, ok := it.Next()
			if !ok {
				break
			}
			if err := add(e); err != nil {
				return nil, err
			}
		}
		if empty {
			return nil, mongoerr.New(mongoerr.FailedToParse, "%s must match at least one type", op.path)
		}
	} else if err := add(op.value); err != nil {
		return nil, err
	}
	return &leafExpr{pred: &set, leafArrays: true}, nil
}

// addType adds the type named by a $type operand, an alias or a type number.
func addType(set *typeSet, v bsoncore.Value) error {
	if name, ok := v.StringValueOK(); ok {
		if name == "number" {
			for _, t := range []bsoncore.Type{bsoncore.TypeDouble, bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDecimal128} {
				set.add(t)
			}
			return nil
		}
		if name == "missing" {
			return mongoerr.New(mongoerr.BadValue, "'missing' is not a legal type name. To query for non-existence of a field, use {$exists:false}.")
		}
		t, ok := bsonvalue.TypeByAlias(name)
		if !ok {
			return mongoerr.New(mongoerr.BadValue, "Unknown type name alias: %s", name)
		}
		set.add(t)
		return nil
	}
	if !v.IsNumber() {
		return mongoerr.New(mongoerr.TypeMismatch, "type must be represented as a number or a string")
	}
	code, ok := bsonvalue.IntegerValue(v)
	switch {
	case ok && code == 0:
		return mongoerr.New(mongoerr.BadValue, "Invalid numerical type code: 0. Instead use {$exists:false}.")
	case ok && code == -1:
		set.add(bsoncore.TypeMinKey)
	case ok && (code >= 1 && code <= 19 || code == 127):
		set.add(bsoncore.Type(code))
	default:
		return mongoerr.New(mongoerr.BadValue, "Invalid numerical type code: %s", numberString(v))
	}
	return nil
}

// numberString renders a number the way it was written, for error messages.
func numberString(v bsoncore.Value) string {
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		n, _ := bsonvalue.IntegerValue(v)
		return strconv.FormatInt(n, 10)
	case bsoncore.TypeDouble:
		f, _ := v.DoubleOK()
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return strconv.FormatFloat(f, 'g', -1, 64)
		}
		return strconv.FormatFloat(f, 'f', -1, 64)
	case bsoncore.TypeDecimal128:
		hi, lo, _ := v.Decimal128OK()
		return bson.NewDecimal128(hi, lo).String()
	}
	return v.String()
}
