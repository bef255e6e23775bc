package update

import (
	"bytes"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// value is a BSON value being rebuilt by an update. A document or array keeps
// its encoded form until an update reaches into it, so that untouched parts of
// a document are copied, not decoded and re-encoded.
type value struct {
	typ      bsoncore.Type
	data     []byte // the encoded value, while not expanded
	expanded bool
	fields   []field  // an expanded document
	elems    []*value // an expanded array
}

type field struct {
	name string
	val  *value
}

// newValue wraps v. The bytes are shared, never written to: changes replace
// whole values.
func newValue(v bsoncore.Value) *value {
	return &value{typ: v.Type, data: v.Data}
}

func newDocument() *value {
	return &value{typ: bsoncore.TypeEmbeddedDocument, expanded: true}
}

func newArray() *value {
	return &value{typ: bsoncore.TypeArray, expanded: true}
}

func (v *value) isDocument() bool { return v.typ == bsoncore.TypeEmbeddedDocument }
func (v *value) isArray() bool    { return v.typ == bsoncore.TypeArray }

// expand decodes the children of a document or array so that they can be
// changed. Documents reaching this package have been validated, so the
// encoding is well formed.
func (v *value) expand() {
	if v.expanded || !(v.isDocument() || v.isArray()) {
		return
	}
	// The elements as Document.Elements reads them, up to the first that
	// is not valid, decoded into one block of values: an update expands
	// the document it changes on every write, and a slice of elements
	// and a value apiece were most of its allocations.
	n := countElements(v.data)
	children := make([]value, n)
	if v.isDocument() {
		v.fields = make([]field, n)
	} else {
		v.elems = make([]*value, n)
	}
	var rem []byte
	if n > 0 {
		rem = v.data[4:]
	}
	for i := range children {
		var e bsoncore.Element
		e, rem, _ = bsoncore.ReadElement(rem)
		ev := e.Value()
		children[i] = value{typ: ev.Type, data: ev.Data}
		if v.isDocument() {
			v.fields[i] = field{name: e.Key(), val: &children[i]}
		} else {
			v.elems[i] = &children[i]
		}
	}
	v.expanded, v.data = true, nil
}

// countElements is how many elements Document.Elements returns for doc:
// those before the first it cannot read or that is not valid.
func countElements(doc []byte) int {
	length, rem, ok := bsoncore.ReadLength(doc)
	if !ok {
		return 0
	}
	n := 0
	for length -= 4; length > 1; n++ {
		var e bsoncore.Element
		e, rem, ok = bsoncore.ReadElement(rem)
		length -= int32(len(e))
		if !ok || e.Validate() != nil {
			break
		}
	}
	return n
}

// lookup returns the index of the named field of a document, or -1.
func (v *value) lookup(name string) int {
	v.expand()
	for i, f := range v.fields {
		if f.name == name {
			return i
		}
	}
	return -1
}

// child returns the element a path component names: a field of a document, or
// an element of an array when the component is an index. It returns nil when
// there is no such element.
func (v *value) child(name string) *value {
	switch {
	case v.isDocument():
		if i := v.lookup(name); i >= 0 {
			return v.fields[i].val
		}
	case v.isArray():
		v.expand()
		if i, ok := arrayIndex(name); ok && i < len(v.elems) {
			return v.elems[i]
		}
	}
	return nil
}

// appendField adds a field at the end of a document.
func (v *value) appendField(name string, child *value) {
	v.expand()
	v.fields = append(v.fields, field{name: name, val: child})
}

// removeField removes the named field of a document, if present.
func (v *value) removeField(name string) {
	if i := v.lookup(name); i >= 0 {
		v.fields = append(v.fields[:i], v.fields[i+1:]...)
	}
}

// replace makes v hold bv.
func (v *value) replace(bv bsoncore.Value) {
	*v = value{typ: bv.Type, data: bv.Data}
}

// encoded returns v as a bsoncore value, encoding expanded containers.
func (v *value) encoded() bsoncore.Value {
	if !v.expanded {
		return bsoncore.Value{Type: v.typ, Data: v.data}
	}
	return bsoncore.Value{Type: v.typ, Data: v.appendTo(nil)}
}

// appendTo appends the encoding of v, without type or name, to dst.
func (v *value) appendTo(dst []byte) []byte {
	if !v.expanded {
		return append(dst, v.data...)
	}
	idx, dst := bsoncore.ReserveLength(dst)
	if v.isDocument() {
		for _, f := range v.fields {
			dst = bsoncore.AppendHeader(dst, f.val.typ, f.name)
			dst = f.val.appendTo(dst)
		}
	} else {
		for i, e := range v.elems {
			dst = bsoncore.AppendHeader(dst, e.typ, strconv.Itoa(i))
			dst = e.appendTo(dst)
		}
	}
	dst = append(dst, 0)
	return bsoncore.UpdateLength(dst, idx, int32(len(dst)-int(idx)))
}

// identical reports whether v holds exactly bv: the same type and the same
// bytes, as MongoDB decides that a $set changes nothing.
func (v *value) identical(bv bsoncore.Value) bool {
	cur := v.encoded()
	return cur.Type == bv.Type && bytes.Equal(cur.Data, bv.Data)
}
