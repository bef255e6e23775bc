package oplog

import (
	"fmt"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Truncation is an array an update shortened, for a change stream's
// truncatedArrays.
type Truncation struct {
	Field   string
	NewSize int32
}

// Description is what a change stream's update event reports of an update
// entry's $v:2 diff.
type Description struct {
	// Updated is updatedFields: the dotted paths set, a document.
	Updated []byte
	// Removed and Truncated are removedFields and truncatedArrays.
	Removed   []string
	Truncated []Truncation
	// Disambiguated is disambiguatedPaths, a document: each of the paths
	// above that a dotted path leaves ambiguous (one through a field
	// whose name is a number, past the first, or holds a dot), as the
	// array of its parts, field names as strings and array indexes as
	// ints.
	Disambiguated []byte
}

// UpdateDescription describes the o of an update entry. ok is false when o
// is a replacement, which a change stream reports as a replace event.
func UpdateDescription(o []byte) (desc Description, ok bool, err error) {
	od := bsoncore.Document(o)
	if _, err := od.LookupErr("$v"); err != nil {
		return desc, false, nil
	}
	diff, isDoc := od.Lookup("diff").DocumentOK()
	if !isDoc {
		return desc, false, fmt.Errorf("oplog: update entry without diff")
	}
	d := &describer{}
	idx, out := bsoncore.AppendDocumentStart(nil)
	d.out = out
	didx, dis := bsoncore.AppendDocumentStart(nil)
	d.dis = dis
	if err := d.doc(diff); err != nil {
		return desc, false, err
	}
	d.out, _ = bsoncore.AppendDocumentEnd(d.out, idx)
	d.dis, _ = bsoncore.AppendDocumentEnd(d.dis, didx)
	return Description{Updated: d.out, Removed: d.removed, Truncated: d.truncated, Disambiguated: d.dis}, true, nil
}

// part is one component of the path being described.
type part struct {
	name  string
	index bool // an array index, not a field name
	// ambiguous is whether the path up to here is ambiguous as a dotted
	// path; once it is, it stays so.
	ambiguous bool
}

type describer struct {
	parts     []part
	out       []byte
	dis       []byte
	removed   []string
	truncated []Truncation
}

func (d *describer) push(name string, index bool) {
	amb := len(d.parts) > 0 && d.parts[len(d.parts)-1].ambiguous
	if !amb && !index {
		amb = (len(d.parts) > 0 && numericField(name)) || strings.Contains(name, ".")
	}
	d.parts = append(d.parts, part{name: name, index: index, ambiguous: amb})
}

func (d *describer) pop() { d.parts = d.parts[:len(d.parts)-1] }

// numericField reports whether a field name reads as an array index in a
// dotted path: digits without a leading zero.
func numericField(s string) bool {
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// path is the dotted path of the current parts, which it records in
// disambiguatedPaths if it is ambiguous.
func (d *describer) path() string {
	names := make([]string, len(d.parts))
	for i, p := range d.parts {
		names[i] = p.name
	}
	dotted := strings.Join(names, ".")
	if len(d.parts) > 0 && d.parts[len(d.parts)-1].ambiguous {
		aidx, dis := bsoncore.AppendArrayElementStart(d.dis, dotted)
		for i, p := range d.parts {
			key := strconv.Itoa(i)
			if n, err := strconv.Atoi(p.name); p.index && err == nil {
				dis = bsoncore.AppendInt32Element(dis, key, int32(n))
			} else {
				dis = bsoncore.AppendStringElement(dis, key, p.name)
			}
		}
		d.dis, _ = bsoncore.AppendArrayEnd(dis, aidx)
	}
	return dotted
}

func (d *describer) doc(diff bsoncore.Document) error {
	els, err := diff.Elements()
	if err != nil {
		return err
	}
	for _, el := range els {
		switch k := el.Key(); {
		case k == "d":
			fields, _ := el.Value().Document().Elements()
			for _, f := range fields {
				d.push(f.Key(), false)
				d.removed = append(d.removed, d.path())
				d.pop()
			}
		case k == "u" || k == "i":
			fields, _ := el.Value().Document().Elements()
			for _, f := range fields {
				d.push(f.Key(), false)
				d.out = bsoncore.AppendValueElement(d.out, d.path(), f.Value())
				d.pop()
			}
		case len(k) > 1 && k[0] == 's':
			d.push(k[1:], false)
			err := d.sub(el.Value().Document())
			d.pop()
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("oplog: diff section %q", k)
		}
	}
	return nil
}

// sub describes the diff of the field or element the last part names.
func (d *describer) sub(diff bsoncore.Document) error {
	if _, err := diff.LookupErr("a"); err != nil {
		return d.doc(diff)
	}
	els, err := diff.Elements()
	if err != nil {
		return err
	}
	for _, el := range els {
		k := el.Key()
		switch {
		case k == "a":
		case k == "l":
			n, _ := el.Value().AsInt64OK()
			d.truncated = append(d.truncated, Truncation{Field: d.path(), NewSize: int32(n)})
		case len(k) > 1 && (k[0] == 'u' || k[0] == 's'):
			if _, err := strconv.Atoi(k[1:]); err != nil {
				return fmt.Errorf("oplog: array diff field %q", k)
			}
			d.push(k[1:], true)
			if k[0] == 'u' {
				d.out = bsoncore.AppendValueElement(d.out, d.path(), el.Value())
			} else {
				err = d.sub(el.Value().Document())
			}
			d.pop()
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("oplog: array diff field %q", k)
		}
	}
	return nil
}
