package query

import (
	"bytes"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/mongoerr"
)

// Expr is a compiled aggregation expression, the language of $expr: field
// paths ("$a.b"), literals, operator documents ({$gt: ["$a", 1]}), and
// documents and arrays built of those. It is safe for concurrent use.
type Expr struct {
	root exprNode
}

// CompileExpr compiles an aggregation expression. The expression keeps its
// own copy of v.
func CompileExpr(v bsoncore.Value) (*Expr, error) {
	root, err := compileExpr(bsoncore.Value{Type: v.Type, Data: bytes.Clone(v.Data)})
	if err != nil {
		return nil, err
	}
	return &Expr{root: root}, nil
}

// Eval evaluates the expression with doc as $$ROOT. A result of Type 0 is
// missing, as when a field path names a field doc lacks. The result may
// share memory with doc. Errors are runtime errors such as adding a string,
// with MongoDB's codes.
func (e *Expr) Eval(doc bson.Raw) (bsoncore.Value, error) {
	return e.root.eval(doc)
}

// exprNode is a compiled expression, evaluated against a root document.
type exprNode interface {
	eval(root []byte) (bsoncore.Value, error)
}

// exprFilter is $expr in a filter: documents for which the expression is
// true. A runtime error makes the document not match.
type exprFilter struct {
	expr exprNode
}

func (f exprFilter) match(doc []byte, _ *state) bool {
	v, err := f.expr.eval(doc)
	return err == nil && truthy(v)
}

func compileExprOperator(v bsoncore.Value, lvl level) (node, error) {
	if lvl == subDocument {
		return nil, mongoerr.New(mongoerr.BadValue, "$expr can only be applied to the top-level document")
	}
	e, err := compileExpr(v)
	if err != nil {
		return nil, err
	}
	return exprFilter{e}, nil
}

// exprOperator compiles the arguments of an expression operator.
type exprOperator func(name string, args bsoncore.Value) (exprNode, error)

// exprOperators is filled in by init because the operators' compilers
// compile their arguments, which refers back to the table.
var exprOperators map[string]exprOperator

func compileExpr(v bsoncore.Value) (exprNode, error) {
	switch v.Type {
	case bsoncore.TypeString:
		s, _ := v.StringValueOK()
		switch {
		case strings.HasPrefix(s, "$$"):
			return compileVariable(s[2:])
		case strings.HasPrefix(s, "$"):
			return compileFieldPath(s[1:])
		}
	case bsoncore.TypeEmbeddedDocument:
		return compileExprDocument(v.Data)
	case bsoncore.TypeArray:
		elems, err := compileExprList(v.Data)
		if err != nil {
			return nil, err
		}
		return arrayExpr(elems), nil
	}
	return literal{v}, nil
}

func compileExprList(list []byte) ([]exprNode, error) {
	var nodes []exprNode
	it := elementsOf(list)
	for {
		_, e, ok := it.next()
		if !ok {
			return nodes, nil
		}
		n, err := compileExpr(e)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
	}
}

// compileExprDocument compiles an operator document {$op: args} or a
// document whose fields are expressions.
func compileExprDocument(doc []byte) (exprNode, error) {
	first := firstKey(doc)
	if !strings.HasPrefix(first, "$") {
		return compileObjectExpr(doc)
	}
	count := 0
	it := elementsOf(doc)
	for _, _, ok := it.next(); ok; _, _, ok = it.next() {
		count++
	}
	if count != 1 {
		return nil, mongoerr.New(15983, "an expression specification must contain exactly one field, the name of the expression. Found %d fields in %s",
			count, bsoncore.Document(doc))
	}
	compileOp, ok := exprOperators[first]
	if !ok {
		return nil, mongoerr.New(mongoerr.InvalidPipelineOperator, "Unrecognized expression '%s'", first)
	}
	args, _ := lookup(doc, first)
	return compileOp(first, args)
}

// literal is a constant.
type literal struct {
	v bsoncore.Value
}

func (l literal) eval([]byte) (bsoncore.Value, error) { return l.v, nil }

// fieldPath reads a path of the root document with aggregation semantics:
// an array met on the way yields the array of what the rest of the path
// finds in each element, and numeric components name fields, not positions.
type fieldPath []string

