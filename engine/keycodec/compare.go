package keycodec

import (
	"bytes"
	"cmp"

	"github.com/lethedb/lethe/bsonvalue"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Compare returns -1, 0 or +1 as a sorts before, with or after b in MongoDB's
// BSON comparison order: first by TypeClass, then by value within the class.
func Compare(a, b bsoncore.Value) int {
	ca, cb := TypeClass(a.Type), TypeClass(b.Type)
	if ca != cb {
		return cmp.Compare(ca, cb)
	}
	return compareInClass(ca, a, b)
}

// CompareDocuments compares two documents the way embedded-document values
// are compared: element by element, each by type class, then field name, then
// value. A document that is a prefix of another sorts first.
func CompareDocuments(a, b bsoncore.Document) int {
	return compareContainers(a, b, true)
}

// compareInClass compares two values of the same type class.
func compareInClass(class int, a, b bsoncore.Value) int {
	switch class {
	case classNumber:
		return compareNumbers(readNumber(a), readNumber(b))
	case classString, classJavaScript:
		return bytes.Compare(stringBytes(a.Data), stringBytes(b.Data))
	case classObject:
		return compareContainers(a.Data, b.Data, true)
	case classArray:
		return compareContainers(a.Data, b.Data, false)
	case classBinary:
		subA, binA, _ := a.BinaryOK()
		subB, binB, _ := b.BinaryOK()
		if c := cmp.Compare(len(binA), len(binB)); c != 0 {
			return c
		}
		if c := cmp.Compare(subA, subB); c != 0 {
			return c
		}
		return bytes.Compare(binA, binB)
	case classObjectID:
		oidA, _ := a.ObjectIDOK()
		oidB, _ := b.ObjectIDOK()
		return bytes.Compare(oidA[:], oidB[:])
	case classBoolean:
		boolA, _ := a.BooleanOK()
		boolB, _ := b.BooleanOK()
		return cmp.Compare(boolRank(boolA), boolRank(boolB))
	case classDateTime:
		msA, _ := a.DateTimeOK()
		msB, _ := b.DateTimeOK()
		return cmp.Compare(msA, msB)
	case classTimestamp:
		tA, iA, _ := a.TimestampOK()
		tB, iB, _ := b.TimestampOK()
		return cmp.Or(cmp.Compare(tA, tB), cmp.Compare(iA, iB))
	case classRegex:
		patternA, optionsA := regexParts(a.Data)
		patternB, optionsB := regexParts(b.Data)
		return cmp.Or(bytes.Compare(patternA, patternB), bytes.Compare(optionsA, optionsB))
	case classDBPointer:
		// As MongoDB does: the shorter namespace first, then the bytes.
		nsA, oidA := dbPointerParts(a.Data)
		nsB, oidB := dbPointerParts(b.Data)
		return cmp.Or(
			cmp.Compare(len(nsA), len(nsB)),
			bytes.Compare(nsA, nsB),
			bytes.Compare(oidA[:], oidB[:]))
	case classCodeWithScope:
		codeA, scopeA := codeWithScopeParts(a.Data)
		codeB, scopeB := codeWithScopeParts(b.Data)
		if c := bytes.Compare(codeA, codeB); c != 0 {
			return c
		}
		return compareContainers(scopeA, scopeB, true)
	}
	// The remaining classes each have a single value.
	return 0
}

// compareContainers compares documents or arrays element by element. Array
// indexes are not compared: an array is ordered by its values alone.
func compareContainers(a, b []byte, withNames bool) int {
	elemsA, elemsB := bsonvalue.ElementsOf(a), bsonvalue.ElementsOf(b)
	for {
		nameA, valA, okA := elemsA.Next()
		nameB, valB, okB := elemsB.Next()
		if !okA || !okB {
			return cmp.Compare(boolRank(okA), boolRank(okB))
		}
		ca, cb := TypeClass(valA.Type), TypeClass(valB.Type)
		if ca != cb {
			return cmp.Compare(ca, cb)
		}
		if withNames {
			if c := bytes.Compare(nameA, nameB); c != 0 {
				return c
			}
		}
		if c := compareInClass(ca, valA, valB); c != 0 {
			return c
		}
	}
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}
