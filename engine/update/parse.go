package update

import (
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/mongoerr"
)

// modifiers parse the operand of each update operator for one path. $rename
// is absent: it takes two paths, see parser.addRename.
var modifiers = map[string]func(path string, v bsoncore.Value) (*leaf, error){
	"$addToSet":    parseAddToSet,
	"$bit":         parseBit,
	"$currentDate": parseCurrentDate,
	"$inc":         parseInc,
	"$max":         parseMax,
	"$min":         parseMin,
	"$mul":         parseMul,
	"$pop":         parsePop,
	"$pull":        parsePull,
	"$pullAll":     parsePullAll,
	"$push":        parsePush,
	"$set":         parseSet,
	"$setOnInsert": parseSetOnInsert,
	"$unset":       parseUnset,
}

// parser builds the tree of an operator update.
type parser struct {
	root    *objectNode
	filters map[string]*query.Filter
	used    map[string]bool // the array filter identifiers the paths name
	coll    *collation.Collator
}

// collatedModifiers are the operators that compare values, under the
// collation of the update when it has one.
var collatedModifiers = map[string]func(*collation.Collator) func(string, bsoncore.Value) (*leaf, error){
	"$addToSet": parseAddToSetUnder,
	"$pull":     parsePullUnder,
	"$pullAll":  parsePullAllUnder,
	"$push":     parsePushUnder,
	"$min":      parseMinMaxUnder(false),
	"$max":      parseMinMaxUnder(true),
}

func (p *parser) parse(update bsoncore.Document) error {
	mods, _ := update.Elements()
	for _, mod := range mods {
		name, v := mod.Key(), mod.Value()
		parse, known := modifiers[name]
		if under := collatedModifiers[name]; under != nil && p.coll != nil {
			parse = under(p.coll)
		}
		if !known && name != "$rename" {
			return mongoerr.New(mongoerr.FailedToParse, "Unknown modifier: %s. Expected a valid update modifier or pipeline-style update specified as an array", name)
		}
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return mongoerr.New(mongoerr.FailedToParse, "Modifiers operate on fields but we found type %s instead. For example: {$mod: {<field>: ...}} not {%s}", typeName(v.Type), describe(name, v))
		}
		fields, _ := v.Document().Elements()
		for _, f := range fields {
			var err error
			if known {
				err = p.add(f.Key(), f.Value(), parse)
			} else {
				err = p.addRename(f.Key(), f.Value())
			}
			if err != nil {
				return err
			}
		}
	}
	ids := make([]string, 0, len(p.filters))
	for id := range p.filters {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if !p.used[id] {
			return mongoerr.New(mongoerr.FailedToParse, "The array filter for identifier '%s' was not used in the update %s", id, describeDocument(update))
		}
	}
	return nil
}

func (p *parser) add(path string, v bsoncore.Value, parse func(string, bsoncore.Value) (*leaf, error)) error {
	parts, err := checkPath(path)
	if err != nil {
		return err
	}
	l, err := parse(path, v)
	if err != nil {
		return err
	}
	return p.place(parts, l)
}

func (p *parser) addRename(from string, v bsoncore.Value) error {
	fromParts, err := checkPath(from)
	if err != nil {
		return err
	}
	if err := p.place(fromParts, placeholder{}); err != nil {
		return err
	}
	if v.Type != bsoncore.TypeString {
		return mongoerr.New(mongoerr.BadValue, "The 'to' field for $rename must be a string: %s", describe(from, v))
	}
	toParts, err := checkPath(v.StringValue())
	if err != nil {
		return err
	}
	if strings.ContainsRune(v.StringValue(), 0) {
		return mongoerr.New(mongoerr.BadValue, "The 'to' field for $rename cannot contain an embedded null byte")
	}
	r, err := parseRename(fromParts, v)
	if err != nil {
		return err
	}
	return p.place(toParts, r)
}

func splitPath(path string) []string { return strings.Split(path, ".") }

// checkPath splits an update path and checks what MongoDB checks of every
// path, whatever its operator.
func checkPath(path string) ([]string, error) {
	if path == "" {
		return nil, mongoerr.New(mongoerr.EmptyFieldName, "An empty update path is not valid.")
	}
	parts := splitPath(path)
	positionals := 0
	for _, part := range parts {
		if part == "" {
			return nil, mongoerr.New(mongoerr.EmptyFieldName, "The update path '%s' contains an empty field name, which is not allowed.", path)
		}
		if isPositional(part) {
			positionals++
		}
	}
	if positionals > 1 {
		return nil, mongoerr.New(mongoerr.BadValue, "Too many positional (i.e. '$') elements found in path '%s'", path)
	}
	if isPositional(parts[0]) {
		return nil, mongoerr.New(mongoerr.BadValue, "Cannot have positional (i.e. '$') element in the first position in path '%s'", path)
	}
	return parts, nil
}

