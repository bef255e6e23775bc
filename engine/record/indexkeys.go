package record

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/mongoerr"
)

// AmbiguousFieldName is MongoDB's code for a document an index on a
// positional path cannot hold: the number names both an array element and a
// field of a document in that array.
const AmbiguousFieldName mongoerr.Code = 16746

// keyGen generates the keys of an index for a document the way MongoDB's
// btree key generator does. Each field follows its path through documents
// until it reaches a value, which it keeps, or an array. All the fields that
// reach the same array expand it together, one key per element; fields
// reaching different arrays at once are parallel arrays, which MongoDB
// refuses to index. At the end of a path an array gives its elements (an
// empty one undefined); in the middle, each element continues the path, a
// document by field name and anything else as missing. A numeric component
// that names an element of the array selects that element instead, for
// every element alike, and an array selected that way at the end of the
// path is one key, whole; an element document with a field of that name
// makes the document impossible to index. A missing value is null.
type keyGen struct {
	ix    *Index
	keys  [][]byte
	multi bool // an array was expanded
	// tuples, when not nil, collects each key's values too (returnKey).
	tuples *[][]bsoncore.Value
}

// keyField is the progress of one index field.
type keyField struct {
	done bool
	rest []string // the path left to follow
	// sel is set when rest starts in an array element selected by position.
	sel *selection
}

// selection is an array element selected by a numeric path component, and
// what the rest of the path reaches from it through documents.
type selection struct {
	in      bsoncore.Value // the array, for error messages
	reached bsoncore.Value // Type 0 for nothing
	name    string         // the path component that reached it
	after   []string       // the path left after it
	array   bool           // the selected element is an array
}

// Generate returns the keys of doc, encoded and deduplicated, and whether an
// array was expanded.
func (ix *Index) Generate(doc bsoncore.Document) ([][]byte, bool, error) {
	return ix.generateWith(doc, nil)
}

// KeyTuples returns the value tuples of doc's keys, one for each key
// Generate makes, repeats included.
func (ix *Index) KeyTuples(doc bsoncore.Document) ([][]bsoncore.Value, error) {
	var tuples [][]bsoncore.Value
	_, _, err := ix.generateWith(doc, &tuples)
	return tuples, err
}

func (ix *Index) generateWith(doc bsoncore.Document, tuples *[][]bsoncore.Value) ([][]byte, bool, error) {
	if ix.Text != nil {
		return ix.textKeys(doc, tuples)
	}
	if ix.HasGeo() {
		return ix.generateGeo(doc, tuples)
	}
	g := keyGen{ix: ix, tuples: tuples}
	fields := make([]keyField, len(ix.Fields))
	for i, f := range ix.Fields {
		fields[i].rest = strings.Split(f.Path, ".")
	}
	if err := g.expand(doc, fields, make([]bsoncore.Value, len(fields)), 0); err != nil {
		return nil, false, err
	}
	if len(g.keys) > 1 {
		g.keys = dedupKeys(g.keys)
	}
	return g.keys, g.multi, nil
}

