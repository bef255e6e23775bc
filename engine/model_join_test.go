package engine

import (
	"fmt"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/query"
)

// The model's joins: an aggregate may end in a $lookup of the model's
// collection by equality, or in a $unionWith of it. The reference joins by
// brute force: every visible document whose foreignField equals one of
// the local values, compared one value at a time with $eq.

// joinPaths are the fields the model's documents join on.
var joinPaths = []string{"a", "u", "v", "arr", "arr.0", "s.x", "s.0.x", "nope"}

// joinStages are the stages of a join after the $match and $sort.
func (g *modelGen) joinStages() []bson.Raw {
	if g.r.Intn(3) == 0 {
		return []bson.Raw{modelRaw(bson.D{{Key: "$unionWith", Value: modelColl}})}
	}
	local, foreign := joinPaths[g.r.Intn(len(joinPaths))], joinPaths[g.r.Intn(len(joinPaths))]
	return []bson.Raw{
		modelRaw(bson.D{{Key: "$lookup", Value: bson.D{{Key: "from", Value: modelColl}, {Key: "localField", Value: local}, {Key: "foreignField", Value: foreign}, {Key: "as", Value: "j"}}}}),
		modelRaw(bson.D{{Key: "$project", Value: bson.D{{Key: "j", Value: "$j._id"}}}}),
	}
}

// joinOf reports the kind of join the stages of an aggregate end in: ""
// for none.
func joinOf(stages []bson.Raw) string {
	if len(stages) == 0 {
		return ""
	}
	switch name := bsoncore.Document(stages[0]).Index(0).Key(); name {
	case "$lookup", "$unionWith":
		return name
	}
	return ""
}

// joinWant is the reference's answer to a join over the matched
// documents.
func (r *modelRun) joinWant(stages []bson.Raw, matches []*refDoc, now int64) ([]bson.Raw, error) {
	all := r.m.visible(now)
	if joinOf(stages) == "$unionWith" {
		var want []bson.Raw
		for _, d := range append(slices.Clone(matches), all...) {
			want = append(want, d.doc)
		}
		return want, nil
	}
	spec := bsoncore.Document(stages[0]).Index(0).Value().Document()
	local := spec.Lookup("localField").StringValue()
	foreign := spec.Lookup("foreignField").StringValue()
	var want []bson.Raw
	for _, d := range matches {
		vals, _ := pathValues(bsoncore.Document(d.doc), local, false)
		if len(vals) == 0 {
			vals = []bsoncore.Value{refNull}
		}
		var eqs []*query.Filter
		for _, v := range vals {
			eq := bsoncore.NewDocumentBuilder().AppendDocument(foreign, bsoncore.NewDocumentBuilder().AppendValue("$eq", v).Build()).Build()
			f, err := query.Compile(bson.Raw(eq))
			if err != nil {
				return nil, fmt.Errorf("reference join filter %v: %v", bson.Raw(eq), err)
			}
			eqs = append(eqs, f)
		}
		var ids []bsoncore.Value
		for _, e := range all {
			if slices.ContainsFunc(eqs, func(f *query.Filter) bool { return f.Match(e.doc) }) {
				ids = append(ids, e.id())
			}
		}
		want = append(want, joined(d.id(), ids))
	}
	return want, nil
}

// joined is {_id: id, j: ids} with ids in key order, the form both sides
// of a $lookup are compared in, since the order of a joined array is the
// order its plan read the foreign collection in.
func joined(id bsoncore.Value, ids []bsoncore.Value) bson.Raw {
	slices.SortFunc(ids, keycodec.Compare)
	arr := bsoncore.NewArrayBuilder()
	for _, v := range ids {
		arr.AppendValue(v)
	}
	return bson.Raw(bsoncore.NewDocumentBuilder().AppendValue("_id", id).AppendArray("j", arr.Build()).Build())
}

// checkJoin compares what the engine returned for a join with the
// reference's answer, as multisets.
func checkJoin(kind string, docs, want []bson.Raw) error {
	if kind == "$lookup" {
		norm := make([]bson.Raw, len(docs))
		for i, d := range docs {
			vals, _ := bsoncore.Document(d).Lookup("j").Array().Values()
			norm[i] = joined(bsoncore.Document(d).Lookup("_id"), vals)
		}
		docs = norm
	}
	if len(docs) != len(want) || !subMultiset(docs, want) {
		return fmt.Errorf("aggregate with %s: engine returned %s, model %s (any order)", kind, rawList(docs), rawList(want))
	}
	return nil
}
