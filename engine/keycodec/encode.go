package keycodec

import (
	"bytes"
	"encoding/binary"

	"github.com/lethedb/lethe/bsonvalue"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// A key is the value's class byte followed by a body whose layout depends on
// the class. Every body is self-delimiting, which makes keys prefix-free: no
// key is a proper prefix of another. That is what lets keys be concatenated,
// and lets a descending key be made by inverting bytes, since inverting the
// bytes of prefix-free strings exactly reverses their order.
const (
	// endOfContainer follows the last element of a document or array. It is
	// below every class byte, so a container sorts before any longer one it
	// is a prefix of.
	endOfContainer = 0x00

	// Strings end with 0x00 endOfString; a 0x00 inside a string is followed
	// by escapedNUL instead. endOfString < escapedNUL < any other byte after
	// the 0x00 makes a string sort before its extensions.
	endOfString = 0x01
	escapedNUL  = 0xff
)

// Append appends the key of v to dst and returns the extended slice. Keys
// order as their values do, bytes.Compare(Append(nil, a), Append(nil, b)) ==
// Compare(a, b), and values that compare equal, such as int32 1 and double
// 1.0, have identical keys.
func Append(dst []byte, v bsoncore.Value) []byte {
	class := TypeClass(v.Type)
	dst = append(dst, byte(class))
	return appendBody(dst, class, v)
}

// AppendDesc appends the key of v for a descending index field: the key of
// Append with every byte inverted, so that keys sort in reverse order. The key
// is still self-delimiting, so fields that follow it in a compound key keep
// their own order.
func AppendDesc(dst []byte, v bsoncore.Value) []byte {
	start := len(dst)
	dst = Append(dst, v)
	invert(dst[start:])
	return dst
}

func invert(b []byte) {
	for i := range b {
		b[i] = ^b[i]
	}
}

// appendBody appends the class-specific part of v's key.
func appendBody(dst []byte, class int, v bsoncore.Value) []byte {
	switch class {
	case classNumber:
		return appendNumber(dst, readNumber(v))
	case classString, classJavaScript:
		return appendString(dst, stringBytes(v.Data))
	case classObject:
		return appendContainer(dst, v.Data, true)
	case classArray:
		return appendContainer(dst, v.Data, false)
	case classBinary:
		// Length first, as the comparison puts it first.
		subtype, bin, _ := v.BinaryOK()
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(bin)))
		dst = append(dst, subtype)
		return append(dst, bin...)
	case classObjectID:
		oid, _ := v.ObjectIDOK()
		return append(dst, oid[:]...)
	case classBoolean:
		b, _ := v.BooleanOK()
		return append(dst, byte(boolRank(b)))
	case classDateTime:
		ms, _ := v.DateTimeOK()
		return binary.BigEndian.AppendUint64(dst, uint64(ms)^1<<63)
	case classTimestamp:
		t, i, _ := v.TimestampOK()
		dst = binary.BigEndian.AppendUint32(dst, t)
		return binary.BigEndian.AppendUint32(dst, i)
	case classRegex:
		pattern, options := regexParts(v.Data)
		return appendString(appendString(dst, pattern), options)
	case classDBPointer:
		ns, oid := dbPointerParts(v.Data)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(ns)))
		dst = append(dst, ns...)
		return append(dst, oid[:]...)
	case classCodeWithScope:
		code, scope := codeWithScopeParts(v.Data)
		return appendContainer(appendString(dst, code), scope, true)
	}
	// The remaining classes each have a single value: the class byte is enough.
	return dst
}

// appendContainer appends each element of a document or array as its class
// byte, its name (documents only) and its body, then endOfContainer.
func appendContainer(dst, container []byte, withNames bool) []byte {
	elems := bsonvalue.ElementsOf(container)
	for name, v, ok := elems.Next(); ok; name, v, ok = elems.Next() {
		class := TypeClass(v.Type)
		dst = append(dst, byte(class))
		if withNames {
			dst = appendString(dst, name)
		}
		dst = appendBody(dst, class, v)
	}
	return append(dst, endOfContainer)
}

func appendString(dst, s []byte) []byte {
	for {
		i := bytes.IndexByte(s, 0x00)
		if i < 0 {
			break
		}
		dst = append(dst, s[:i+1]...)
		dst = append(dst, escapedNUL)
		s = s[i+1:]
	}
	dst = append(dst, s...)
	return append(dst, 0x00, endOfString)
}
