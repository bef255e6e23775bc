package query

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

// A compiled filter is a tree with two layers. Nodes match whole documents:
// the logical operators, $expr, and fieldNode, which applies a fieldExpr to
// the values a path reaches. A fieldExpr is what an operator document such
// as {$gt: 1, $lt: 5} compiles to; its leaves are predicates on single values.

// node is a compiled predicate on a document.
type node interface {
	match(doc []byte, st *state) bool
}

// fieldExpr is a compiled predicate on a field.
type fieldExpr interface {
	// matchPath reports whether any value that path p reaches in doc
	// satisfies the expression (or, for a negation, whether none does).
	matchPath(doc []byte, p []string, st *state) bool
	// matchValue tests a single value with no path traversal, as $elemMatch
	// tests the elements of an array against {$gt: 1, $lt: 5}.
	matchValue(v bsoncore.Value) bool
}

// predicate tests one value that a path reached; a missing value has Type 0.
type predicate interface {
	test(v bsoncore.Value) bool
}

// elementPicker is implemented by predicates that are satisfied by one
// element of an array value ($elemMatch), to tell MatchPositional which.
type elementPicker interface {
	pick(v bsoncore.Value) int
}

// state collects what MatchErr and MatchPositional report: the first
// runtime error of a $expr, and the array position. Match passes a nil
// *state. Negations and $or pass their children a branch that keeps no
// position, since their matches say nothing about one, but collects errors.
type state struct {
	arrayIndex int  // -1 until a predicate reached through an array matched
	positional bool // whether arrayIndex is wanted
	err        error
}

func (st *state) record(i int) {
	if st != nil && st.positional && st.arrayIndex < 0 {
		st.arrayIndex = i
	}
}

// fail records the runtime error of a $expr; the first one wins.
func (st *state) fail(err error) {
	if st != nil && st.err == nil {
		st.err = err
	}
}

// branch is the state of the children of a negation or $or.
func (st *state) branch() *state {
	if st == nil {
		return nil
	}
	return &state{arrayIndex: -1}
}

// merge takes the error a branch met.
func (st *state) merge(b *state) {
	if b != nil {
		st.fail(b.err)
	}
}

// andNode matches documents that match every child.
type andNode []node

func (n andNode) match(doc []byte, st *state) bool {
	for _, c := range n {
		if !c.match(doc, st) {
			return false
		}
	}
	return true
}

// orNode matches documents that match any child.
type orNode []node

func (n orNode) match(doc []byte, st *state) bool {
	b := st.branch()
	defer st.merge(b)
	for _, c := range n {
		if c.match(doc, b) {
			return true
		}
	}
	return false
}

// norNode matches documents that match no child.
type norNode []node

func (n norNode) match(doc []byte, st *state) bool {
	b := st.branch()
	defer st.merge(b)
	for _, c := range n {
		if c.match(doc, b) {
			return false
		}
	}
	return true
}

// constant matches everything or nothing: the empty filter, $alwaysTrue,
// $alwaysFalse and {$all: []}.
type constant bool

func (c constant) match([]byte, *state) bool               { return bool(c) }
func (c constant) matchPath([]byte, []string, *state) bool { return bool(c) }
func (c constant) matchValue(bsoncore.Value) bool          { return bool(c) }

// fieldNode applies an expression to a path of the document.
type fieldNode struct {
	path  string
	parts []string
	expr  fieldExpr
}

func (n *fieldNode) match(doc []byte, st *state) bool {
	return n.expr.matchPath(doc, n.parts, st)
}

// leafExpr is a predicate applied to each value a path reaches.
type leafExpr struct {
	pred predicate
	// leafArrays is false for predicates on whole arrays ($size,
	// $elemMatch): an array at the end of the path is then not also tested
	// element by element.
	leafArrays bool
}

func (l *leafExpr) matchPath(doc []byte, p []string, st *state) bool {
	return walk(doc, p, l.leafArrays, -1, func(v bsoncore.Value, arrayIndex int) bool {
		if !l.pred.test(v) {
			return false
		}
		if st != nil && st.positional {
			// The outermost array traversed wins over the element an
			// $elemMatch picked inside it, as in MongoDB.
			if picker, ok := l.pred.(elementPicker); ok && arrayIndex < 0 {
				arrayIndex = picker.pick(v)
			}
			st.record(arrayIndex)
		}
		return true
	})
}

func (l *leafExpr) matchValue(v bsoncore.Value) bool {
	return l.pred.test(v)
}

// notExpr negates an expression on the whole path: {a: {$ne: 1}} matches
// when no value of a equals 1, including when a is missing.
type notExpr struct {
	expr fieldExpr
}

func (n notExpr) matchPath(doc []byte, p []string, _ *state) bool {
	return !n.expr.matchPath(doc, p, nil)
}

func (n notExpr) matchValue(v bsoncore.Value) bool {
	return !n.expr.matchValue(v)
}

// allExpr is a conjunction of expressions on one path, each traversing the
// path on its own: {a: {$all: [1, 2]}} may match 1 and 2 in different
// elements.
type allExpr []fieldExpr

func (a allExpr) matchPath(doc []byte, p []string, st *state) bool {
	for _, e := range a {
		if !e.matchPath(doc, p, st) {
			return false
		}
	}
	return true
}

func (a allExpr) matchValue(v bsoncore.Value) bool {
	for _, e := range a {
		if !e.matchValue(v) {
			return false
		}
	}
	return true
}
