package expr

import (
	"bytes"
	"context"
	"maps"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/mongoerr"
)

// Expr is a compiled aggregation expression, the language of $expr, update
// pipelines and computed projections: field paths ("$a.b"), variables
// ("$$ROOT", "$$NOW", those of $let), literals, operator documents
// ({$gt: ["$a", 1]}), and documents and arrays built of those. It is safe
// for concurrent use.
type Expr struct {
	root  exprNode
	slots int            // the variable slots the expression binds
	now   bsoncore.Value // $$NOW
	coll  *collation.Collator
}

// ExprOptions are the context an expression is compiled in.
type ExprOptions struct {
	// Now is the value of $$NOW, the same for every document the expression
	// is evaluated against. The zero time means the time of compilation.
	Now time.Time
	// Collator is the collation the comparisons of strings ($eq, $lt,
	// $in, the set operators, $min and $max...) are made under; nil is
	// the simple collation.
	Collator *collation.Collator
}

// CompileExpr compiles an aggregation expression. The expression keeps its
// own copy of v.
func CompileExpr(v bsoncore.Value) (*Expr, error) {
	return CompileExprWith(v, ExprOptions{})
}

// CompileExprWith compiles an aggregation expression in the context opts
// describes. The expression keeps its own copy of v.
func CompileExprWith(v bsoncore.Value, opts ExprOptions) (*Expr, error) {
	var c exprCompiler
	root, err := c.compile(bsoncore.Value{Type: v.Type, Data: bytes.Clone(v.Data)})
	if err != nil {
		return nil, err
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	return &Expr{root: root, slots: c.slots, now: dateValue(now.UnixMilli()), coll: opts.Collator}, nil
}

// Eval evaluates the expression with doc as $$ROOT. A result of Type 0 is
// missing, as when a field path names a field doc lacks. The result may
// share memory with doc. Errors are runtime errors such as adding a string,
// with MongoDB's codes.
func (e *Expr) Eval(doc bson.Raw) (bsoncore.Value, error) {
	return e.EvalContext(context.Background(), doc)
}

// EvalContext is Eval for a request: a long evaluation, such as a $map
// over a large array, stops with ctx's error when ctx ends.
func (e *Expr) EvalContext(ctx context.Context, doc bson.Raw) (bsoncore.Value, error) {
	return e.root.eval(&env{root: doc, vars: make([]bsoncore.Value, e.slots), now: e.now, ctx: ctx, coll: e.coll})
}

// env is what an expression is evaluated against.
type env struct {
	root []byte
	vars []bsoncore.Value // the values of the variables bound so far, by slot
	now  bsoncore.Value

	coll  *collation.Collator // strings compare under it
	ctx   context.Context     // of the request, checked by loops
	ticks int                 // loop steps, to check ctx every few
	held  int                 // bytes of the values held at once; see charge
}

// Slots of the variables that are not bound by an expression.
const (
	rootSlot = -1 - iota
	nowSlot
)

func (e *env) variable(slot int) bsoncore.Value {
	switch slot {
	case rootSlot:
		return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: e.root}
	case nowSlot:
		return e.now
	}
	return e.vars[slot]
}

// exprNode is a compiled expression.
type exprNode interface {
	eval(e *env) (bsoncore.Value, error)
}

// exprCompiler carries the variables in scope while an expression compiles.
type exprCompiler struct {
	vars  map[string]int // the variables bound around the expression, by slot
	slots int
}

// exprOperator compiles the arguments of an expression operator.
type exprOperator func(c *exprCompiler, name string, args bsoncore.Value) (exprNode, error)

// exprOperators is filled in by init because the operators' compilers
// compile their arguments, which refers back to the table.
var exprOperators map[string]exprOperator

func (c *exprCompiler) compile(v bsoncore.Value) (exprNode, error) {
	switch v.Type {
	case bsoncore.TypeString:
		s, _ := v.StringValueOK()
		switch {
		case strings.HasPrefix(s, "$$"):
			return c.compileVariable(s[2:])
		case s == "$":
			return nil, mongoerr.New(16872, "'$' by itself is not a valid FieldPath")
		case strings.HasPrefix(s, "$"):
			parts, err := fieldPathParts(s[1:])
			if err != nil {
				return nil, err
			}
			return c.variablePath("CURRENT", parts), nil
		}
	case bsoncore.TypeEmbeddedDocument:
		return c.compileDocument(v.Data)
	case bsoncore.TypeArray:
		elems, err := c.compileList(v.Data)
		if err != nil {
			return nil, err
		}
		return arrayExpr(elems), nil
	}
	return literal{v}, nil
}

func (c *exprCompiler) compileList(list []byte) ([]exprNode, error) {
	var nodes []exprNode
	it := bsonvalue.ElementsOf(list)
	for {
		_, e, ok := it.Next()
		if !ok {
			return nodes, nil
		}
		n, err := c.compile(e)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
	}
}