// place adds n to the tree at path, creating the internal nodes on the way.
// A path that is another's prefix, or equal to it, conflicts with it.
func (p *parser) place(path []string, n node) error {
	var cur node = p.root
	for i := range path {
		name, err := p.childName(path, i)
		if err != nil {
			return err
		}
		existing := childOf(cur, name)
		if i == len(path)-1 {
			if existing != nil {
				return conflict(path, len(path))
			}
			setChildOf(cur, name, n)
			return nil
		}
		_, nextIsArray := arrayFilterID(path[i+1])
		switch existing.(type) {
		case nil:
			if nextIsArray {
				existing = newArrayNode()
			} else {
				existing = newObjectNode()
			}
			setChildOf(cur, name, existing)
		case *arrayNode:
			if !nextIsArray {
				return conflict(path, i+1)
			}
		case *objectNode:
			if nextIsArray {
				return conflict(path, i+1)
			}
		default:
			return conflict(path, i+1)
		}
		cur = existing
	}
	return nil
}

func conflict(path []string, at int) error {
	return mongoerr.New(mongoerr.ConflictingUpdateOperators, "Updating the path '%s' would create a conflict at '%s'", dotted(path), dotted(path[:at]))
}

// childName returns the key of a path component among its siblings: the
// identifier for "$[<id>]", which must name an array filter.
func (p *parser) childName(path []string, i int) (string, error) {
	id, ok := arrayFilterID(path[i])
	if !ok {
		return path[i], nil
	}
	if i == 0 {
		return "", mongoerr.New(mongoerr.BadValue, "Cannot have array filter identifier (i.e. '$[<id>]') element in the first position in path '%s'", dotted(path))
	}
	if id != "" {
		if p.filters[id] == nil {
			return "", mongoerr.New(mongoerr.BadValue, "No array filter found for identifier '%s' in path '%s'", id, dotted(path))
		}
		p.used[id] = true
	}
	return id, nil
}

func childOf(n node, name string) node {
	switch n := n.(type) {
	case *objectNode:
		return n.child(name)
	case *arrayNode:
		return n.children[name]
	}
	return nil
}

func setChildOf(n node, name string, c node) {
	switch n := n.(type) {
	case *objectNode:
		n.setChild(name, c)
	case *arrayNode:
		n.setChild(name, c)
	}
}

// compileArrayFilters compiles the filters that "$[<id>]" components name,
// keyed by identifier.
func compileArrayFilters(filters []bson.Raw, coll *collation.Collator) (map[string]*query.Filter, error) {
	out := make(map[string]*query.Filter, len(filters))
	for _, raw := range filters {
		f, err := query.CompileWith(raw, query.Options{Collator: coll})
		if err != nil {
			return nil, causedBy(err)
		}
		id, err := filterIdentifier(bsoncore.Document(raw))
		if err != nil {
			return nil, err
		}
		if out[id] != nil {
			return nil, mongoerr.New(mongoerr.FailedToParse, "Found multiple array filters with the same top-level field name %s", id)
		}
		out[id] = f
	}
	return out, nil
}

func causedBy(err error) error {
	code := mongoerr.CodeOf(err)
	return mongoerr.New(code, "Error parsing array filter :: caused by :: %s", err.Error())
}

// filterIdentifier returns the one top-level field name an array filter
// constrains: the identifier its "$[<id>]" components use.
func filterIdentifier(filter bsoncore.Document) (string, error) {
	var id string
	var walk func(doc bsoncore.Document) error
	walk = func(doc bsoncore.Document) error {
		elems, _ := doc.Elements()
		for _, e := range elems {
			key := e.Key()
			switch {
			case key == "$and" || key == "$or" || key == "$nor":
				clauses, _ := e.Value().Array().Values()
				for _, c := range clauses {
					if sub, ok := c.DocumentOK(); ok {
						if err := walk(sub); err != nil {
							return err
						}
					}
				}
			case strings.HasPrefix(key, "$"):
				// $expr and the like constrain no named field.
			default:
				name, _, _ := strings.Cut(key, ".")
				if id == "" {
					id = name
				} else if id != name {
					return causedBy(mongoerr.New(mongoerr.FailedToParse, "Expected a single top-level field name, found '%s' and '%s'", id, name))
				}
			}
		}
		return nil
	}
	if err := walk(filter); err != nil {
		return "", err
	}
	if id == "" {
		return "", mongoerr.New(mongoerr.FailedToParse, "Cannot use an expression without a top-level field name in arrayFilters")
	}
	if !isIdentifier(id) {
		return "", causedBy(mongoerr.New(mongoerr.BadValue, "The top-level field name must be an alphanumeric string beginning with a lowercase letter, found '%s'", id))
	}
	return id, nil
}

func isIdentifier(s string) bool {
	for i, c := range s {
		switch {
		case c >= 'a' && c <= 'z':
		case i > 0 && (c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'):
		default:
			return false
		}
	}
	return s != ""
}
