package record

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/geo"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/mongoerr"
)

// Geo indexes: a key pattern field whose value is "2dsphere" or "2d" holds
// the geo keys of the shape the document has there (S2 cell ids, or hashes
// of the plane), encoded as int64s; the other fields of a compound geo
// index are keyed as in any index. A document without the geo field is not
// in the index (2dsphere version 2 and later are sparse on it), and one
// whose geo field holds no shape cannot be written.

// compileGeoField sets the geo index of a key pattern field given as a
// string, from the index's options.
func compileGeoField(f *IndexField, typ string, extra bson.Raw) error {
	g, err := geo.NewIndex(typ, func(name string) (float64, bool) {
		if len(extra) == 0 {
			return 0, false
		}
		v, err := extra.LookupErr(name)
		if err != nil {
			return 0, false
		}
		return v.AsFloat64OK()
	})
	if err != nil {
		return err
	}
	f.Geo = g
	return nil
}

// HasGeo reports whether the index has a geo field.
func (ix *Index) HasGeo() bool {
	for _, f := range ix.Fields {
		if f.Geo != nil {
			return true
		}
	}
	return false
}

// GeoField returns the position of the index's first geo field, or -1.
func (ix *Index) GeoField() int {
	for i, f := range ix.Fields {
		if f.Geo != nil {
			return i
		}
	}
	return -1
}

// generateGeo makes the keys of a geo index: each combination of the geo
// fields' keys with the keys of the other fields, generated as an ordinary
// index of those fields would.
func (ix *Index) generateGeo(doc bsoncore.Document, tuples *[][]bsoncore.Value) ([][]byte, bool, error) {
	geoKeys := make([][]int64, len(ix.Fields))
	found := false
	for i, f := range ix.Fields {
		if f.Geo == nil {
			continue
		}
		keys, err := f.Geo.Keys(GeoValues(doc, f.Path))
		if err != nil {
			if f.Geo.Type == geo.Sphere {
				return nil, false, mongoerr.New(geo.CantExtractGeoKeys, "Can't extract geo keys: %s :: caused by :: %s", doc, err.Error())
			}
			return nil, false, err
		}
		geoKeys[i] = keys
		found = found || len(keys) > 0
	}
	if !found {
		return nil, false, nil
	}
	rest := &Index{Meta: IndexMeta{ID: ix.Meta.ID}}
	var restAt []int
	for i, f := range ix.Fields {
		if f.Geo == nil {
			rest.Fields = append(rest.Fields, f)
			restAt = append(restAt, i)
		}
	}
	restTuples := [][]bsoncore.Value{nil}
	multi := false
	if len(rest.Fields) > 0 {
		restTuples = nil
		var err error
		if _, multi, err = rest.generateWith(doc, &restTuples); err != nil {
			return nil, false, err
		}
	}
	var keys [][]byte
	for _, rt := range restTuples {
		combos := [][]bsoncore.Value{make([]bsoncore.Value, len(ix.Fields))}
		for j, at := range restAt {
			combos[0][at] = rt[j]
		}
		for i, gk := range geoKeys {
			if ix.Fields[i].Geo == nil {
				continue
			}
			if len(gk) == 0 {
				for _, c := range combos {
					c[i] = nullValue
				}
				continue
			}
			next := make([][]bsoncore.Value, 0, len(combos)*len(gk))
			for _, c := range combos {
				for _, k := range gk {
					n := append([]bsoncore.Value(nil), c...)
					n[i] = bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, k)}
					next = append(next, n)
				}
			}
			combos = next
		}
		for _, c := range combos {
			var key []byte
			for i, v := range c {
				key = ix.Fields[i].AppendKey(key, v)
			}
			keys = append(keys, key)
			if tuples != nil {
				*tuples = append(*tuples, c)
			}
		}
	}
	if len(keys) > 1 {
		keys = dedupKeys(keys)
	}
	return keys, multi || len(keys) > 1, nil
}

// GeoValues are the values path reaches in doc through documents and the
// elements of arrays in the middle of the path; an array at its end is one
// value (a legacy pair, or several shapes).
func GeoValues(doc bsoncore.Document, path string) []bsoncore.Value {
	var out []bsoncore.Value
	var walk func(d bsoncore.Document, parts []string)
	walk = func(d bsoncore.Document, parts []string) {
		v, err := d.LookupErr(parts[0])
		if err != nil {
			return
		}
		if len(parts) == 1 {
			out = append(out, v)
			return
		}
		switch v.Type {
		case bsoncore.TypeEmbeddedDocument:
			walk(v.Document(), parts[1:])
		case bsoncore.TypeArray:
			vals, _ := v.Array().Values()
			for _, e := range vals {
				if sub, ok := e.DocumentOK(); ok {
					walk(sub, parts[1:])
				}
			}
		}
	}
	walk(doc, strings.Split(path, "."))
	return out
}

// GeoKeyBound encodes the int64 geo key k as the key of a geo field.
func GeoKeyBound(dst []byte, k int64) []byte {
	return keycodec.Append(dst, bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, k)})
}
