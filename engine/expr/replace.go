package expr

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
)

// $replaceOne and $replaceAll replace literal text (not patterns) in a
// string, byte for byte: an empty 'find' matches at every byte position.

func replaceOperators() map[string]exprOperator {
	return map[string]exprOperator{
		"$replaceOne": compileReplace,
		"$replaceAll": compileReplace,
	}
}

type replaceExpr struct {
	name                     string
	input, find, replacement exprNode
}

func compileReplace(c *exprCompiler, name string, args bsoncore.Value) (exprNode, error) {
	if args.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(51751, "%s requires an object as an argument, found: %s", name, bsonvalue.TypeName(args.Type))
	}
	nodes, err := c.compileNamed(args.Data, []string{"input", "find", "replacement"},
		func(arg string) error { return mongoerr.New(51750, "%s found an unknown argument: %s", name, arg) })
	switch {
	case err != nil:
		return nil, err
	case nodes[0] == nil:
		return nil, mongoerr.New(51749, "%s requires 'input' to be specified", name)
	case nodes[1] == nil:
		return nil, mongoerr.New(51748, "%s requires 'find' to be specified", name)
	case nodes[2] == nil:
		return nil, mongoerr.New(51747, "%s requires 'replacement' to be specified", name)
	}
	return &replaceExpr{name: name, input: nodes[0], find: nodes[1], replacement: nodes[2]}, nil
}

func (x *replaceExpr) eval(e *env) (bsoncore.Value, error) {
	held := e.held
	defer func() { e.held = held }()
	vals, err := evalArgs(e, []exprNode{x.input, x.find, x.replacement})
	if err != nil {
		return bsonvalue.Missing, err
	}
	// Every argument's type is checked before a null makes the result null.
	for i, what := range []string{"input", "find", "replacement"} {
		if v := vals[i]; !isNullish(v) && v.Type != bsoncore.TypeString {
			return bsonvalue.Missing, mongoerr.New(51746-mongoerr.Code(i), "%s requires that '%s' be a string, found: %s", x.name, what, v)
		}
	}
	for _, v := range vals {
		if isNullish(v) {
			return bsonvalue.Null, nil
		}
	}
	in, find, repl := stringOf(vals[0]), stringOf(vals[1]), stringOf(vals[2])
	if x.name == "$replaceOne" {
		i := strings.Index(in, find)
		if i < 0 {
			return vals[0], nil
		}
		return stringValue(in[:i] + repl + in[i+len(find):]), nil
	}
	// Count before building, so that a result past the limit is never
	// built.
	n := strings.Count(in, find)
	if find == "" {
		n = len(in) + 1
	}
	if total := len(in) + n*(len(repl)-len(find)); total+5 > MaxValueBytes {
		return bsonvalue.Missing, valueTooLarge(x.name, total+5)
	}
	var b strings.Builder
	if find == "" {
		// MongoDB inserts the replacement around every byte.
		for i := 0; i < len(in); i++ {
			b.WriteString(repl)
			b.WriteByte(in[i])
		}
		b.WriteString(repl)
		return stringValue(b.String()), nil
	}
	return stringValue(strings.ReplaceAll(in, find, repl)), nil
}
