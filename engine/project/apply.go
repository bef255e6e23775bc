package project

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/mongoerr"
)

// applier carries one application of a projection to a document.
type applier struct {
	ctx        context.Context   // of the request, which expressions check
	root       bsoncore.Document // what "$field" expressions read
	positional int
}

// include projects doc by an inclusion node: first the fields the node
// names, in the document's order, then the computed ones, in the
// projection's order. pending tells that the positional cut, if the node
// leads to one, has not been made yet.
func (a *applier) include(n *node, doc bsoncore.Document, pending bool) ([]byte, error) {
	idx, dst := bsoncore.AppendDocumentStart(nil)
	emitted := map[string]bool{}
	elems, _ := doc.Elements()
	for _, e := range elems {
		c := n.byName[e.Key()]
		if c == nil || emitted[c.name] {
			continue
		}
		v := e.Value()
		var err error
		switch c.kind {
		case included:
			if c.positional && pending && v.Type == bsoncore.TypeArray {
				v, err = a.cut(v)
			}
		case sliced:
			v = slice(v, c)
		case subtree:
			var ok bool
			if v, ok, err = a.includeValue(c, v, pending && c.positional); !ok && err == nil {
				continue
			}
		default:
			continue
		}
		if err != nil {
			return nil, err
		}
		dst = bsoncore.AppendValueElement(dst, c.name, v)
		emitted[c.name] = true
	}
	if n.computed {
		for _, c := range n.children {
			var err error
			switch {
			case c.kind == elemMatch:
				if v, ok := firstMatch(c, doc); ok {
					dst = bsoncore.AppendValueElement(dst, c.name, v)
				}
			case c.kind == computed, c.kind == subtree && !emitted[c.name]:
				dst, err = c.appendComputed(a.ctx, dst, a.root)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst, nil
}

// includeValue projects the value of a field that has a sub-projection. A
// value without fields yields nothing, unless the sub-projection computes
// fields, which the caller then adds.
func (a *applier) includeValue(c *child, v bsoncore.Value, pending bool) (bsoncore.Value, bool, error) {
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		out, err := a.include(c.sub, v.Document(), pending)
		return bsoncore.Value{Type: v.Type, Data: out}, err == nil, err
	case bsoncore.TypeArray:
		out, err := a.includeArray(c.sub, v.Array())
		if err == nil && pending {
			out, err = a.cut(out)
		}
		return out, err == nil, err
	}
	return bsoncore.Value{}, false, nil
}

// includeArray projects each element of an array: documents by n, nested
// arrays element by element. Other values are dropped, or where n computes
// fields, replaced by a document of them.
func (a *applier) includeArray(n *node, arr bsoncore.Array) (bsoncore.Value, error) {
	values, _ := arr.Values()
	var out []bsoncore.Value
	for _, v := range values {
		switch v.Type {
		case bsoncore.TypeEmbeddedDocument:
			d, err := a.include(n, v.Document(), false)
			if err != nil {
				return bsoncore.Value{}, err
			}
			out = append(out, bsoncore.Value{Type: v.Type, Data: d})
		case bsoncore.TypeArray:
			inner, err := a.includeArray(n, v.Array())
			if err != nil {
				return bsoncore.Value{}, err
			}
			out = append(out, inner)
		default:
			if n.computed {
				d, err := n.evalComputed(a.ctx, a.root)
				if err != nil {
					return bsoncore.Value{}, err
				}
				out = append(out, d)
			}
		}
	}
	return arrayValue(out), nil
}

// exclude projects doc by an exclusion node: every field stays in place
// except those excluded, and those below them that are excluded.
func (a *applier) exclude(n *node, doc bsoncore.Document) []byte {
	idx, dst := bsoncore.AppendDocumentStart(nil)
	elems, _ := doc.Elements()
	for _, e := range elems {
		v := e.Value()
		if c := n.byName[e.Key()]; c != nil {
			switch c.kind {
			case excluded:
				continue
			case subtree:
				v = a.excludeValue(c.sub, v)
			case sliced:
				v = slice(v, c)
			case elemMatch:
				var ok bool
				if v, ok = firstMatch(c, doc); !ok {
					continue
				}
			}
		}
		dst = bsoncore.AppendValueElement(dst, e.Key(), v)
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

func (a *applier) excludeValue(n *node, v bsoncore.Value) bsoncore.Value {
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		return bsoncore.Value{Type: v.Type, Data: a.exclude(n, v.Document())}
	case bsoncore.TypeArray:
		values, _ := v.Array().Values()
		for i, e := range values {
			values[i] = a.excludeValue(n, e)
		}
		return arrayValue(values)
	}
	return v
}

// cut reduces an array to the element the query matched, for "a.$".
func (a *applier) cut(arr bsoncore.Value) (bsoncore.Value, error) {
	if a.positional < 0 {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Code(51246), "positional operator '.$' couldn't find a matching element in the array")
	}
	values, _ := arr.Array().Values()
	if a.positional >= len(values) {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Code(51247), "positional operator '.$' element mismatch")
	}
	return arrayValue(values[a.positional : a.positional+1]), nil
}

// firstMatch returns, for $elemMatch, an array of the first element of the
// field that matches, or false when none does.
func firstMatch(c *child, doc bsoncore.Document) (bsoncore.Value, bool) {
	v, err := doc.LookupErr(c.name)
	if err != nil || v.Type != bsoncore.TypeArray {
		return bsoncore.Value{}, false
	}
	values, _ := v.Array().Values()
	for _, e := range values {
		one := arrayValue([]bsoncore.Value{e})
		if c.match.Match(bsoncore.BuildDocument(nil, bsoncore.AppendValueElement(nil, c.name, one))) {
			return one, true
		}
	}
	return bsoncore.Value{}, false
}

// slice applies $slice to an array; other values are left as they are.
func slice(v bsoncore.Value, c *child) bsoncore.Value {
	if v.Type != bsoncore.TypeArray {
		return v
	}
	values, _ := v.Array().Values()
	n := len(values)
	var start, count int
	switch {
	case !c.hasSkip && c.limit < 0:
		start = max(0, n+c.limit)
		count = n - start
	case !c.hasSkip:
		count = min(n, c.limit)
	case c.skip < 0:
		start = max(0, n+c.skip)
		count = min(n-start, c.limit)
	default:
		start = min(n, c.skip)
		count = min(n-start, c.limit)
	}
	return arrayValue(values[start : start+count])
}
