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
// (CanonicalQuery::isValid): once per query and never under $nor. Under an
// $or of two or more clauses the planner must answer every other clause
// from an index (the engine's textPlan); Lethe plans that only for an $or
// at the top of the filter (textOr), and refuses $text deeper under one.
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
	case inOr && textOf(root) == nil:
		return textPlacementError{errTextUnderOr()}
	}
	return nil
}

// errTextUnderOr is the planner's error for $text under an $or whose other
// clauses are not all indexed (QueryPlanner::plan).
func errTextUnderOr() *mongoerr.Error {
	return mongoerr.New(noQueryExecutionPlans, "error processing query: planner returned error :: caused by :: Failed to produce a solution for TEXT under OR - other non-TEXT clauses under OR have to be indexed as well.")
}

// textIn finds a $text that is nd or a conjunct of it, an $or of one
// clause being that clause.
func textIn(nd node) *textNode {
	switch x := nd.(type) {
	case *textNode:
		return x
	case andNode:
		for _, c := range x {
			if t := textIn(c); t != nil {
				return t
			}
		}
	case orNode:
		if cs := orClauses(x); len(cs) == 1 {
			return textIn(cs[0])
		}
	}
	return nil
}

// orClauses are the clauses of an $or with those of the $or clauses in it,
// as MongoDB's normalisation flattens them.
func orClauses(or orNode) []node {
	var out []node
	for _, c := range or {
		if inner, ok := c.(orNode); ok {
			out = append(out, orClauses(inner)...)
		} else {
			out = append(out, c)
		}
	}
	return out
}

// textOr finds the $or whose clause holds the filter's $text: the root or
// a conjunct of it; clause is the index of that clause in its flattened
// clauses.
func textOr(root node) (clauses []node, clause int, ok bool) {
	var find func(nd node) bool
	find = func(nd node) bool {
		switch x := nd.(type) {
		case andNode:
			for _, c := range x {
				if find(c) {
					return true
				}
			}
		case orNode:
			cs := orClauses(x)
			for i, c := range cs {
				if textIn(c) != nil {
					clauses, clause, ok = cs, i, true
					return true
				}
			}
		}
		return false
	}
	find(root)
	return clauses, clause, ok
}

// textOf finds the $text of a filter: the root or a conjunct of it, or
// one in a clause of an $or there (textOr).
func textOf(nd node) *textNode {
	if t := textIn(nd); t != nil {
		return t
	}
	if clauses, i, ok := textOr(nd); ok {
		return textIn(clauses[i])
	}
	return nil
}

// TextOr describes a filter whose $text is under an $or of two or more
// clauses (after flattening), which MongoDB answers as the union of the
// text search and index scans of the other clauses: the conjuncts of the
// clause holding $text, those of each other clause, and whether $text is
// a clause of the filter's root $or. ok is false for a filter without
// such an $or.
func (f *Filter) TextOr() (textConj []Predicate, others [][]Predicate, rootOr, ok bool) {
	clauses, i, found := textOr(f.root)
	if !found || len(clauses) < 2 {
		return nil, nil, false, false
	}
	for j, c := range clauses {
		if j == i {
			textConj = appendConjuncts(nil, c)
			continue
		}
		others = append(others, appendConjuncts(nil, c))
	}
	// MongoDB names the reason only where $text itself is a clause of
	// the root $or; an $and of one clause is that clause.
	root := f.root
	for {
		a, ok := root.(andNode)
		if !ok || len(a) != 1 {
			break
		}
		root = a[0]
	}
	_, isOr := root.(orNode)
	_, bare := clauses[i].(*textNode)
	return textConj, others, isOr && bare, true
}

// ErrTextUnderOr is the planner's error for $text under an $or with a
// clause no index answers; rootOr says $text is a clause of the filter's
// root $or, where MongoDB names the reason; elsewhere it finds no plan.
func ErrTextUnderOr(rootOr bool) error {
	if rootOr {
		return errTextUnderOr()
	}
	return mongoerr.New(noQueryExecutionPlans, "error processing query: planner returned error :: caused by :: No query solutions")
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
