package query

import (
	"slices"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/geo"
	"github.com/lethedb/lethe/engine/keycodec"
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

// ExactRange reports whether the filter is nothing but range comparisons
// ($gt, $gte, $lt, $lte) of path, at the top level or in a top-level $and,
// each of which a key range bracketed by its value's type class admits
// exactly, as Predicate's users build them: the comparison tests the class
// and the keycodec order, which is the keys' order. That leaves out a NaN
// bound, which only NaN passes, and a bound above numbers ($lt, $lte),
// since NaN keys sort below every number but pass no such comparison; and
// strings under a collation, whose keys the caller would have to check
// were made under the same one. A regular expression, which Conjuncts does
// not list, is not a range either. Values that no key range bounds (null,
// arrays, MinKey, ...) are the caller's to refuse, as its planner does. A
// scan of such a range need not test its documents against the filter.
func (f *Filter) ExactRange(path string) bool {
	return exactRange(f.root, path)
}

func exactRange(n node, path string) bool {
	switch n := n.(type) {
	case andNode:
		for _, c := range n {
			if !exactRange(c, path) {
				return false
			}
		}
		return len(n) > 0
	case *fieldNode:
		leaf, ok := n.expr.(*leafExpr)
		if !ok || n.path != path {
			return false
		}
		c, ok := leaf.pred.(*comparison)
		// coll is set when the value holds a string and there is a
		// collation.
		if !ok || c.op == opEQ || c.nan || c.coll != nil || c.rhs.Type == bsoncore.TypeRegex {
			return false
		}
		return c.class != keycodec.TypeClass(bsoncore.TypeDouble) || c.op == opGT || c.op == opGTE
	}
	return false
}
