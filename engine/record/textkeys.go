package record

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/text"
	"github.com/lethedb/lethe/mongoerr"
)

// A text index's entries are MongoDB's (fts_index_format.cpp): one per
// term of a document, its key the values of the fields before the text,
// the term, its score in the document, then the fields after. A document
// without terms has no entries, as text indexes are sparse.

// TextPrefixArray is MongoDB's code for an array in a field a text index
// keeps beside its terms.
const TextPrefixArray mongoerr.Code = 16675

// compileText reads the text spec of an index whose key pattern has the
// _fts field.
func (ix *Index) compileText() error {
	isText := false
	for i, f := range ix.Fields {
		if f.Path == text.KeyField || f.Path == text.ScoreField {
			ix.Fields[i].Text = true
			isText = true
		}
	}
	if !isText {
		return nil
	}
	spec, err := text.NewSpec(ix.Meta.Key, ix.Meta.Extra)
	if err != nil {
		return err
	}
	ix.Text = spec
	return nil
}

// IsText reports whether the index is a text index.
func (ix *Index) IsText() bool { return ix.Text != nil }

func (ix *Index) textKeys(doc bsoncore.Document, tuples *[][]bsoncore.Value) ([][]byte, bool, error) {
	extra := func(paths []string) ([]bsoncore.Value, error) {
		vals := make([]bsoncore.Value, len(paths))
		for i, p := range paths {
			v, _, _ := alongPath(doc, strings.Split(p, "."))
			switch v.Type {
			case 0:
				v = nullValue
			case bsoncore.TypeArray:
				return nil, mongoerr.New(TextPrefixArray, "cannot have a multi-key as a prefix to a text index")
			}
			vals[i] = v
		}
		return vals, nil
	}
	before, err := extra(ix.Text.Before)
	if err != nil {
		return nil, false, err
	}
	after, err := extra(ix.Text.After)
	if err != nil {
		return nil, false, err
	}
	terms, err := ix.Text.Terms(doc)
	if err != nil {
		return nil, false, err
	}
	keys := make([][]byte, 0, len(terms))
	for term, score := range terms {
		t := bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, text.KeyTerm(term))}
		s := bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, score)}
		vals := append(append(append([]bsoncore.Value(nil), before...), t, s), after...)
		var key []byte
		for i, v := range vals {
			key = ix.Fields[i].AppendKey(key, v)
		}
		keys = append(keys, key)
		if tuples != nil {
			*tuples = append(*tuples, vals)
		}
	}
	return keys, len(keys) > 1, nil
}
