package update

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
)

// MongoDB quotes documents and values in its error messages in the shell-like
// notation of its BSON printer. The functions here write that notation so
// that messages read as a MongoDB client expects; they are not a codec.

// describe writes a named element as MongoDB prints it: `a: { b: 1 }`.
func describe(name string, v bsoncore.Value) string {
	var b strings.Builder
	writeElement(&b, name, v)
	return b.String()
}

// describeDocument writes a document as MongoDB prints it.
func describeDocument(doc bsoncore.Document) string {
	var b strings.Builder
	writeContainer(&b, doc, false)
	return b.String()
}

func writeElement(b *strings.Builder, name string, v bsoncore.Value) {
	b.WriteString(name)
	b.WriteString(": ")
	writeValue(b, v)
}

func writeContainer(b *strings.Builder, data []byte, isArray bool) {
	elems, _ := bsoncore.Document(data).Elements()
	open, close := "{", "}"
	if isArray {
		open, close = "[", "]"
	}
	if len(elems) == 0 {
		b.WriteString(open + close)
		return
	}
	b.WriteString(open + " ")
	for i, e := range elems {
		if i > 0 {
			b.WriteString(", ")
		}
		if isArray {
			writeValue(b, e.Value())
		} else {
			writeElement(b, e.Key(), e.Value())
		}
	}
	b.WriteString(" " + close)
}

func writeValue(b *strings.Builder, v bsoncore.Value) {
	switch v.Type {
	case bsoncore.TypeDouble:
		b.WriteString(formatDouble(v.Double()))
	case bsoncore.TypeString:
		b.WriteString(`"` + v.StringValue() + `"`)
	case bsoncore.TypeEmbeddedDocument:
		writeContainer(b, v.Data, false)
	case bsoncore.TypeArray:
		writeContainer(b, v.Data, true)
	case bsoncore.TypeBinary:
		sub, data := v.Binary()
		fmt.Fprintf(b, "BinData(%d, %s)", sub, strings.ToUpper(hex.EncodeToString(data)))
	case bsoncore.TypeUndefined:
		b.WriteString("undefined")
	case bsoncore.TypeObjectID:
		oid := v.ObjectID()
		fmt.Fprintf(b, "ObjectId('%s')", hex.EncodeToString(oid[:]))
	case bsoncore.TypeBoolean:
		b.WriteString(strconv.FormatBool(v.Boolean()))
	case bsoncore.TypeDateTime:
		fmt.Fprintf(b, "new Date(%d)", v.DateTime())
	case bsoncore.TypeNull:
		b.WriteString("null")
	case bsoncore.TypeRegex:
		pattern, options := v.Regex()
		b.WriteString("/" + pattern + "/" + options)
	case bsoncore.TypeInt32:
		b.WriteString(strconv.Itoa(int(v.Int32())))
	case bsoncore.TypeTimestamp:
		t, i := v.Timestamp()
		fmt.Fprintf(b, "Timestamp(%d, %d)", t, i)
	case bsoncore.TypeInt64:
		b.WriteString(strconv.FormatInt(v.Int64(), 10))
	case bsoncore.TypeDecimal128:
		b.WriteString(`NumberDecimal("` + decimalString(v) + `")`)
	case bsoncore.TypeMinKey:
		b.WriteString("MinKey")
	case bsoncore.TypeMaxKey:
		b.WriteString("MaxKey")
	default:
		b.WriteString(typeName(v.Type))
	}
}

// formatDouble prints a double with up to 16 significant digits, marking
// integral values with ".0" as MongoDB does.
func formatDouble(f float64) string {
	s := strconv.FormatFloat(f, 'g', 16, 64)
	if !strings.ContainsAny(s, ".eEN") {
		s += ".0"
	}
	return s
}

// typeName is MongoDB's name for a BSON type.
func typeName(t bsoncore.Type) string { return bsonvalue.TypeName(t) }
