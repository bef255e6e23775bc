package query

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
)

// bitTestKind is one of the four bitwise query operators.
type bitTestKind uint8

const (
	bitsAllSet bitTestKind = iota
	bitsAnySet
	bitsAllClear
	bitsAnyClear
)

// bitTest tests bits of integers (in two's complement, sign-extended past
// bit 63) and of binary data (least significant bit of the first byte
// first). Doubles that are not whole numbers and other types never match.
type bitTest struct {
	kind      bitTestKind
	positions []uint32
}

func (b *bitTest) test(v bsoncore.Value) bool {
	var n int64
	var bin []byte
	switch v.Type {
	case bsoncore.TypeBinary:
		_, bin, _ = v.BinaryOK()
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		var ok bool
		if n, ok = bsonvalue.IntegerValue(v); !ok {
			return false
		}
	default:
		return false
	}
	wantSet := b.kind == bitsAllSet || b.kind == bitsAnySet
	needAll := b.kind == bitsAllSet || b.kind == bitsAllClear
	for _, p := range b.positions {
		var set bool
		if v.Type == bsoncore.TypeBinary {
			set = int(p/8) < len(bin) && bin[p/8]&(1<<(p%8)) != 0
		} else if p >= 64 {
			set = n < 0
		} else {
			set = n&(1<<p) != 0
		}
		if set == wantSet && !needAll {
			return true
		}
		if set != wantSet && needAll {
			return false
		}
	}
	return needAll
}

func compileBitTest(kind bitTestKind) fieldOperator {
	return func(op operand) (fieldExpr, error) {
		test := &bitTest{kind: kind}
		var err error
		switch {
		case op.value.Type == bsoncore.TypeArray:
			test.positions, err = bitPositionList(op.value.Data)
		case op.value.IsNumber():
			test.positions, err = bitMaskPositions(op)
		case op.value.Type == bsoncore.TypeBinary:
			_, mask, _ := op.value.BinaryOK()
			test.positions = setBits(mask)
		default:
			err = mongoerr.New(mongoerr.BadValue, "%s takes an Array, a number, or a BinData but received: %s: %s",
				op.path, op.name, numberString(op.value))
		}
		if err != nil {
			return nil, err
		}
		return &leafExpr{pred: test, leafArrays: true}, nil
	}
}

// bitPositionList reads an array of bit positions.
func bitPositionList(list []byte) ([]uint32, error) {
	var positions []uint32
	it := bsonvalue.ElementsOf(list)
	for {
		_, e, ok := it.Next()
		if !ok {
			return positions, nil
		}
		if !e.IsNumber() {
			return nil, mongoerr.New(mongoerr.BadValue, "bit positions must be an integer but got: %s", numberString(e))
		}
		if isNaN(e) {
			return nil, mongoerr.New(mongoerr.BadValue, "bit positions cannot take a NaN: %s", numberString(e))
		}
		p, whole := bsonvalue.IntegerValue(e)
		if !whole {
			p, _ = truncatedValue(e)
		}
		switch {
		case p < math.MinInt32 || p > math.MaxInt32:
			return nil, mongoerr.New(mongoerr.BadValue, "bit positions cannot be represented as a 32-bit signed integer: %s", numberString(e))
		case !whole:
			return nil, mongoerr.New(mongoerr.BadValue, "bit positions must be an integer but got: %s", numberString(e))
		case p < 0:
			return nil, mongoerr.New(mongoerr.BadValue, "bit positions must be >= 0 but got: %s", numberString(e))
		}
		positions = append(positions, uint32(p))
	}
}

// bitMaskPositions reads a numeric bitmask, which must be a non-negative
// integer.
func bitMaskPositions(op operand) ([]uint32, error) {
	v := op.value
	mask, whole := bsonvalue.IntegerValue(v)
	switch {
	case isNaN(v):
		return nil, mongoerr.New(mongoerr.FailedToParse, "Expected an integer, but found NaN in: %s: %s", op.name, numberString(v))
	case !whole && isBeyondInt64(v):
		return nil, mongoerr.New(mongoerr.FailedToParse, "Cannot represent as a 64-bit integer: %s: %s", op.name, numberString(v))
	case !whole:
		return nil, mongoerr.New(mongoerr.FailedToParse, "Expected an integer: %s: %s", op.name, numberString(v))
	case mask < 0:
		return nil, mongoerr.New(mongoerr.FailedToParse, "Expected a positive number in: %s: %s", op.name, numberString(v))
	}
	var positions []uint32
	for p := uint32(0); p < 63; p++ {
		if mask&(1<<p) != 0 {
			positions = append(positions, p)
		}
	}
	return positions, nil
}

// isBeyondInt64 reports whether a double is beyond the int64 range.
func isBeyondInt64(v bsoncore.Value) bool {
	f, ok := v.DoubleOK()
	return ok && (f >= 0x1p63 || f < -0x1p63)
}

// setBits lists the set bits of a binary bitmask.
func setBits(mask []byte) []uint32 {
	var positions []uint32
	for i, b := range mask {
		for bit := uint32(0); bit < 8; bit++ {
			if b&(1<<bit) != 0 {
				positions = append(positions, uint32(i)*8+bit)
			}
		}
	}
	return positions
}
