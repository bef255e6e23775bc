package project

import (
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/mongoerr"
)

type projType uint8

const (
	undecided projType = iota
	inclusion
	exclusion
	addition // $addFields: every field stays, computed ones are set
)

// parser builds the tree of a projection, deciding on the way whether it
// includes or excludes.
type parser struct {
	// stage tells the $project stage of a pipeline, which has no find
	// operators, from a find projection.
	stage                                 bool
	now                                   time.Time // $$NOW
	coll                                  *collation.Collator
	typ                                   projType
	idSpecified, idIncluded, idExcluded   bool
	hasSlice, hasElemMatch, hasPositional bool
}

// element parses one field of the projection, or of a sub-projection whose
// path from the root is prefix.
func (p *parser) element(parent *node, prefix []string, e bsoncore.Element) error {
	key, v := e.Key(), e.Value()
	// mongod refuses "$" inside a path before it looks at the value, in
	// find and in $project alike: "a.$.b" meant "a.$" before 4.4, and
	// now fails rather than project something else (parseElement in
	// projection_parser.cpp).
	if strings.Contains(key, ".$.") {
		return mongoerr.New(mongoerr.Code(31394), "As of 4.4, it's illegal to specify positional operator in the middle of a path.Positional projection may only be used at the end, for example: a.b.$. If the query previously used a form like a.b.$.d, remove the parts following the '$' and the results will be equivalent.")
	}
	begin, positional := findPositional(key)
	positional = positional && !p.stage
	switch {
	case v.Type == bsoncore.TypeEmbeddedDocument:
		if positional {
			return mongoerr.New(mongoerr.Code(31271), "positional projection cannot be used with an expression or sub object")
		}
		return p.subObject(parent, prefix, key, v.Document())
	case isFlag(v.Type):
		if truthy(v) {
			if positional {
				return p.positionalInclusion(parent, prefix, key, begin)
			}
			return p.inclusion(parent, prefix, key)
		}
		return p.exclusion(parent, prefix, key)
	}
	if positional {
		return mongoerr.New(mongoerr.Code(31308), "positional projection cannot be used with a literal")
	}
	x, err := compileExpr(v, p.now, p.coll)
	if err != nil {
		return err
	}
	path, err := checkPath(key)
	if err != nil {
		return err
	}
	if err := addAt(parent, path, &child{kind: computed, expr: x}); err != nil {
		return err
	}
	if p.typ == exclusion {
		return mongoerr.New(mongoerr.Code(31310), "Cannot use an expression %s: %s in an exclusion projection", key, v.String())
	}
	p.typ = inclusion
	return nil
}

func (p *parser) inclusion(parent *node, prefix []string, key string) error {
	path, err := checkPath(key)
	if err != nil {
		return err
	}
	if err := addAt(parent, path, &child{kind: included}); err != nil {
		return err
	}
	if key == "_id" && prefix == nil {
		p.idIncluded = true
		return nil
	}
	return p.setInclusion(key)
}

func (p *parser) setInclusion(key string) error {
	if p.typ == exclusion {
		return mongoerr.New(mongoerr.Code(31253), "Cannot do inclusion on field %s in exclusion projection", key)
	}
	p.typ = inclusion
	return nil
}

func (p *parser) exclusion(parent *node, prefix []string, key string) error {
	path, err := checkPath(key)
	if err != nil {
		return err
	}
	if err := addAt(parent, path, &child{kind: excluded}); err != nil {
		return err
	}
	if key == "_id" && prefix == nil {
		p.idExcluded = true
		return nil
	}
	if p.typ == inclusion {
		return mongoerr.New(mongoerr.Code(31254), "Cannot do exclusion on field %s in inclusion projection", key)
	}
	p.typ = exclusion
	return nil
}

// positionalInclusion parses "a.b.$": an inclusion of a.b whose first array
// is cut down to the element the query matched.
func (p *parser) positionalInclusion(parent *node, prefix []string, key string, begin int) error {
	switch {
	case p.hasPositional:
		return mongoerr.New(mongoerr.Code(31276), "Cannot specify more than one positional projection per query.")
	case p.hasElemMatch:
		return mongoerr.New(mongoerr.Code(31256), "Cannot specify positional operator and $elemMatch.")
	}
	path, err := checkPath(key[:begin])
	if err != nil {
		return err
	}
	if err := addAt(parent, path, &child{kind: included, positional: true}); err != nil {
		return err
	}
	markPositional(parent, path)
	p.hasPositional = true
	return p.setInclusion(key)
}

// markPositional flags the subtree children on the way to a positional
// inclusion, so that applying knows where to look for its array.
func markPositional(n *node, path []string) {
	for _, part := range path[:len(path)-1] {
		c := n.byName[part]
		c.positional = true
		n = c.sub
	}
}

// subObject parses {key: {...}}: a find operator or expression when the
// document is a single $-prefixed field, otherwise a sub-projection.
func (p *parser) subObject(parent *node, prefix []string, key string, doc bsoncore.Document) error {
	elems, _ := doc.Elements()
	if len(elems) == 1 && strings.HasPrefix(elems[0].Key(), "$") {
		return p.operator(parent, prefix, key, elems[0])
	}
	path, err := checkPath(key)
	if err != nil {
		return err
	}
	full := slices.Concat(prefix, path)
	if len(elems) == 0 {
		return mongoerr.New(mongoerr.Code(51270), "An empty sub-projection is not a valid value. Found empty object at path %s", strings.Join(full, "."))
	}
	sub, err := subtreeAt(parent, path)
	if err != nil {
		return err
	}
	for _, e := range elems {
		if err := p.element(sub, full, e); err != nil {
			return err
		}
	}
	return nil
}

