package oplog

import (
	"bytes"
	"fmt"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// UpdateDiff is the o of an update entry taking old to new: MongoDB's $v:2
// form {$v: 2, diff: {...}}, or new itself when no diff reaches its field
// order (a pipeline update may reorder fields; update operators never do).
// The diff is kept even when larger than the document, unlike MongoDB's
// pipeline updates, so that a change stream reports every update made by
// operators as an update, as MongoDB does, and never as a replacement.
//
// A document diff has the sections d ({field: false} for removed fields),
// u ({field: value} for replaced values), i ({field: value} for fields
// added at the end) and s<field> (the diff of a subdocument or array). An
// array diff is {a: true, l: length when the array shrank, u<index>: value,
// s<index>: diff}.
func UpdateDiff(old, new []byte) []byte {
	diff, ok := diffDoc(old, new)
	if !ok {
		return new
	}
	idx, dst := bsoncore.AppendDocumentStart(make([]byte, 0, len(diff)+24))
	dst = bsoncore.AppendInt32Element(dst, "$v", 2)
	dst = bsoncore.AppendDocumentElement(dst, "diff", diff)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

func sameValue(a, b bsoncore.Value) bool {
	return a.Type == b.Type && bytes.Equal(a.Data, b.Data)
}

// diffDoc is the diff taking old to new; ok is false when new's field
// order cannot be reached by one (a kept field moved, or a new field comes
// before a kept one: added fields go at the end).
func diffDoc(old, new bsoncore.Document) (diff []byte, ok bool) {
	oldEls, err := old.Elements()
	if err != nil {
		return nil, false
	}
	newEls, err := new.Elements()
	if err != nil {
		return nil, false
	}
	var d, u, i, s []byte
	kept := make([]bool, len(oldEls))
	last, inserted := -1, false
	for _, ne := range newEls {
		key := ne.Key()
		at := -1
		// Fields mostly keep their order: look from the last match on.
		for n := range oldEls {
			k := (last + 1 + n) % len(oldEls)
			if oldEls[k].Key() == key {
				at = k
				break
			}
		}
		if at < 0 {
			inserted = true
			i = bsoncore.AppendValueElement(i, key, ne.Value())
			continue
		}
		if at < last || inserted {
			return nil, false
		}
		last = at
		kept[at] = true
		ov, nv := oldEls[at].Value(), ne.Value()
		if sameValue(ov, nv) {
			continue
		}
		if sub, ok := diffValue(ov, nv); ok {
			s = bsoncore.AppendDocumentElement(s, "s"+key, sub)
			continue
		}
		u = bsoncore.AppendValueElement(u, key, nv)
	}
	for n, oe := range oldEls {
		if !kept[n] {
			d = bsoncore.AppendBooleanElement(d, oe.Key(), false)
		}
	}
	idx, out := bsoncore.AppendDocumentStart(nil)
	for _, sec := range []struct {
		name  string
		elems []byte
	}{{"d", d}, {"u", u}, {"i", i}} {
		if sec.elems != nil {
			out = bsoncore.AppendDocumentElement(out, sec.name, bsoncore.BuildDocument(nil, sec.elems))
		}
	}
	out = append(out, s...)
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out, true
}

// diffValue is the subdiff of two documents or two arrays.
func diffValue(ov, nv bsoncore.Value) ([]byte, bool) {
	switch {
	case ov.Type == bsoncore.TypeEmbeddedDocument && nv.Type == bsoncore.TypeEmbeddedDocument:
		return diffDoc(ov.Document(), nv.Document())
	case ov.Type == bsoncore.TypeArray && nv.Type == bsoncore.TypeArray:
		return diffArray(ov.Array(), nv.Array())
	}
	return nil, false
}

func diffArray(old, new bsoncore.Array) ([]byte, bool) {
	oldVals, err := old.Values()
	if err != nil {
		return nil, false
	}
	newVals, err := new.Values()
	if err != nil {
		return nil, false
	}
	idx, out := bsoncore.AppendDocumentStart(nil)
	out = bsoncore.AppendBooleanElement(out, "a", true)
	if len(newVals) < len(oldVals) {
		out = bsoncore.AppendInt32Element(out, "l", int32(len(newVals)))
	}
	for n, nv := range newVals {
		key := strconv.Itoa(n)
		if n < len(oldVals) {
			if sameValue(oldVals[n], nv) {
				continue
			}
			if sub, ok := diffValue(oldVals[n], nv); ok {
				out = bsoncore.AppendDocumentElement(out, "s"+key, sub)
				continue
			}
		}
		out = bsoncore.AppendValueElement(out, "u"+key, nv)
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out, true
}

// ApplyUpdate applies the o of an update entry to doc: a $v:2 diff, or a
// replacement document, which it returns as is (o itself, not a copy).
func ApplyUpdate(doc, o []byte) ([]byte, error) {
	od := bsoncore.Document(o)
	v, err := od.LookupErr("$v")
	if err != nil {
		return o, nil
	}
	if n, ok := v.AsInt64OK(); !ok || n != 2 {
		return nil, fmt.Errorf("oplog: update entry with $v %v", v)
	}
	diff, ok := od.Lookup("diff").DocumentOK()
	if !ok {
		return nil, fmt.Errorf("oplog: update entry without diff")
	}
	return applyDoc(doc, diff)
}

func applyDoc(doc, diff bsoncore.Document) ([]byte, error) {
	sections, err := diff.Elements()
	if err != nil {
		return nil, err
	}
	del, _ := diff.Lookup("d").DocumentOK()
	upd, _ := diff.Lookup("u").DocumentOK()
	ins, _ := diff.Lookup("i").DocumentOK()
	for _, el := range sections {
		switch k := el.Key(); {
		case k == "d" || k == "u" || k == "i":
		case len(k) > 1 && k[0] == 's':
		default:
			return nil, fmt.Errorf("oplog: diff section %q", k)
		}
	}
	els, err := doc.Elements()
	if err != nil {
		return nil, err
	}
	present := map[string]bool{}
	idx, out := bsoncore.AppendDocumentStart(nil)
	for _, el := range els {
		k := el.Key()
		present[k] = true
		if del != nil {
			if _, err := del.LookupErr(k); err == nil {
				continue
			}
		}
		if ins != nil {
			if _, err := ins.LookupErr(k); err == nil {
				continue // moved to the end
			}
		}
		if upd != nil {
			if v, err := upd.LookupErr(k); err == nil {
				out = bsoncore.AppendValueElement(out, k, v)
				continue
			}
		}
		if sub, err := diff.LookupErr("s" + k); err == nil {
			v, err := applyValue(el.Value(), sub.Document())
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out = bsoncore.AppendValueElement(out, k, v)
			continue
		}
		out = append(out, el...)
	}
	if upd != nil {
		uels, _ := upd.Elements()
		for _, el := range uels {
			if !present[el.Key()] {
				out = append(out, el...)
			}
		}
	}
	if ins != nil {
		iels, _ := ins.Elements()
		for _, el := range iels {
			out = append(out, el...)
		}
	}
	out, err = bsoncore.AppendDocumentEnd(out, idx)
	return out, err
}

func applyValue(v bsoncore.Value, diff bsoncore.Document) (bsoncore.Value, error) {
	if _, err := diff.LookupErr("a"); err == nil {
		arr, ok := v.ArrayOK()
		if !ok {
			return v, fmt.Errorf("oplog: array diff of a %s", v.Type)
		}
		out, err := applyArray(arr, diff)
		return bsoncore.Value{Type: bsoncore.TypeArray, Data: out}, err
	}
	d, ok := v.DocumentOK()
	if !ok {
		return v, fmt.Errorf("oplog: document diff of a %s", v.Type)
	}
	out, err := applyDoc(d, diff)
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: out}, err
}

func applyArray(arr bsoncore.Array, diff bsoncore.Document) ([]byte, error) {
	vals, err := arr.Values()
	if err != nil {
		return nil, err
	}
	if l, ok := diff.Lookup("l").AsInt64OK(); ok && int(l) < len(vals) {
		vals = vals[:l]
	}
	els, err := diff.Elements()
	if err != nil {
		return nil, err
	}
	null := bsoncore.Value{Type: bsoncore.TypeNull}
	for _, el := range els {
		k := el.Key()
		if k == "a" || k == "l" {
			continue
		}
		n, err := strconv.Atoi(k[1:])
		if err != nil || n < 0 || (k[0] != 'u' && k[0] != 's') {
			return nil, fmt.Errorf("oplog: array diff field %q", k)
		}
		for len(vals) <= n {
			vals = append(vals, null)
		}
		if k[0] == 'u' {
			vals[n] = el.Value()
			continue
		}
		if vals[n], err = applyValue(vals[n], el.Value().Document()); err != nil {
			return nil, fmt.Errorf("%d: %w", n, err)
		}
	}
	idx, out := bsoncore.AppendArrayStart(nil)
	for n, v := range vals {
		out = bsoncore.AppendValueElement(out, strconv.Itoa(n), v)
	}
	return bsoncore.AppendArrayEnd(out, idx)
}
