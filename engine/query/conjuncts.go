package query

import (
	"slices"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/geo"
)

// Predicate is a top-level conjunct of a filter simple enough for an index
// planner: Op is one of "$eq", "$gt", "$gte", "$lt", "$lte" with one value,
// or "$in" with the listed values (in BSON order, possibly none). Implicit
// equality {a: 5} is "$eq". Values point into the filter's own copy of its
// source and must not be modified.
//
// The usual query semantics apply to a Predicate: equality with null also
// matches missing fields, and a path through arrays matches any element.
//
// The geospatial operators are Predicates too, with no Values: Op is
// "$geoWithin" or "$geoIntersects" with their Region, or "$near" (also for
// $nearSphere) with its Near.
type Predicate struct {
	Path   string
	Op     string
	Values []bsoncore.Value
	Region *geo.Region
	Near   *geo.Near
}

// Conjuncts returns the predicates the filter requires of every matching
// document that fit Predicate: those at its top level and inside top-level
// $and, other than regular expressions (in equality or $in). A planner can
// use them to choose index bounds, then apply the whole filter to what the
// index yields.
func (f *Filter) Conjuncts() []Predicate {
	return appendConjuncts(nil, f.root)
}

func appendConjuncts(preds []Predicate, n node) []Predicate {
	switch n := n.(type) {
	case andNode:
		for _, c := range n {
			preds = appendConjuncts(preds, c)
		}
	case *fieldNode:
		leaf, ok := n.expr.(*leafExpr)
		if !ok {
			break
		}
		switch p := leaf.pred.(type) {
		case *comparison:
			if p.rhs.Type != bsoncore.TypeRegex {
				preds = append(preds, Predicate{Path: n.path, Op: p.op.String(), Values: []bsoncore.Value{p.rhs}})
			}
		case *geoPred:
			op := "$geoWithin"
			if p.intersect {
				op = "$geoIntersects"
			}
			preds = append(preds, Predicate{Path: n.path, Op: op, Region: p.region})
		case *nearPred:
			preds = append(preds, Predicate{Path: n.path, Op: "$near", Near: p.near})
		case *inList:
			if len(p.regexes) == 0 {
				preds = append(preds, Predicate{Path: n.path, Op: "$in", Values: slices.Clone(p.values)})
			}
		}
	}
	return preds
}