// compileDocument compiles an operator document {$op: args} or a document
// whose fields are expressions.
func (c *exprCompiler) compileDocument(doc []byte) (exprNode, error) {
	first := bsonvalue.FirstKey(doc)
	if !strings.HasPrefix(first, "$") {
		return c.compileObject(doc)
	}
	if n := countFields(doc); n != 1 {
		return nil, mongoerr.New(15983, "An object representing an expression must have exactly one field: %s", bsoncore.Document(doc))
	}
	compileOp, ok := exprOperators[first]
	if !ok {
		return nil, mongoerr.New(mongoerr.InvalidPipelineOperator, "Unrecognized expression '%s'", first)
	}
	args, _ := bsonvalue.Lookup(doc, first)
	return compileOp(c, first, args)
}

func countFields(doc []byte) int {
	n := 0
	it := bsonvalue.ElementsOf(doc)
	for _, _, ok := it.Next(); ok; _, _, ok = it.Next() {
		n++
	}
	return n
}

// scope compiles body with names bound to new variable slots, which it
// returns in the same order.
func (c *exprCompiler) scope(names []string, body bsoncore.Value) (exprNode, []int, error) {
	outer := c.vars
	c.vars = maps.Clone(outer)
	if c.vars == nil {
		c.vars = map[string]int{}
	}
	slots := make([]int, len(names))
	for i, name := range names {
		slots[i] = c.slots
		c.vars[name] = c.slots
		c.slots++
	}
	n, err := c.compile(body)
	c.vars = outer
	return n, slots, err
}

// literal is a constant.
type literal struct {
	v bsoncore.Value
}

func (l literal) eval(*env) (bsoncore.Value, error) { return l.v, nil }

// fieldPathParts splits and checks the path of "$a.b" or "$$var.a.b".
func fieldPathParts(path string) ([]string, error) {
	parts := strings.Split(path, ".")
	for _, p := range parts {
		if err := bsonvalue.CheckFieldName(p); err != nil {
			return nil, err
		}
	}
	return parts, nil
}

// compileVariable compiles "$$name" or "$$name.path": a variable bound by
// an enclosing $let, $map, $filter or $reduce, or a system variable.
func (c *exprCompiler) compileVariable(s string) (exprNode, error) {
	name, path, dotted := strings.Cut(s, ".")
	if err := checkVariableName(name); err != nil {
		return nil, err
	}
	var parts []string
	if dotted {
		var err error
		if parts, err = fieldPathParts(path); err != nil {
			return nil, err
		}
	}
	if _, bound := c.vars[name]; bound {
		return c.variablePath(name, parts), nil
	}
	switch name {
	case "ROOT":
		return varPath{slot: rootSlot, parts: parts}, nil
	case "CURRENT":
		return c.variablePath(name, parts), nil
	case "NOW":
		return varPath{slot: nowSlot, parts: parts}, nil
	case "REMOVE":
		return literal{bsonvalue.Missing}, nil
	case "CLUSTER_TIME":
		return failure{mongoerr.New(51144, "Builtin variable '$$CLUSTER_TIME' is not available")}, nil
	}
	return nil, mongoerr.New(17276, "Use of undefined variable: %s", name)
}

// variablePath reads a path of a variable; CURRENT, unless a $let rebinds
// it, is the document itself.
func (c *exprCompiler) variablePath(name string, parts []string) exprNode {
	if slot, ok := c.vars[name]; ok {
		return varPath{slot: slot, parts: parts}
	}
	return varPath{slot: rootSlot, parts: parts}
}

// checkVariableName checks the name of a variable being read.
func checkVariableName(name string) error {
	if name == "" {
		return mongoerr.New(16869, "empty variable names are not allowed")
	}
	for i := 0; i < len(name); i++ {
		b := name[i]
		letter := b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= 0x80
		switch {
		case i == 0 && !letter:
			return mongoerr.New(16870, "'%s' starts with an invalid character for a variable name", name)
		case !letter && !(b >= '0' && b <= '9') && b != '_':
			return mongoerr.New(16871, "'%s' contains an invalid character for a variable name: '%c'", name, b)
		}
	}
	return nil
}

// checkVariableDefinition checks the name of a variable being bound: user
// variables start with a lowercase letter, and only CURRENT of the system
// variables may be rebound.
func checkVariableDefinition(name string) error {
	if name == "CURRENT" {
		return nil
	}
	if name == "" {
		return mongoerr.New(16866, "empty variable names are not allowed")
	}
	for i := 0; i < len(name); i++ {
		b := name[i]
		lower := b >= 'a' && b <= 'z' || b >= 0x80
		switch {
		case i == 0 && !lower:
			return mongoerr.New(16867, "'%s' starts with an invalid character for a user variable name", name)
		case !lower && !(b >= 'A' && b <= 'Z') && !(b >= '0' && b <= '9') && b != '_':
			return mongoerr.New(16868, "'%s' contains an invalid character for a variable name: '%c'", name, b)
		}
	}
	return nil
}