// operator parses {key: {$op: arg}}.
func (p *parser) operator(parent *node, prefix []string, key string, op bsoncore.Element) error {
	path, err := checkPath(key)
	if err != nil {
		return err
	}
	arg := op.Value()
	name := op.Key()
	if p.stage {
		// A pipeline's $project has no find operators: they are
		// expressions there.
		name = ""
	}
	var c *child
	switch name {
	case "$slice":
		if c, err = parseSlice(arg); err != nil {
			return err
		}
		p.hasSlice = true
	case "$elemMatch":
		if arg.Type != bsoncore.TypeEmbeddedDocument {
			return mongoerr.New(mongoerr.Code(31274), "elemMatch: Invalid argument, object required, but got %s", typeName(arg.Type))
		}
		if p.hasPositional {
			return mongoerr.New(mongoerr.Code(31255), "Cannot specify positional operator and $elemMatch.")
		}
		if prefix != nil || len(path) > 1 {
			return mongoerr.New(mongoerr.Code(31275), "Cannot use $elemMatch projection on a nested field.")
		}
		filter := bsoncore.NewDocumentBuilder().
			AppendDocument(key, bsoncore.NewDocumentBuilder().AppendDocument("$elemMatch", arg.Data).Build()).Build()
		match, err := query.Compile(bson.Raw(filter))
		if err != nil {
			return err
		}
		c = &child{kind: elemMatch, match: match}
		p.hasElemMatch = true
	case "$meta":
		// Metadata is computed ({$meta: "textScore"} reads the score the
		// request's context carries); it leaves an exclusion alone. A
		// find's projection of the text score is the engine's: it takes
		// those fields out before compiling the rest.
		x, err := compileOperator(op, p.now, p.coll)
		if err != nil {
			return err
		}
		c = &child{kind: computed, expr: x}
		if p.typ == undecided {
			p.typ = inclusion
		}
	default:
		if p.typ == exclusion {
			return mongoerr.New(mongoerr.Code(31252), "Cannot use expression other than $meta in exclusion projection")
		}
		x, err := compileOperator(op, p.now, p.coll)
		if err != nil {
			return err
		}
		c = &child{kind: computed, expr: x}
		p.typ = inclusion
	}
	return addAt(parent, path, c)
}

// parseSlice parses the find form of $slice: a count, or [skip, limit].
func parseSlice(arg bsoncore.Value) (*child, error) {
	if isNumber(arg.Type) {
		return &child{kind: sliced, limit: intValue(arg)}, nil
	}
	arr, ok := arg.ArrayOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.Code(31273), "$slice only supports numbers and [skip, limit] arrays")
	}
	values, _ := arr.Values()
	if len(values) != 2 {
		return nil, mongoerr.New(mongoerr.Code(31272), "$slice array argument should be of form [skip, limit]")
	}
	skip, limit := values[0], values[1]
	if !isNumber(skip.Type) {
		return nil, mongoerr.New(mongoerr.Code(31257), "$slice expects the skip argument to be a number, got %s", typeName(skip.Type))
	}
	if !isNumber(limit.Type) {
		return nil, mongoerr.New(mongoerr.Code(31258), "$slice expects the limit argument to be a number, got %s", typeName(limit.Type))
	}
	if n := intValue(limit); n <= 0 {
		return nil, mongoerr.New(mongoerr.Code(31259), "$slice limit must be positive, got %d", n)
	}
	return &child{kind: sliced, skip: intValue(skip), limit: intValue(limit), hasSkip: true}, nil
}

// addAt adds c at path under n, creating sub-projections on the way. A path
// may not be set twice, nor continue below a path that is set.
func addAt(n *node, path []string, c *child) error {
	for i, part := range path {
		existing := n.byName[part]
		if i == len(path)-1 {
			if existing != nil {
				return mongoerr.New(mongoerr.Code(31250), "Path collision at %s", strings.Join(path, "."))
			}
			c.name = part
			n.add(c)
			return nil
		}
		if existing == nil {
			existing = &child{name: part, kind: subtree, sub: newNode()}
			n.add(existing)
		} else if existing.kind != subtree {
			return mongoerr.New(mongoerr.Code(31249), "Path collision at %s remaining portion %s", strings.Join(path, "."), strings.Join(path[1:], "."))
		}
		n = existing.sub
	}
	return nil
}

// subtreeAt returns the sub-projection at path, creating it if needed, so
// that {"a.b": 1, a: {c: 1}} projects both paths of a.
func subtreeAt(n *node, path []string) (*node, error) {
	for i, part := range path {
		c := n.byName[part]
		switch {
		case c == nil:
			c = &child{name: part, kind: subtree, sub: newNode()}
			n.add(c)
		case c.kind != subtree && i == len(path)-1:
			return nil, mongoerr.New(mongoerr.Code(31250), "Path collision at %s", strings.Join(path, "."))
		case c.kind != subtree:
			return nil, mongoerr.New(mongoerr.Code(31249), "Path collision at %s remaining portion %s", strings.Join(path, "."), strings.Join(path[1:], "."))
		}
		n = c.sub
	}
	return n, nil
}

// findPositional locates the positional operator of a projected path:
// ".$" at its end, or the whole path "$". ("$" inside a path is refused
// before.)
func findPositional(path string) (begin int, ok bool) {
	if strings.HasSuffix(path, ".$") {
		return len(path) - 2, true
	}
	if path == "$" {
		return 0, true
	}
	return 0, false
}

// checkPath splits a projected path and checks it as MongoDB's FieldPath
// does.
func checkPath(path string) ([]string, error) {
	if path == "" {
		return nil, mongoerr.New(mongoerr.Code(40352), "FieldPath cannot be constructed with empty string")
	}
	parts := strings.Split(path, ".")
	return parts, checkFieldNames(parts)
}