func compileFieldPath(path string) (exprNode, error) {
	if path == "" {
		return nil, mongoerr.New(16872, "'$' by itself is not a valid FieldPath")
	}
	parts := splitPath(path)
	for _, p := range parts {
		if err := checkFieldName(p); err != nil {
			return nil, err
		}
	}
	return fieldPath(parts), nil
}

// checkFieldName checks one component of a field path.
func checkFieldName(name string) error {
	switch {
	case name == "":
		return mongoerr.New(15998, "FieldPath field names may not be empty strings.")
	case strings.HasPrefix(name, "$"):
		return mongoerr.New(16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
	}
	return nil
}

// compileVariable compiles $$ROOT and $$CURRENT, the only variables there
// are outside a pipeline, with an optional path after them.
func compileVariable(s string) (exprNode, error) {
	name, path, dotted := strings.Cut(s, ".")
	if name != "ROOT" && name != "CURRENT" {
		return nil, mongoerr.New(17276, "Use of undefined variable: %s", name)
	}
	if !dotted {
		return fieldPath(nil), nil
	}
	return compileFieldPath(path)
}

func (p fieldPath) eval(root []byte) (bsoncore.Value, error) {
	return resolveFieldPath(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: root}, p), nil
}

func resolveFieldPath(v bsoncore.Value, parts []string) bsoncore.Value {
	for i, part := range parts {
		switch v.Type {
		case bsoncore.TypeEmbeddedDocument:
			var ok bool
			if v, ok = lookup(v.Data, part); !ok {
				return missing
			}
		case bsoncore.TypeArray:
			return resolveInArray(v.Data, parts[i:])
		default:
			return missing
		}
	}
	return v
}

// resolveInArray applies the rest of a path to each element of an array that
// is a document or an array, keeping the results that are not missing.
func resolveInArray(arr []byte, parts []string) bsoncore.Value {
	var found []bsoncore.Value
	it := elementsOf(arr)
	for {
		_, e, ok := it.next()
		if !ok {
			break
		}
		var r bsoncore.Value
		switch e.Type {
		case bsoncore.TypeEmbeddedDocument:
			r = resolveFieldPath(e, parts)
		case bsoncore.TypeArray:
			r = resolveInArray(e.Data, parts)
		}
		if r.Type != 0 {
			found = append(found, r)
		}
	}
	return arrayValue(found)
}

// arrayExpr builds an array; missing elements become null, as in MongoDB.
type arrayExpr []exprNode

func (a arrayExpr) eval(root []byte) (bsoncore.Value, error) {
	vals := make([]bsoncore.Value, len(a))
	for i, e := range a {
		v, err := e.eval(root)
		if err != nil {
			return missing, err
		}
		if v.Type == 0 {
			v = nullValue
		}
		vals[i] = v
	}
	return arrayValue(vals), nil
}

// objectExpr builds a document; fields whose value is missing are left out.
type objectExpr struct {
	names []string
	exprs []exprNode
}

func compileObjectExpr(doc []byte) (exprNode, error) {
	obj := &objectExpr{}
	it := elementsOf(doc)
	for {
		name, v, ok := it.next()
		if !ok {
			return obj, nil
		}
		if err := checkFieldName(string(name)); err != nil {
			return nil, err
		}
		e, err := compileExpr(v)
		if err != nil {
			return nil, err
		}
		obj.names = append(obj.names, string(name))
		obj.exprs = append(obj.exprs, e)
	}
}

func (o *objectExpr) eval(root []byte) (bsoncore.Value, error) {
	idx, doc := bsoncore.AppendDocumentStart(nil)
	for i, e := range o.exprs {
		v, err := e.eval(root)
		if err != nil {
			return missing, err
		}
		if v.Type != 0 {
			doc = bsoncore.AppendValueElement(doc, o.names[i], v)
		}
	}
	doc, _ = bsoncore.AppendDocumentEnd(doc, idx)
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}, nil
}

// Constructors of computed values.

var (
	nullValue      = bsoncore.Value{Type: bsoncore.TypeNull}
	undefinedValue = bsoncore.Value{Type: bsoncore.TypeUndefined}
)

func arrayValue(vals []bsoncore.Value) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeArray, Data: bsoncore.BuildArray(nil, vals...)}
}

func boolValue(b bool) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeBoolean, Data: bsoncore.AppendBoolean(nil, b)}
}

func int32Value(i int32) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, i)}
}

func int64Value(i int64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, i)}
}

func doubleValue(f float64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, f)}
}

func dateValue(ms int64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, ms)}
}
