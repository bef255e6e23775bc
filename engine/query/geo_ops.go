package query

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/geo"
	"github.com/lethedb/lethe/mongoerr"
)

// The geospatial operators: $geoWithin (and its old name $within) and
// $geoIntersects test the shape a field holds against a region; $near and
// $nearSphere match the shapes within their distance bounds, and the
// engine, which alone can order by distance, reads them nearest first
// through a geo index (Filter.Near).

// geoPred tests a field's value, parsed as a stored shape, against a
// region.
type geoPred struct {
	region    *geo.Region
	intersect bool
}

func (p *geoPred) test(v bsoncore.Value) bool {
	if v.Type != bsoncore.TypeArray && v.Type != bsoncore.TypeEmbeddedDocument {
		return false
	}
	g, err := geo.ParseStored(v)
	if err != nil {
		return false
	}
	if p.intersect {
		return p.region.Intersects(g)
	}
	return p.region.Within(g)
}

// nearPred matches values within the near's distance bounds.
type nearPred struct{ near *geo.Near }

func (p *nearPred) test(v bsoncore.Value) bool {
	if v.Type != bsoncore.TypeArray && v.Type != bsoncore.TypeEmbeddedDocument {
		return false
	}
	g, err := geo.ParseStored(v)
	if err != nil {
		return false
	}
	return p.near.InRange(p.near.Distance(g))
}

func compileGeoWithin(op operand) (fieldExpr, error) {
	r, err := geo.ParseWithin(op.value)
	if err != nil {
		return nil, err
	}
	return &leafExpr{pred: &geoPred{region: r}, leafArrays: true}, nil
}

func compileGeoIntersects(op operand) (fieldExpr, error) {
	r, err := geo.ParseIntersects(op.value)
	if err != nil {
		return nil, err
	}
	return &leafExpr{pred: &geoPred{region: r, intersect: true}, leafArrays: true}, nil
}

func compileNear(op operand) (fieldExpr, error) {
	n, err := geo.ParseNear(op.name, op.value, op.siblings)
	if err != nil {
		return nil, err
	}
	return &leafExpr{pred: &nearPred{near: n}, leafArrays: true}, nil
}

// compileNearBound accepts $maxDistance and $minDistance beside $near or
// $nearSphere, which read them; anywhere else they are unknown.
func compileNearBound(op operand) (fieldExpr, error) {
	_, near := bsonvalue.Lookup(op.siblings, "$near")
	_, sphere := bsonvalue.Lookup(op.siblings, "$nearSphere")
	if !near && !sphere {
		return nil, mongoerr.New(mongoerr.BadValue, "unknown operator: %s", op.name)
	}
	return nil, nil
}

// NearSpec is a filter's $near or $nearSphere: the path and its point and
// bounds.
type NearSpec struct {
	Path string
	Near *geo.Near
}

// Near returns the filter's $near or $nearSphere, nil when it has none.
func (f *Filter) Near() *NearSpec { return f.near }

// findNear checks where the filter's near operators are, as MongoDB
// requires: at most one, at the top level (or in a top-level $and).
func findNear(root node) (*NearSpec, error) {
	var found *NearSpec
	count := 0
	var top func(n node)
	top = func(n node) {
		switch n := n.(type) {
		case andNode:
			for _, c := range n {
				top(c)
			}
		case *fieldNode:
			if l, ok := n.expr.(*leafExpr); ok {
				if p, ok := l.pred.(*nearPred); ok && found == nil {
					found = &NearSpec{Path: n.path, Near: p.near}
				}
			}
		}
	}
	top(root)
	var all func(n node)
	all = func(n node) {
		switch n := n.(type) {
		case andNode:
			for _, c := range n {
				all(c)
			}
		case orNode:
			for _, c := range n {
				all(c)
			}
		case norNode:
			for _, c := range n {
				all(c)
			}
		case *fieldNode:
			count += nearIn(n.expr)
		}
	}
	all(root)
	switch {
	case count > 1:
		return nil, mongoerr.New(mongoerr.BadValue, "Too many geoNear expressions")
	case count == 1 && found == nil:
		return nil, mongoerr.New(mongoerr.BadValue, "geoNear must be top-level expr")
	}
	return found, nil
}

// nearIn counts the near operators in a field expression.
func nearIn(e fieldExpr) int {
	switch e := e.(type) {
	case *leafExpr:
		if _, ok := e.pred.(*nearPred); ok {
			return 1
		}
	case notExpr:
		return nearIn(e.expr)
	case allExpr:
		n := 0
		for _, c := range e {
			n += nearIn(c)
		}
		return n
	}
	return 0
}

// NearNotAllowed is MongoDB's error for $near or $nearSphere where no
// index can order by distance: in an aggregation's $match (and so
// countDocuments) and in a $geoNear stage's query.
func NearNotAllowed() error {
	return mongoerr.New(5626500, "$geoNear, $near, and $nearSphere are not allowed in this context, as these operators require sorting geospatial data. If you do not need sort, consider using $geoWithin instead. Check out https://dochub.mongodb.org/core/near-sort-operation and https://dochub.mongodb.org/core/nearSphere-sort-operationfor more details.")
}
