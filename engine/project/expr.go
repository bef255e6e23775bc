package project

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/mongoerr"
)

// expr is the value of a computed field. Find projections accept aggregation
// expressions; Lethe evaluates the ones that need no expression engine:
// literal values, $literal, "$field.path" references and arrays and
// documents built of these.
type expr interface {
	// eval returns the value for the document root, or false when the
	// value is missing, which leaves the field out.
	eval(root bsoncore.Document) (bsoncore.Value, bool)
}

type constant bsoncore.Value

func (c constant) eval(bsoncore.Document) (bsoncore.Value, bool) { return bsoncore.Value(c), true }

// fieldRef is "$a.b": the value at a path of the document. A path through
// an array collects the values of the array's documents.
type fieldRef []string

func (f fieldRef) eval(root bsoncore.Document) (bsoncore.Value, bool) {
	if len(f) == 0 {
		return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: root}, true
	}
	return evalPath(root, f)
}

func evalPath(doc bsoncore.Document, path []string) (bsoncore.Value, bool) {
	v, err := doc.LookupErr(path[0])
	if err != nil {
		return bsoncore.Value{}, false
	}
	if len(path) == 1 {
		return v, true
	}
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		return evalPath(v.Document(), path[1:])
	case bsoncore.TypeArray:
		elems, _ := v.Array().Values()
		var found []bsoncore.Value
		for _, e := range elems {
			if d, ok := e.DocumentOK(); ok {
				if x, ok := evalPath(d, path[1:]); ok {
					found = append(found, x)
				}
			}
		}
		return arrayValue(found), true
	}
	return bsoncore.Value{}, false
}

// arrayExpr builds an array; missing values become null.
type arrayExpr []expr

func (a arrayExpr) eval(root bsoncore.Document) (bsoncore.Value, bool) {
	values := make([]bsoncore.Value, len(a))
	for i, e := range a {
		v, ok := e.eval(root)
		if !ok {
			v = bsoncore.Value{Type: bsoncore.TypeNull}
		}
		values[i] = v
	}
	return arrayValue(values), true
}

// objectExpr builds a document; missing values leave their field out.
type objectExpr struct {
	names []string
	exprs []expr
}

func (o objectExpr) eval(root bsoncore.Document) (bsoncore.Value, bool) {
	idx, dst := bsoncore.AppendDocumentStart(nil)
	for i, e := range o.exprs {
		if v, ok := e.eval(root); ok {
			dst = bsoncore.AppendValueElement(dst, o.names[i], v)
		}
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: dst}, true
}

func arrayValue(values []bsoncore.Value) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeArray, Data: bsoncore.BuildArray(nil, values...)}
}

// parseExpr parses an expression operand: a string starting with '$' refers
// to a field or variable, arrays and documents are built of expressions, and
// any other value stands for itself.
func parseExpr(v bsoncore.Value) (expr, error) {
	switch v.Type {
	case bsoncore.TypeString:
		s := v.StringValue()
		if strings.HasPrefix(s, "$") {
			return parseFieldRef(s)
		}
	case bsoncore.TypeArray:
		elems, _ := v.Array().Values()
		a := make(arrayExpr, len(elems))
		for i, e := range elems {
			x, err := parseExpr(e)
			if err != nil {
				return nil, err
			}
			a[i] = x
		}
		return a, nil
	case bsoncore.TypeEmbeddedDocument:
		return parseObjectExpr(v.Document())
	}
	return constant(v), nil
}

func parseFieldRef(s string) (expr, error) {
	if s == "$" {
		return nil, mongoerr.New(mongoerr.Code(16872), "'$' by itself is not a valid FieldPath")
	}
	path := strings.Split(s[1:], ".")
	if strings.HasPrefix(s, "$$") {
		switch name := path[0][1:]; name {
		case "ROOT", "CURRENT":
			path = path[1:]
		case "":
			return nil, mongoerr.New(mongoerr.FailedToParse, "empty variable names are not allowed")
		case "REMOVE", "NOW", "CLUSTER_TIME", "SEARCH_META", "USER_ROLES":
			return nil, mongoerr.New(mongoerr.NotImplemented, "the variable $$%s is not supported in a projection", name)
		default:
			return nil, mongoerr.New(mongoerr.Code(17276), "Use of undefined variable: %s", name)
		}
	}
	if err := checkFieldNames(path); err != nil {
		return nil, err
	}
	return fieldRef(path), nil
}

// parseObjectExpr parses a document in an expression: an operator such as
// {$literal: ...} when its first field starts with '$', otherwise a document
// of expressions.
func parseObjectExpr(doc bsoncore.Document) (expr, error) {
	elems, _ := doc.Elements()
	if len(elems) > 0 && strings.HasPrefix(elems[0].Key(), "$") {
		return parseOperator(elems)
	}
	var o objectExpr
	for _, e := range elems {
		if strings.Contains(e.Key(), ".") {
			return nil, mongoerr.New(mongoerr.Code(16412), "FieldPath field names may not contain '.'.")
		}
		if err := checkFieldNames([]string{e.Key()}); err != nil {
			return nil, err
		}
		x, err := parseExpr(e.Value())
		if err != nil {
			return nil, err
		}
		o.names = append(o.names, e.Key())
		o.exprs = append(o.exprs, x)
	}
	return o, nil
}

// parseOperator parses an expression operator. $literal is the one Lethe
// evaluates; the others need the aggregation engine and are refused.
func parseOperator(elems []bsoncore.Element) (expr, error) {
	name := elems[0].Key()
	if len(elems) > 1 {
		return nil, mongoerr.New(mongoerr.Code(15983), "An object representing an expression must have exactly one field: %s", describeDocument(elems))
	}
	if name == "$literal" {
		return constant(elems[0].Value()), nil
	}
	return nil, mongoerr.New(mongoerr.NotImplemented, "the expression %s is not supported in a find projection", name)
}

func describeDocument(elems []bsoncore.Element) string {
	names := make([]string, len(elems))
	for i, e := range elems {
		names[i] = e.Key() + ": " + e.Value().String()
	}
	return "{ " + strings.Join(names, ", ") + " }"
}

// checkFieldNames checks the components of a field path as MongoDB's
// FieldPath does.
func checkFieldNames(path []string) error {
	for _, part := range path {
		switch {
		case part == "":
			return mongoerr.New(mongoerr.Code(15998), "FieldPath field names may not be empty strings.")
		case strings.HasPrefix(part, "$"):
			return mongoerr.New(mongoerr.Code(16410), "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
		case strings.ContainsRune(part, 0):
			return mongoerr.New(mongoerr.Code(16411), "FieldPath field names may not contain '\\0'.")
		}
	}
	return nil
}
