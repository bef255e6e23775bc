package oplog

import (
	"fmt"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Truncation is an array an update shortened, for a change stream's
// truncatedArrays.
type Truncation struct {
	Field   string
	NewSize int32
}

// UpdateDescription is what a change stream's update event reports of an
// update entry's $v:2 diff: the dotted paths set (updatedFields, a
// document), those removed, and the arrays truncated. ok is false when o is
// a replacement, which a change stream reports as a replace event.
func UpdateDescription(o []byte) (updated []byte, removed []string, truncated []Truncation, ok bool, err error) {
	od := bsoncore.Document(o)
	if _, err := od.LookupErr("$v"); err != nil {
		return nil, nil, nil, false, nil
	}
	diff, isDoc := od.Lookup("diff").DocumentOK()
	if !isDoc {
		return nil, nil, nil, false, fmt.Errorf("oplog: update entry without diff")
	}
	d := &describer{}
	idx, out := bsoncore.AppendDocumentStart(nil)
	d.out = out
	if err := d.doc("", diff); err != nil {
		return nil, nil, nil, false, err
	}
	d.out, _ = bsoncore.AppendDocumentEnd(d.out, idx)
	return d.out, d.removed, d.truncated, true, nil
}

type describer struct {
	out       []byte
	removed   []string
	truncated []Truncation
}

func join(prefix, field string) string {
	if prefix == "" {
		return field
	}
	return prefix + "." + field
}

func (d *describer) doc(prefix string, diff bsoncore.Document) error {
	els, err := diff.Elements()
	if err != nil {
		return err
	}
	for _, el := range els {
		switch k := el.Key(); {
		case k == "d":
			fields, _ := el.Value().Document().Elements()
			for _, f := range fields {
				d.removed = append(d.removed, join(prefix, f.Key()))
			}
		case k == "u" || k == "i":
			fields, _ := el.Value().Document().Elements()
			for _, f := range fields {
				d.out = bsoncore.AppendValueElement(d.out, join(prefix, f.Key()), f.Value())
			}
		case len(k) > 1 && k[0] == 's':
			if err := d.sub(join(prefix, k[1:]), el.Value().Document()); err != nil {
				return err
			}
		default:
			return fmt.Errorf("oplog: diff section %q", k)
		}
	}
	return nil
}

func (d *describer) sub(path string, diff bsoncore.Document) error {
	if _, err := diff.LookupErr("a"); err != nil {
		return d.doc(path, diff)
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
			d.truncated = append(d.truncated, Truncation{Field: path, NewSize: int32(n)})
		case len(k) > 1 && k[0] == 'u':
			if _, err := strconv.Atoi(k[1:]); err != nil {
				return fmt.Errorf("oplog: array diff field %q", k)
			}
			d.out = bsoncore.AppendValueElement(d.out, join(path, k[1:]), el.Value())
		case len(k) > 1 && k[0] == 's':
			if err := d.sub(join(path, k[1:]), el.Value().Document()); err != nil {
				return err
			}
		default:
			return fmt.Errorf("oplog: array diff field %q", k)
		}
	}
	return nil
}