// expand generates the keys of the fields in obj (a document, or nil for an
// array element that is not one), given the values fixed so far; notFound
// counts the fields found missing on the way, for sparse indexes.
func (g *keyGen) expand(obj bsoncore.Document, fields []keyField, fixed []bsoncore.Value, notFound int) error {
	fields, fixed = append([]keyField(nil), fields...), append([]bsoncore.Value(nil), fixed...)
	var arr bsoncore.Value
	var arrName string
	var through []int // the fields that reached arr
	expandLeaf := true
	for i := range fields {
		f := &fields[i]
		if f.done {
			continue
		}
		var v bsoncore.Value
		var name string
		if f.sel != nil {
			if _, err := obj.LookupErr(f.rest[0]); err == nil {
				return mongoerr.New(AmbiguousFieldName, "Ambiguous field name found in array (do not use numeric field names in embedded elements in an array), field: '%s' for array: %s", f.rest[0], bsoncore.Document(f.sel.in.Data))
			}
			v, name, f.rest = f.sel.reached, f.sel.name, f.sel.after
			if f.sel.array {
				expandLeaf = false
			}
			f.sel = nil
		} else {
			v, name, f.rest = alongPath(obj, f.rest)
		}
		switch {
		case v.Type == 0:
			fixed[i], f.done = nullValue, true
			notFound++
		case v.Type != bsoncore.TypeArray:
			fixed[i], f.done = v, true
		case g.ix.Fields[i].Hashed:
			return errHashedArray(g.ix.Fields[i].Path)
		case arr.Type == 0:
			arr, arrName = v, name
			through = append(through, i)
		case &v.Data[0] != &arr.Data[0]:
			return mongoerr.New(mongoerr.CannotIndexParallelArrays, "cannot index parallel arrays [%s] [%s]", name, arrName)
		default:
			through = append(through, i)
		}
	}
	if arr.Type == 0 {
		g.emit(fixed, notFound)
		return nil
	}
	elems, err := bsoncore.Array(arr.Data).Values()
	if err != nil {
		return err
	}
	if len(elems) == 0 {
		// An empty array stands for its elements as undefined at the end
		// of a path, and leaves what follows it missing.
		g.multi = g.multi || expandLeaf
		for _, i := range through {
			if len(fields[i].rest) == 0 {
				fixed[i], fields[i].done = undefinedValue, true
			}
		}
		return g.expand(nil, fields, fixed, notFound)
	}
	arrDoc := bsoncore.Document(arr.Data)
	var leaves []int
	for _, i := range through {
		f := &fields[i]
		if len(f.rest) == 0 {
			leaves = append(leaves, i)
			f.done = true
			g.multi = g.multi || expandLeaf
			continue
		}
		e, err := arrDoc.LookupErr(f.rest[0])
		if err != nil {
			g.multi = true
			continue
		}
		reached, name, after := alongPath(arrDoc, f.rest)
		f.sel = &selection{in: arr, reached: reached, name: name, after: after, array: e.Type == bsoncore.TypeArray}
	}
	for _, e := range elems {
		for _, i := range leaves {
			fixed[i] = e
			if !expandLeaf {
				fixed[i] = arr
			}
		}
		elemDoc, _ := e.DocumentOK()
		if err := g.expand(elemDoc, fields, fixed, notFound); err != nil {
			return err
		}
	}
	return nil
}

// emit adds the key made of the fixed values, unless the index is sparse and
// none of its fields was found.
func (g *keyGen) emit(fixed []bsoncore.Value, notFound int) {
	if g.ix.Meta.Sparse && notFound == len(fixed) {
		return
	}
	var key []byte
	for i, v := range fixed {
		if g.ix.Fields[i].Hashed {
			v = HashedValue(v)
		} else {
			// Under a collation the entry holds the strings' collation keys.
			v = g.ix.Collator.Key(v)
		}
		key = g.ix.Fields[i].AppendKey(key, v)
	}
	g.keys = append(g.keys, key)
	if g.tuples != nil {
		t := append([]bsoncore.Value(nil), fixed...)
		for i := range t {
			if g.ix.Fields[i].Hashed {
				t[i] = HashedValue(t[i]) // returnKey shows the hash, as MongoDB
			}
		}
		*g.tuples = append(*g.tuples, t)
	}
}

// alongPath follows parts through documents from obj and returns the value
// reached and the name of its field, stopping early at an array, with the
// parts left after it. A missing field, or a scalar before the end, reaches
// nothing (Type 0).
func alongPath(obj bsoncore.Document, parts []string) (bsoncore.Value, string, []string) {
	for {
		name := parts[0]
		v, err := obj.LookupErr(name)
		if err != nil {
			return bsoncore.Value{}, name, nil
		}
		parts = parts[1:]
		switch {
		case v.Type == bsoncore.TypeArray || len(parts) == 0:
			return v, name, parts
		case v.Type != bsoncore.TypeEmbeddedDocument:
			return bsoncore.Value{}, name, nil
		}
		obj = v.Document()
	}
}
