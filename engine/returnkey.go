package engine

import (
	"bytes"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/record"
)

// keyReturner makes the documents of a returnKey query: the key, under the
// key pattern's field names, by which the plan's index reached a document;
// an empty document when the plan reads no index.
type keyReturner struct {
	ix *record.Index // nil for the _id index or a collection scan
	// idColl is the collation of the _id index's keys (collState.pkOf):
	// like a collated index's, they hold collation keys of strings.
	idColl  *collation.Collator
	fields  []record.IndexField // nil for a collection scan
	prefix  []byte              // of the plan's keys
	spans   []span
	reverse bool
}

func newKeyReturner(st *collState, p *plan) *keyReturner {
	k := &keyReturner{spans: p.spans, reverse: p.reverse}
	switch p.kind {
	case planIndex:
		k.ix, k.fields, k.prefix = p.ix, p.ix.Fields, record.IndexPrefix(nil, p.ix.Meta.ID)
	case planIDPoints, planIDRange:
		k.fields, k.idColl = []record.IndexField{{Path: "_id"}}, st.idColl
		k.prefix, _ = record.DocRange(st.meta.ID)
	}
	return k
}

// key returns doc's key document. Of a multikey document's keys, made as
// the index makes them, it picks the first the scan meets: the lowest
// (highest when the scan runs backwards) within the plan's spans.
func (k *keyReturner) key(doc bson.Raw) bson.Raw {
	if k.fields == nil {
		return bson.Raw(bsoncore.NewDocumentBuilder().Build())
	}
	tuples := [][]bsoncore.Value{{k.idColl.Key(record.IDOf(doc))}}
	if k.ix != nil {
		var err error
		if tuples, err = k.ix.KeyTuples(bsoncore.Document(doc)); err != nil || len(tuples) == 0 {
			// The index holds the document, so it has keys; should it not,
			// its missing fields are null.
			tuples = [][]bsoncore.Value{make([]bsoncore.Value, len(k.fields))}
			for i := range tuples[0] {
				tuples[0][i] = bsoncore.Value{Type: bsoncore.TypeNull}
			}
		}
	}
	best, bestKey := tuples[0], []byte(nil)
	for _, t := range tuples {
		key := append([]byte(nil), k.prefix...)
		for i, v := range t {
			key = k.fields[i].AppendKey(key, v)
		}
		if !k.inSpans(key) {
			continue
		}
		if bestKey == nil || (bytes.Compare(key, bestKey) < 0) != k.reverse {
			best, bestKey = t, key
		}
	}
	b := bsoncore.NewDocumentBuilder()
	for i, f := range k.fields {
		b.AppendValue(f.Path, best[i])
	}
	return bson.Raw(b.Build())
}

// inSpans reports whether key, less any primary key suffix, lies in one of
// the plan's spans.
func (k *keyReturner) inSpans(key []byte) bool {
	for _, sp := range k.spans {
		if bytes.Compare(key, sp.hi) < 0 && (bytes.Compare(key, sp.lo) >= 0 || bytes.HasPrefix(sp.lo, key)) {
			return true
		}
	}
	return false
}
