package oplog

import (
	"bytes"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// UpdateDiff is the o of an update entry in MongoDB's $v:2 form, taking old
// to new at the top level: {$v: 2, diff: {d: {removed: false}, u: {changed:
// value}, i: {added: value}}}. MongoDB descends into subdocuments with
// "s<field>" sections; a whole-field "u" is an equally valid diff, costs one
// pass over each document, and a change stream reports it as that field
// being updated.
func UpdateDiff(old, new []byte) []byte {
	od, nd := bsoncore.Document(old), bsoncore.Document(new)
	var d, u, i []byte
	oldEls, _ := od.Elements()
	newEls, _ := nd.Elements()
	// Most updates keep the field order, so each lookup starts where the
	// previous one matched.
	j := 0
	find := func(els []bsoncore.Element, key string) (bsoncore.Element, bool) {
		for n := range els {
			k := (j + n) % len(els)
			if els[k].Key() == key {
				j = k + 1
				return els[k], true
			}
		}
		return nil, false
	}
	for _, ne := range newEls {
		key := ne.Key()
		oe, ok := find(oldEls, key)
		switch {
		case !ok:
			i = bsoncore.AppendValueElement(i, key, ne.Value())
		case !bytes.Equal(oe.Value().Data, ne.Value().Data) || oe.Value().Type != ne.Value().Type:
			u = bsoncore.AppendValueElement(u, key, ne.Value())
		}
	}
	j = 0
	for _, oe := range oldEls {
		if _, ok := find(newEls, oe.Key()); !ok {
			d = bsoncore.AppendBooleanElement(d, oe.Key(), false)
		}
	}
	idx, diff := bsoncore.AppendDocumentStart(nil)
	for _, s := range []struct {
		name  string
		elems []byte
	}{{"d", d}, {"u", u}, {"i", i}} {
		if s.elems != nil {
			diff = bsoncore.AppendDocumentElement(diff, s.name, bsoncore.BuildDocument(nil, s.elems))
		}
	}
	diff, _ = bsoncore.AppendDocumentEnd(diff, idx)
	idx, dst := bsoncore.AppendDocumentStart(make([]byte, 0, len(diff)+24))
	dst = bsoncore.AppendInt32Element(dst, "$v", 2)
	dst = bsoncore.AppendDocumentElement(dst, "diff", diff)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}
