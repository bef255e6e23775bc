package expr

import (
	"crypto/md5"
	"encoding/binary"
	"hash"
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
)

// $toHashedIndexKey is the key a hashed index keeps for a value: the first
// eight bytes, little-endian, of an MD5 digest of the seed 0, the value's
// canonical type, and its encoding, with every number as a 64-bit integer
// so that 1, 1.0 and NumberLong(1) hash alike, and documents and arrays
// element by element with their field names.

func compileToHashedIndexKey(c *exprCompiler, name string, args bsoncore.Value) (exprNode, error) {
	// The argument is one expression, not a list: an array is hashed whole.
	n, err := c.compile(args)
	if err != nil {
		return nil, err
	}
	return &funcExpr{name: name, args: []exprNode{n}, fn: func(v []bsoncore.Value) (bsoncore.Value, error) {
		return int64Value(hashedIndexKey(v[0])), nil
	}}, nil
}

// HashedIndexKey is the key a hashed index keeps for v (missing hashed as
// null), the value $toHashedIndexKey returns.
func HashedIndexKey(v bsoncore.Value) int64 { return hashedIndexKey(v) }

// hashedIndexKey hashes v, with missing hashed as null.
func hashedIndexKey(v bsoncore.Value) int64 {
	if v.Type == 0 {
		v = bsonvalue.Null
	}
	h := md5.New()
	h.Write(make([]byte, 4)) // the seed, 0
	hashValue(h, v)
	return int64(binary.LittleEndian.Uint64(h.Sum(nil)))
}

// hashValue hashes a value: its canonical type, then its encoding.
func hashValue(h hash.Hash, v bsoncore.Value) {
	h.Write(binary.LittleEndian.AppendUint32(nil, uint32(canonicalType(v.Type))))
	hashEncoding(h, v)
}

// hashElements hashes each element of a document or array with its name
// and NUL, then the final EOO, which counts as its canonical type alone.
func hashElements(h hash.Hash, doc []byte) {
	it := bsonvalue.ElementsOf(doc)
	for {
		name, e, ok := it.Next()
		if !ok {
			break
		}
		h.Write(binary.LittleEndian.AppendUint32(nil, uint32(canonicalType(e.Type))))
		h.Write(name)
		h.Write([]byte{0})
		hashEncoding(h, e)
	}
	h.Write(make([]byte, 4))
}

// hashEncoding hashes what follows a value's canonical type: numbers as
// 64-bit integers, documents and arrays element by element, and other
// values as their encoding.
func hashEncoding(h hash.Hash, v bsoncore.Value) {
	switch v.Type {
	case bsoncore.TypeDouble, bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDecimal128:
		h.Write(binary.LittleEndian.AppendUint64(nil, uint64(hashInteger(v))))
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		hashElements(h, v.Data)
	case bsoncore.TypeCodeWithScope:
		// The code's bytes with its final NUL, then the scope.
		n := int(binary.LittleEndian.Uint32(v.Data[4:]))
		h.Write(v.Data[8 : 8+n])
		hashElements(h, v.Data[8+n:])
	default:
		h.Write(v.Data)
	}
}

// hashInteger is the 64-bit integer a number hashes as: doubles truncated,
// decimals rounded half to even, NaN as 0, and values out of range as the
// nearest bound.
func hashInteger(v bsoncore.Value) int64 {
	switch v.Type {
	case bsoncore.TypeInt32:
		return int64(v.Int32())
	case bsoncore.TypeInt64:
		return v.Int64()
	case bsoncore.TypeDouble:
		f := v.Double()
		switch {
		case math.IsNaN(f):
			return 0
		case f >= 0x1p63:
			return math.MaxInt64
		case f < -0x1p63:
			return math.MinInt64
		}
		return int64(f)
	}
	d := decimalOf(v)
	switch {
	case d.form == notANumber:
		return 0
	case d.form == infinite && d.neg:
		return math.MinInt64
	case d.form == infinite:
		return math.MaxInt64
	}
	if n, ok := d.int64(roundHalfEven); ok {
		return n
	}
	if d.neg {
		return math.MinInt64
	}
	return math.MaxInt64
}

// canonicalType is MongoDB's rank of a type in comparisons, which types
// that compare as one share.
func canonicalType(t bsoncore.Type) int32 {
	switch t {
	case bsoncore.TypeMinKey:
		return -1
	case bsoncore.TypeMaxKey:
		return 127
	case bsoncore.TypeUndefined, 0:
		return 0
	case bsoncore.TypeNull:
		return 5
	case bsoncore.TypeDouble, bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDecimal128:
		return 10
	case bsoncore.TypeString, bsoncore.TypeSymbol:
		return 15
	case bsoncore.TypeEmbeddedDocument:
		return 20
	case bsoncore.TypeArray:
		return 25
	case bsoncore.TypeBinary:
		return 30
	case bsoncore.TypeObjectID:
		return 35
	case bsoncore.TypeBoolean:
		return 40
	case bsoncore.TypeDateTime:
		return 45
	case bsoncore.TypeTimestamp:
		return 47
	case bsoncore.TypeRegex:
		return 50
	case bsoncore.TypeDBPointer:
		return 55
	case bsoncore.TypeJavaScript:
		return 60
	}
	return 65 // code with scope
}
