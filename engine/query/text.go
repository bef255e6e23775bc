package query

import (
	"errors"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/text"
	"github.com/lethedb/lethe/mongoerr"
)

// textNode is $text. It matches nothing until the engine binds it to the
// collection's text index (Filter.BindText), since its terms, stems and
// fields are the index's.
type textNode struct {
	q       *text.Query
	matcher func(doc []byte) bool
}

func (n *textNode) match(doc []byte, st *state) bool {
	if n.matcher == nil {
		// The engine binds the query of a collection with a text index;
		// anywhere else there is none (a pipeline's later $match is
		// refused before it runs).
		st.fail(mongoerr.New(mongoerr.IndexNotFound, "text index required for $text query"))
		return false
	}
	return n.matcher(doc)
}

func compileText(v bsoncore.Value, lvl level) (node, error) {
	if lvl.subDocument {
		return nil, mongoerr.New(mongoerr.BadValue, "$text can only be applied to the top-level document")
	}
	q, err := text.ParseQuery(v)
	if err != nil {
		return nil, err
	}
	return &textNode{q: q}, nil
}

// noQueryExecutionPlans is MongoDB's code when the planner finds no plan.
const noQueryExecutionPlans mongoerr.Code = 291

// textPlacementError is an error of checkText. MongoDB applies those rules
// only to a parsed query, and its parser builds $text against the
// collection's text index, so without one its error comes first: the
// engine, which knows the collection, tells them apart by
// IsTextPlacement.
type textPlacementError struct{ err *mongoerr.Error }

func (e textPlacementError) Error() string { return e.err.Error() }
func (e textPlacementError) Unwrap() error { return e.err }

// IsTextPlacement reports whether err refuses a filter for where its $text
// is: twice, under $nor, or under $or.
func IsTextPlacement(err error) bool {
	var p textPlacementError
	return errors.As(err, &p)
}

// checkText applies MongoDB's rules on where $text may be
// (CanonicalQuery::isValid): once per query, never under $nor, and under
// $or only where every other clause is indexed, which Lethe's planner does
// not combine, so never.
func checkText(root node) error {
	n, inNor, inOr := 0, false, false
	var walk func(nd node, nor, or bool)
	walk = func(nd node, nor, or bool) {
		switch x := nd.(type) {
		case *textNode:
			n++
			inNor = inNor || nor
			inOr = inOr || or
		case andNode:
			for _, c := range x {
				walk(c, nor, or)
			}
		case orNode:
			for _, c := range x {
				walk(c, nor, or || len(x) > 1)
			}
		case norNode:
			for _, c := range x {
				walk(c, true, or)
			}
		}
	}
	walk(root, false, false)
	switch {
	case n > 1:
		return textPlacementError{mongoerr.New(mongoerr.BadValue, "Too many text expressions")}
	case inNor:
		return textPlacementError{mongoerr.New(mongoerr.BadValue, "text expression not allowed in nor")}
	case inOr:
		return textPlacementError{mongoerr.New(noQueryExecutionPlans, "error processing query: planner returned error :: caused by :: Failed to produce a solution for TEXT under OR - other non-TEXT clauses under OR have to be indexed as well.")}
	}
	return nil
}

// textOf finds the $text of a filter: the root or a conjunct of it, or the
// only clause of an $or.
func textOf(nd node) *textNode {
	switch x := nd.(type) {
	case *textNode:
		return x
	case andNode:
		for _, c := range x {
			if t := textOf(c); t != nil {
				return t
			}
		}
	case orNode:
		if len(x) == 1 {
			return textOf(x[0])
		}
	}
	return nil
}

// Text returns the filter's $text query, or nil.
func (f *Filter) Text() *text.Query {
	if t := textOf(f.root); t != nil {
		return t.q
	}
	return nil
}

// BindText makes the filter's $text match by match, the matcher of the
// query bound to the collection's text index.
func (f *Filter) BindText(match func(doc []byte) bool) {
	if t := textOf(f.root); t != nil {
		t.matcher = match
	}
}
