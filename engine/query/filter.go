package query

import (
	"bytes"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/collation"
)

// Filter is a compiled query filter. It is safe for concurrent use.
type Filter struct {
	root node
	near *NearSpec // its $near or $nearSphere, if any
	coll *collation.Collator
}

// Options are the context a filter is compiled in.
type Options struct {
	// Now is the value of $$NOW in $expr: the time the command started,
	// the same for every document. The zero time means the time of
	// compilation.
	Now time.Time
	// Collator is the collation strings compare under; nil is the simple
	// collation.
	Collator *collation.Collator
}

// Compile compiles a query filter. A nil or empty filter matches every
// document. Errors are *mongoerr.Error with the code MongoDB reports.
func Compile(filter bson.Raw) (*Filter, error) {
	return CompileWith(filter, Options{})
}

// CompileWith compiles a query filter in the context opts describes.
func CompileWith(filter bson.Raw, opts Options) (*Filter, error) {
	if len(filter) == 0 {
		return &Filter{root: constant(true), coll: opts.Collator}, nil
	}
	// Compiled values point into the source; a copy of their own lets the
	// caller reuse its buffer.
	own := bytes.Clone(filter)
	if err := bson.Raw(own).Validate(); err != nil {
		return nil, invalidBSON(err)
	}
	root, err := compileDocument(own, level{now: opts.Now, coll: opts.Collator})
	if err != nil {
		return nil, err
	}
	if err := checkText(root); err != nil {
		return nil, err
	}
	near, err := findNear(root)
	if err != nil {
		return nil, err
	}
	return &Filter{root: root, near: near, coll: opts.Collator}, nil
}

// Collator returns the collation the filter was compiled with: the values
// of its Conjuncts that hold strings are collation key values under it.
func (f *Filter) Collator() *collation.Collator { return f.coll }

// Match reports whether doc matches the filter. A document for which a
// $expr fails to evaluate does not match; commands use MatchErr.
func (f *Filter) Match(doc bson.Raw) bool {
	return f.root.match(doc, nil)
}

// MatchErr is Match for a command: the runtime error of a $expr, such as
// adding a string, is returned, as MongoDB fails the command with it.
// Operands that need not be evaluated, as after a true branch of $or, are
// not, so they raise no error.
func (f *Filter) MatchErr(doc bson.Raw) (bool, error) {
	st := state{arrayIndex: -1}
	matched, _, err := f.matchIn(doc, &st)
	return matched, err
}

// MatchPositional is MatchErr that also reports, for MongoDB's positional $
// operator, the index of the array element through which the first
// array-traversing predicate matched, or -1. Only arrays a path traverses
// implicitly count (not a numeric path component), the outermost one when
// there are several; negations and $or never set it.
func (f *Filter) MatchPositional(doc bson.Raw) (matched bool, arrayIndex int, err error) {
	st := state{arrayIndex: -1, positional: true}
	return f.matchIn(doc, &st)
}

// matchIn matches doc in the fresh state st.
func (f *Filter) matchIn(doc bson.Raw, st *state) (matched bool, arrayIndex int, err error) {
	matched = f.root.match(doc, st)
	switch {
	case st.err != nil:
		return false, -1, st.err
	case !matched:
		return false, -1, nil
	}
	return true, st.arrayIndex, nil
}

// A Matcher matches documents one after another against a filter, as
// MatchErr and MatchPositional do, reusing one state rather than
// allocating it per document: what a scan over many documents uses. It is
// not safe for concurrent use.
type Matcher struct {
	f  *Filter
	st state
}

// Matcher returns a Matcher of f.
func (f *Filter) Matcher() *Matcher { return &Matcher{f: f} }

// MatchErr is Filter.MatchErr.
func (m *Matcher) MatchErr(doc bson.Raw) (bool, error) {
	m.st = state{arrayIndex: -1}
	matched, _, err := m.f.matchIn(doc, &m.st)
	return matched, err
}

// MatchPositional is Filter.MatchPositional.
func (m *Matcher) MatchPositional(doc bson.Raw) (matched bool, arrayIndex int, err error) {
	m.st = state{arrayIndex: -1, positional: true}
	return m.f.matchIn(doc, &m.st)
}