// varPath reads a variable, or a path of it with aggregation semantics: an
// array met on the way yields the array of what the rest of the path finds
// in each of its documents, and numeric components name fields, not
// positions.
type varPath struct {
	slot  int
	parts []string
}

func (p varPath) eval(e *env) (bsoncore.Value, error) {
	v := e.variable(p.slot)
	if len(p.parts) == 0 {
		return v, nil
	}
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		return resolveFieldPath(v, p.parts), nil
	case bsoncore.TypeArray:
		return resolveInArray(v.Data, p.parts), nil
	}
	return bsonvalue.Missing, nil
}

// resolveFieldPath applies a path to a document.
func resolveFieldPath(doc bsoncore.Value, parts []string) bsoncore.Value {
	v, ok := bsonvalue.Lookup(doc.Data, parts[0])
	switch {
	case !ok:
		return bsonvalue.Missing
	case len(parts) == 1:
		return v
	case v.Type == bsoncore.TypeEmbeddedDocument:
		return resolveFieldPath(v, parts[1:])
	case v.Type == bsoncore.TypeArray:
		return resolveInArray(v.Data, parts[1:])
	}
	return bsonvalue.Missing
}

// resolveInArray applies a path to each document of an array, keeping what
// is not missing. Other elements, nested arrays included, are skipped.
func resolveInArray(arr []byte, parts []string) bsoncore.Value {
	var found []bsoncore.Value
	it := bsonvalue.ElementsOf(arr)
	for {
		_, e, ok := it.Next()
		if !ok {
			return arrayValue(found)
		}
		if e.Type != bsoncore.TypeEmbeddedDocument {
			continue
		}
		if r := resolveFieldPath(e, parts); r.Type != 0 {
			found = append(found, r)
		}
	}
}

// failure is an expression whose evaluation always fails.
type failure struct {
	err error
}

func (f failure) eval(*env) (bsoncore.Value, error) { return bsonvalue.Missing, f.err }

// arrayExpr builds an array; missing elements become null, as in MongoDB.
type arrayExpr []exprNode

func (a arrayExpr) eval(e *env) (bsoncore.Value, error) {
	vals := make([]bsoncore.Value, len(a))
	size := e.buildingArray("an array expression")
	defer size.release()
	for i, n := range a {
		v, err := n.eval(e)
		if err != nil {
			return bsonvalue.Missing, err
		}
		if v.Type == 0 {
			v = bsonvalue.Null
		}
		if err := size.addElement(i, v); err != nil {
			return bsonvalue.Missing, err
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

func (c *exprCompiler) compileObject(doc []byte) (exprNode, error) {
	obj := &objectExpr{}
	seen := map[string]bool{}
	it := bsonvalue.ElementsOf(doc)
	for {
		key, v, ok := it.Next()
		if !ok {
			return obj, nil
		}
		name := string(key)
		if err := bsonvalue.CheckFieldName(name); err != nil {
			return nil, err
		}
		if strings.Contains(name, ".") {
			return nil, mongoerr.New(16412, "FieldPath field names may not contain '.'.")
		}
		if seen[name] {
			return nil, mongoerr.New(16406, "duplicate field name specified in object literal: %s", bsoncore.Document(doc))
		}
		seen[name] = true
		n, err := c.compile(v)
		if err != nil {
			return nil, err
		}
		obj.names = append(obj.names, name)
		obj.exprs = append(obj.exprs, n)
	}
}

func (o *objectExpr) eval(e *env) (bsoncore.Value, error) {
	size := e.buildingArray("an object expression")
	defer size.release()
	idx, doc := bsoncore.AppendDocumentStart(nil)
	for i, n := range o.exprs {
		v, err := n.eval(e)
		if err != nil {
			return bsonvalue.Missing, err
		}
		if v.Type != 0 {
			if err := size.addField(o.names[i], v); err != nil {
				return bsonvalue.Missing, err
			}
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

// intOrLong is an int32 when i fits one, else an int64, as MongoDB types
// the results of integer arithmetic on int32 operands.
func intOrLong(i int64) bsoncore.Value {
	if i == int64(int32(i)) {
		return int32Value(int32(i))
	}
	return int64Value(i)
}

func doubleValue(f float64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, f)}
}

func dateValue(ms int64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, ms)}
}

func stringValue(s string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, s)}
}

// CheckVariableDefinition checks the name of a variable a command's let
// defines, by the rules and with the codes of $let's vars.
func CheckVariableDefinition(name string) error { return checkVariableDefinition(name) }

// Collator returns the collation the expression compares strings under;
// nil is the simple collation, also for a nil expression.
func (e *Expr) Collator() *collation.Collator {
	if e == nil {
		return nil
	}
	return e.coll
}
