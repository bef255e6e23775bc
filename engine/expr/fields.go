package expr

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
)

// $getField, $setField and $unsetField read and write one field of a
// document by its literal name, so that names a field path cannot spell
// (with dots, or starting with '$') can be reached. As in MongoDB 7.0 the
// name must be a constant string.

func fieldOperators() map[string]exprOperator {
	return map[string]exprOperator{
		"$getField":   compileGetField,
		"$setField":   compileSetField,
		"$unsetField": compileSetField,
	}
}

// fieldNameCodes are the codes of a 'field' argument that is not a
// constant string: a field path, another non-constant expression, and a
// constant of another type.
type fieldNameCodes struct {
	path, nonConstant, notString mongoerr.Code
}

// constantFieldName checks the compiled 'field' argument of name, whose
// source is raw, and returns the field name it stands for.
func constantFieldName(name string, raw bsoncore.Value, n exprNode, codes fieldNameCodes) (string, error) {
	if s, ok := raw.StringValueOK(); ok && strings.HasPrefix(s, "$") {
		return "", mongoerr.New(codes.path, "'%s' is a field path reference which is not allowed in this context. Did you mean {$literal: '%s'}?", s, s)
	}
	lit, ok := n.(literal)
	if !ok {
		return "", mongoerr.New(codes.nonConstant, "%s requires 'field' to evaluate to a constant, but got a non-constant argument", name)
	}
	if lit.v.Type != bsoncore.TypeString {
		return "", mongoerr.New(codes.notString, "%s requires 'field' to evaluate to type String, but got %s", name, bsonvalue.TypeName(lit.v.Type))
	}
	return stringOf(lit.v), nil
}

// getFieldExpr is $getField.
type getFieldExpr struct {
	field string
	input exprNode
}

func compileGetField(c *exprCompiler, name string, args bsoncore.Value) (exprNode, error) {
	var field, input exprNode
	var rawField bsoncore.Value
	var err error
	if args.Type == bsoncore.TypeEmbeddedDocument && !strings.HasPrefix(bsonvalue.FirstKey(args.Data), "$") {
		vals, err := readArgs(args.Data, []string{"field", "input"},
			func(arg string) error { return mongoerr.New(3041701, "%s found an unknown argument: %s", name, arg) })
		if err != nil {
			return nil, err
		}
		nodes, err := c.compileGiven(vals)
		if err != nil {
			return nil, err
		}
		rawField, field, input = vals[0], nodes[0], nodes[1]
	} else {
		// The short form {$getField: <field>} reads a field of $$CURRENT.
		rawField = args
		if field, err = c.compile(args); err != nil {
			return nil, err
		}
		if input, err = c.compileVariable("CURRENT"); err != nil {
			return nil, err
		}
	}
	switch {
	case field == nil:
		return nil, mongoerr.New(3041702, "%s requires 'field' to be specified", name)
	case input == nil:
		return nil, mongoerr.New(3041703, "%s requires 'input' to be specified", name)
	}
	x := &getFieldExpr{input: input}
	if x.field, err = constantFieldName(name, rawField, field, fieldNameCodes{5654600, 5654601, 5654602}); err != nil {
		return nil, err
	}
	return x, nil
}

func (x *getFieldExpr) eval(e *env) (bsoncore.Value, error) {
	in, err := x.input.eval(e)
	switch {
	case err != nil:
		return bsonvalue.Missing, err
	case in.Type == 0:
		return bsonvalue.Missing, nil
	case isNullish(in):
		return bsonvalue.Null, nil
	case in.Type != bsoncore.TypeEmbeddedDocument:
		return bsonvalue.Missing, nil
	}
	v, _ := bsonvalue.Lookup(in.Data, x.field)
	return v, nil
}

// setFieldExpr is $setField, and $unsetField, which sets the field to
// $$REMOVE.
type setFieldExpr struct {
	field        string
	input, value exprNode
}

func compileSetField(c *exprCompiler, name string, args bsoncore.Value) (exprNode, error) {
	if args.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(4161100, "%s only supports an object as its argument", name)
	}
	names := []string{"field", "input", "value"}
	if name == "$unsetField" {
		names = names[:2]
	}
	vals, err := readArgs(args.Data, names,
		func(arg string) error { return mongoerr.New(4161101, "%s found an unknown argument: %s", name, arg) })
	if err != nil {
		return nil, err
	}
	nodes, err := c.compileGiven(vals)
	if err != nil {
		return nil, err
	}
	value := literal{bsonvalue.Missing}
	x := &setFieldExpr{input: nodes[1], value: value}
	if name == "$setField" {
		x.value = nodes[2]
	}
	switch {
	case nodes[0] == nil:
		return nil, mongoerr.New(4161102, "%s requires 'field' to be specified", name)
	case x.value == nil:
		return nil, mongoerr.New(4161103, "%s requires 'value' to be specified", name)
	case x.input == nil:
		return nil, mongoerr.New(4161109, "%s requires 'input' to be specified", name)
	}
	if x.field, err = constantFieldName(name, vals[0], nodes[0], fieldNameCodes{4161108, 4161106, 4161107}); err != nil {
		return nil, err
	}
	return x, nil
}

func (x *setFieldExpr) eval(e *env) (bsoncore.Value, error) {
	held := e.held
	defer func() { e.held = held }()
	in, err := x.input.eval(e)
	switch {
	case err != nil:
		return bsonvalue.Missing, err
	case isNullish(in):
		return bsonvalue.Null, nil
	case in.Type != bsoncore.TypeEmbeddedDocument:
		// MongoDB names $setField here for $unsetField too.
		return bsonvalue.Missing, mongoerr.New(4161105, "$setField requires 'input' to evaluate to type Object")
	}
	if err := e.hold(in); err != nil {
		return bsonvalue.Missing, err
	}
	v, err := x.value.eval(e)
	if err != nil {
		return bsonvalue.Missing, err
	}
	// The field keeps its place when it is there, and comes last when not;
	// a missing value removes it.
	size := e.buildingArray("$setField")
	defer size.release()
	idx, doc := bsoncore.AppendDocumentStart(nil)
	set := false
	it := bsonvalue.ElementsOf(in.Data)
	for {
		key, old, ok := it.Next()
		if !ok {
			break
		}
		if string(key) == x.field {
			old, set = v, true
		}
		if old.Type == 0 {
			continue
		}
		if err := size.addField(string(key), old); err != nil {
			return bsonvalue.Missing, err
		}
		doc = bsoncore.AppendValueElement(doc, string(key), old)
	}
	if !set && v.Type != 0 {
		if err := size.addField(x.field, v); err != nil {
			return bsonvalue.Missing, err
		}
		doc = bsoncore.AppendValueElement(doc, x.field, v)
	}
	doc, _ = bsoncore.AppendDocumentEnd(doc, idx)
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}, nil
}
