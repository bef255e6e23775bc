package engine

import (
	"bytes"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/mongoerr"
)

// planFor picks the plan of a compiled query: the hinted index between the
// query's min and max keys when it has them, otherwise what choosePlan
// picks.
func (st *collState) planFor(q *compiledQuery, spec FindSpec) (*plan, error) {
	if len(spec.Min) <= 5 && len(spec.Max) <= 5 {
		return st.choosePlan(q.filter, q.sort, spec.Hint)
	}
	if len(spec.Hint.Value) == 0 {
		return nil, plannerError(51173, "When using min()/max() a hint of which index to use must be provided")
	}
	p, err := st.hintedPlan(nil, q.sort, spec.Hint)
	if err != nil {
		return nil, err
	}
	var fields []record.IndexField
	var prefix []byte
	switch p.kind {
	case planIndex:
		fields, prefix = p.ix.Fields, record.IndexPrefix(nil, p.ix.Meta.ID)
	case planIDRange, planIDPoints:
		fields = []record.IndexField{{Path: "_id"}}
		prefix, _ = record.DocRange(st.meta.ID)
	default: // a $natural hint names no index
		return nil, plannerError(51173, "When using min()/max() a hint of which index to use must be provided")
	}
	lo, hi := prefix, record.PrefixEnd(prefix)
	for _, b := range []struct {
		doc   bson.Raw
		bound *[]byte
	}{{spec.Min, &lo}, {spec.Max, &hi}} {
		if len(b.doc) <= 5 {
			continue
		}
		key, ok := boundKey(b.doc, fields)
		if !ok {
			return nil, plannerError(51174, "The index chosen is not compatible with min/max")
		}
		*b.bound = append(append([]byte(nil), prefix...), key...)
	}
	if bytes.Compare(lo, hi) >= 0 {
		return nil, plannerError(51175, "The value provided for min() does not come before the value provided for max() in the hinted index")
	}
	p.spans = []span{{lo, hi}}
	return p, nil
}

// boundKey encodes a min or max document as a key of the index with these
// fields; ok is false unless its field names are the key pattern's, in
// order.
func boundKey(doc bson.Raw, fields []record.IndexField) (key []byte, ok bool) {
	elems, err := bsoncore.Document(doc).Elements()
	if err != nil || len(elems) != len(fields) {
		return nil, false
	}
	for i, el := range elems {
		if el.Key() != fields[i].Path {
			return nil, false
		}
		if fields[i].Desc {
			key = keycodec.AppendDesc(key, el.Value())
		} else {
			key = keycodec.Append(key, el.Value())
		}
	}
	return key, true
}

// plannerError is an error of the query planner, worded as MongoDB wraps
// them.
func plannerError(code mongoerr.Code, msg string) error {
	return mongoerr.New(code, "error processing query: planner returned error :: caused by :: %s", msg)
}
