package engine

import (
	"bytes"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/keycodec"
)

// maxReturnKeyTuples bounds the key tuples of one document that returnKey
// considers, as an array-valued compound key could expand to many.
const maxReturnKeyTuples = 1000

// keyReturner makes the documents of a returnKey query: the key, under the
// key pattern's field names, by which the plan's index reached a document;
// an empty document when the plan reads no index.
type keyReturner struct {
	fields  []indexField // nil for a collection scan
	prefix  []byte       // of the plan's keys
	spans   []span
	reverse bool
}

func newKeyReturner(st *collState, p *plan) *keyReturner {
	k := &keyReturner{spans: p.spans, reverse: p.reverse}
	switch p.kind {
	case planIndex:
		k.fields, k.prefix = p.ix.fields, indexPrefix(nil, p.ix.meta.ID)
	case planIDPoints, planIDRange:
		k.fields = []indexField{{path: "_id"}}
		k.prefix, _ = docRange(st.meta.ID)
	}
	return k
}

// key returns doc's key document. Of a multikey document's keys it picks
// the first the scan meets: the lowest (highest when the scan runs
// backwards) within the plan's spans.
func (k *keyReturner) key(doc bson.Raw) bson.Raw {
	if k.fields == nil {
		return bson.Raw(bsoncore.NewDocumentBuilder().Build())
	}
	tuples := [][]bsoncore.Value{nil}
	for _, f := range k.fields {
		vals, _ := indexValues(bsoncore.Document(doc), f.path)
		if len(vals) == 0 {
			vals = []bsoncore.Value{nullValue}
		}
		next := make([][]bsoncore.Value, 0, len(tuples)*len(vals))
		for _, t := range tuples {
			for _, v := range vals {
				if len(next) == maxReturnKeyTuples {
					break
				}
				next = append(next, append(append([]bsoncore.Value(nil), t...), v))
			}
		}
		tuples = next
	}
	best, bestKey := tuples[0], []byte(nil)
	for _, t := range tuples {
		key := append([]byte(nil), k.prefix...)
		for i, v := range t {
			if k.fields[i].desc {
				key = keycodec.AppendDesc(key, v)
			} else {
				key = keycodec.Append(key, v)
			}
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
		b.AppendValue(f.path, best[i])
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
