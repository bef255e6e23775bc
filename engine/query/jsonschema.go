package query

import (
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/mongoerr"
)

// $jsonSchema validates the whole document against a draft-4 JSON Schema,
// with MongoDB's bsonType extension. A schema compiles to a predicate on one
// value, built from one check per keyword. As in JSON Schema, a keyword about
// one type says nothing about values of other types: {minimum: 5} accepts
// strings. Unlike the query language, nothing traverses arrays implicitly.

// keywordCompiler compiles one keyword of a schema; schema is the whole
// schema, for keywords that read a sibling (exclusiveMinimum reads minimum).
// It returns nil for keywords that leave every value valid.
type keywordCompiler func(name string, v bsoncore.Value, schema []byte) (predicate, error)

// schemaKeywords is filled in by init because schemas nest.
var schemaKeywords map[string]keywordCompiler

func init() {
	schemaKeywords = map[string]keywordCompiler{
		"bsonType":             compileSchemaType(bsonTypeNames),
		"type":                 compileSchemaType(jsonTypeNames),
		"required":             compileRequired,
		"properties":           compileObjectFields,
		"patternProperties":    compileObjectFields,
		"additionalProperties": compileObjectFields,
		"minProperties":        compileCount(bsoncore.TypeEmbeddedDocument, false),
		"maxProperties":        compileCount(bsoncore.TypeEmbeddedDocument, true),
		"enum":                 compileEnum,
		"minimum":              compileBound(opGTE, opGT, "exclusiveMinimum"),
		"maximum":              compileBound(opLTE, opLT, "exclusiveMaximum"),
		"exclusiveMinimum":     compileExclusive("minimum"),
		"exclusiveMaximum":     compileExclusive("maximum"),
		"multipleOf":           compileMultipleOf,
		"minLength":            compileLength(false),
		"maxLength":            compileLength(true),
		"pattern":              compilePattern,
		"items":                compileItems,
		"additionalItems":      compileAdditionalItems,
		"minItems":             compileCount(bsoncore.TypeArray, false),
		"maxItems":             compileCount(bsoncore.TypeArray, true),
		"uniqueItems":          compileUniqueItems,
		"allOf":                compileCombination(func(p []predicate) predicate { return allOfSchemas(p) }),
		"anyOf":                compileCombination(func(p []predicate) predicate { return anyOfSchemas(p) }),
		"oneOf":                compileCombination(func(p []predicate) predicate { return oneOfSchemas(p) }),
		"not":                  compileNotSchema,
		"title":                compileAnnotation,
		"description":          compileAnnotation,
	}
}

// unsupportedSchemaKeywords are the draft-4 keywords MongoDB refuses itself.
var unsupportedSchemaKeywords = map[string]bool{
	"$ref": true, "$schema": true, "default": true, "definitions": true, "format": true, "id": true,
}

// lethesUnsupportedSchemaKeywords are keywords MongoDB accepts and Lethe
// does not implement yet.
var lethesUnsupportedSchemaKeywords = map[string]bool{
	"dependencies": true, "encrypt": true, "encryptMetadata": true,
}

// compileJSONSchema compiles the $jsonSchema operator.
func compileJSONSchema(v bsoncore.Value, lvl level) (node, error) {
	if lvl.subDocument {
		return nil, mongoerr.New(mongoerr.BadValue, "$jsonSchema can only be applied to the top-level document")
	}
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema must be an object")
	}
	schema, err := compileSchema(v.Data)
	if err != nil {
		return nil, err
	}
	return schemaNode{schema}, nil
}

// schemaNode matches the documents a schema accepts.
type schemaNode struct {
	schema predicate
}

func (n schemaNode) match(doc []byte, _ *state) bool {
	return n.schema.test(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc})
}

// compileSchema compiles a schema into the conjunction of its keywords.
func compileSchema(schema []byte) (predicate, error) {
	var checks allOfSchemas
	seen := map[string]bool{}
	it := bsonvalue.ElementsOf(schema)
	for {
		key, v, ok := it.Next()
		if !ok {
			break
		}
		name := string(key)
		if seen[name] {
			return nil, mongoerr.New(mongoerr.FailedToParse, "Duplicate $jsonSchema keyword: %s", name)
		}
		seen[name] = true
		compile, ok := schemaKeywords[name]
		switch {
		case unsupportedSchemaKeywords[name]:
			return nil, mongoerr.New(mongoerr.FailedToParse, "$jsonSchema keyword '%s' is not currently supported", name)
		case lethesUnsupportedSchemaKeywords[name]:
			return nil, mongoerr.New(mongoerr.NotImplemented, "$jsonSchema keyword '%s' is not supported by Lethe", name)
		case !ok:
			return nil, mongoerr.New(mongoerr.FailedToParse, "Unknown $jsonSchema keyword: %s", name)
		}
		check, err := compile(name, v, schema)
		if err != nil {
			return nil, err
		}
		if check != nil {
			checks = append(checks, check)
		}
	}
	if seen["type"] && seen["bsonType"] {
		return nil, mongoerr.New(mongoerr.FailedToParse, "Cannot specify both $jsonSchema keywords 'type' and 'bsonType'")
	}
	if len(checks) == 1 {
		return checks[0], nil
	}
	return checks, nil
}

// compileSubschema compiles a keyword's value that must be a schema.
func compileSubschema(name string, v bsoncore.Value) (predicate, error) {
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword '%s' must be an object", name)
	}
	return compileSchema(v.Data)
}

// compileSchemaList compiles a keyword's value that must be an array of
// schemas.
func compileSchemaList(name string, v bsoncore.Value) ([]predicate, error) {
	if v.Type != bsoncore.TypeArray {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword '%s' must be an array", name)
	}
	var list []predicate
	it := bsonvalue.ElementsOf(v.Data)
	for {
		_, e, ok := it.Next()
		if !ok {
			return list, nil
		}
		if e.Type != bsoncore.TypeEmbeddedDocument {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword '%s' must be an array of objects", name)
		}
		s, err := compileSchema(e.Data)
		if err != nil {
			return nil, err
		}
		list = append(list, s)
	}
}

// nonNegativeInteger reads the value of a count keyword such as minLength.
func nonNegativeInteger(name string, v bsoncore.Value) (int64, error) {
	if !v.IsNumber() {
		return 0, mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword '%s' must be a number", name)
	}
	n, ok := bsonvalue.IntegerValue(v)
	switch {
	case !ok:
		return 0, mongoerr.New(mongoerr.FailedToParse, "Expected an integer: %s: %s", name, numberString(v))
	case n < 0:
		return 0, mongoerr.New(mongoerr.FailedToParse, "Expected a positive number in: %s: %s", name, numberString(v))
	}
	return n, nil
}

// nonEmptyArray checks that a keyword's value is a nonempty array.
func nonEmptyArray(name string, v bsoncore.Value) error {
	if v.Type != bsoncore.TypeArray {
		return mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword '%s' must be an array", name)
	}
	if isEmptyContainer(v.Data) {
		return mongoerr.New(mongoerr.FailedToParse, "$jsonSchema keyword '%s' cannot be an empty array", name)
	}
	return nil
}

// onlyFor applies a check to values of some types and accepts all others.
type onlyFor struct {
	types typeSet
	check predicate
}

func (o *onlyFor) test(v bsoncore.Value) bool {
	return !o.types.test(v) || o.check.test(v)
}

func newOnlyFor(check predicate, types ...bsoncore.Type) *onlyFor {
	o := &onlyFor{check: check}
	for _, t := range types {
		o.types.add(t)
	}
	return o
}

var numberTypes = []bsoncore.Type{bsoncore.TypeDouble, bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDecimal128}

// bsonTypeNames resolves bsonType's names: $type's aliases and "number".
func bsonTypeNames(name string) ([]bsoncore.Type, bool) {
	if name == "number" {
		return numberTypes, true
	}
	t, ok := bsonvalue.TypeByAlias(name)
	return []bsoncore.Type{t}, ok
}

// jsonTypeNames resolves type's names, JSON's types.
func jsonTypeNames(name string) ([]bsoncore.Type, bool) {
	switch name {
	case "number":
		return numberTypes, true
	case "object":
		return []bsoncore.Type{bsoncore.TypeEmbeddedDocument}, true
	case "array":
		return []bsoncore.Type{bsoncore.TypeArray}, true
	case "boolean":
		return []bsoncore.Type{bsoncore.TypeBoolean}, true
	case "string":
		return []bsoncore.Type{bsoncore.TypeString}, true
	case "null":
		return []bsoncore.Type{bsoncore.TypeNull}, true
	}
	return nil, false
}

func compileSchemaType(resolve func(string) ([]bsoncore.Type, bool)) keywordCompiler {
	return func(name string, v bsoncore.Value, _ []byte) (predicate, error) {
		var names []string
		switch v.Type {
		case bsoncore.TypeString:
			names = []string{v.StringValue()}
		case bsoncore.TypeArray:
			it := bsonvalue.ElementsOf(v.Data)
			for {
				_, e, ok := it.Next()
				if !ok {
					break
				}
				s, ok := e.StringValueOK()
				if !ok {
					return nil, mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword '%s' array elements must be strings", name)
				}
				if slices.Contains(names, s) {
					return nil, mongoerr.New(mongoerr.FailedToParse, "$jsonSchema keyword '%s' has duplicate value: %s", name, s)
				}
				names = append(names, s)
			}
			if len(names) == 0 {
				return nil, mongoerr.New(mongoerr.FailedToParse, "$jsonSchema keyword '%s' must name at least one type", name)
			}
		default:
			return nil, mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword '%s' must be either a string or an array of strings", name)
		}
		set := new(typeSet)
		for _, n := range names {
			if name == "type" && n == "integer" {
				return nil, mongoerr.New(mongoerr.FailedToParse, "$jsonSchema type 'integer' is not currently supported.")
			}
			types, ok := resolve(n)
			if !ok {
				return nil, mongoerr.New(mongoerr.BadValue, "Unknown type name alias: %s", n)
			}
			for _, t := range types {
				set.add(t)
			}
		}
		return set, nil
	}
}

// requiredFields accepts objects that have all the fields.
type requiredFields []string

func (r requiredFields) test(v bsoncore.Value) bool {
	for _, name := range r {
		if _, ok := bsonvalue.Lookup(v.Data, name); !ok {
			return false
		}
	}
	return true
}

func compileRequired(name string, v bsoncore.Value, _ []byte) (predicate, error) {
	if err := nonEmptyArray(name, v); err != nil {
		return nil, err
	}
	var fields requiredFields
	it := bsonvalue.ElementsOf(v.Data)
	for {
		_, e, ok := it.Next()
		if !ok {
			break
		}
		s, ok := e.StringValueOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword 'required' must contain only strings")
		}
		if slices.Contains(fields, s) {
			return nil, mongoerr.New(mongoerr.FailedToParse, "$jsonSchema keyword 'required' array must not contain duplicate values")
		}
		fields = append(fields, s)
	}
	return newOnlyFor(fields, bsoncore.TypeEmbeddedDocument), nil
}

// objectFields checks the fields of an object: properties names them,
// patternProperties matches their names, and additionalProperties covers
// the fields neither reaches. Nil additional allows any other field.
type objectFields struct {
	named      map[string]predicate
	patterns   []fieldPattern
	additional predicate
}

type fieldPattern struct {
	re     *regexp.Regexp
	schema predicate
}

func (o *objectFields) test(v bsoncore.Value) bool {
	it := bsonvalue.ElementsOf(v.Data)
	for {
		key, field, ok := it.Next()
		if !ok {
			return true
		}
		schema, covered := o.named[string(key)]
		if covered && !schema.test(field) {
			return false
		}
		for _, p := range o.patterns {
			if p.re.Match(key) {
				covered = true
				if !p.schema.test(field) {
					return false
				}
			}
		}
		if !covered && o.additional != nil && !o.additional.test(field) {
			return false
		}
	}
}

// compileObjectFields compiles properties, patternProperties and
// additionalProperties together, when it meets the first of them.
func compileObjectFields(name string, _ bsoncore.Value, schema []byte) (predicate, error) {
	if name != firstOf(schema, "properties", "patternProperties", "additionalProperties") {
		return nil, nil
	}
	o := &objectFields{named: map[string]predicate{}}
	if v, ok := bsonvalue.Lookup(schema, "properties"); ok {
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword 'properties' must be an object")
		}
		if err := compileFieldSchemas(v.Data, func(field string, s predicate) error {
			o.named[field] = s
			return nil
		}); err != nil {
			return nil, err
		}
	}
	if v, ok := bsonvalue.Lookup(schema, "patternProperties"); ok {
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword 'patternProperties' must be an object")
		}
		if err := compileFieldSchemas(v.Data, func(pattern string, s predicate) error {
			re, err := bsonvalue.NewRegex(pattern, "")
			if err != nil {
				return err
			}
			o.patterns = append(o.patterns, fieldPattern{re: re.Regexp(), schema: s})
			return nil
		}); err != nil {
			return nil, err
		}
	}
	if v, ok := bsonvalue.Lookup(schema, "additionalProperties"); ok {
		additional, err := boolOrSchema("additionalProperties", v)
		if err != nil {
			return nil, err
		}
		o.additional = additional
	}
	return newOnlyFor(o, bsoncore.TypeEmbeddedDocument), nil
}

// compileFieldSchemas compiles each field of doc as a schema.
func compileFieldSchemas(doc []byte, add func(field string, s predicate) error) error {
	it := bsonvalue.ElementsOf(doc)
	for {
		key, v, ok := it.Next()
		if !ok {
			return nil
		}
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return mongoerr.New(mongoerr.TypeMismatch, "Nested schema for $jsonSchema property '%s' must be an object", key)
		}
		s, err := compileSchema(v.Data)
		if err != nil {
			return err
		}
		if err := add(string(key), s); err != nil {
			return err
		}
	}
}

// firstOf returns which of the keys comes first in doc.
func firstOf(doc []byte, keys ...string) string {
	it := bsonvalue.ElementsOf(doc)
	for {
		key, _, ok := it.Next()
		if !ok {
			return ""
		}
		if slices.Contains(keys, string(key)) {
			return string(key)
		}
	}
}

// boolOrSchema reads additionalProperties and additionalItems: true allows
// anything (nil), false nothing, a schema what it accepts.
func boolOrSchema(name string, v bsoncore.Value) (predicate, error) {
	switch v.Type {
	case bsoncore.TypeBoolean:
		if v.Boolean() {
			return nil, nil
		}
		return rejectAll{}, nil
	case bsoncore.TypeEmbeddedDocument:
		return compileSchema(v.Data)
	}
	return nil, mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword '%s' must be either an object or a boolean", name)
}

// rejectAll is additionalProperties or additionalItems false.
type rejectAll struct{}

func (rejectAll) test(bsoncore.Value) bool { return false }

// elementCount bounds the number of elements of an array or the number of
// fields of an object.
type elementCount struct {
	n      int64
	atMost bool
}

func (c elementCount) test(v bsoncore.Value) bool {
	var n int64
	it := bsonvalue.ElementsOf(v.Data)
	for _, _, ok := it.Next(); ok; _, _, ok = it.Next() {
		n++
	}
	if c.atMost {
		return n <= c.n
	}
	return n >= c.n
}

func compileCount(t bsoncore.Type, atMost bool) keywordCompiler {
	return func(name string, v bsoncore.Value, _ []byte) (predicate, error) {
		n, err := nonNegativeInteger(name, v)
		if err != nil {
			return nil, err
		}
		return newOnlyFor(elementCount{n: n, atMost: atMost}, t), nil
	}
}

// stringLength bounds the length of a string in code points, not bytes.
type stringLength struct {
	n      int64
	atMost bool
}

func (l stringLength) test(v bsoncore.Value) bool {
	s, _ := bsonvalue.StringBytes(v)
	n := int64(utf8.RuneCount(s))
	if l.atMost {
		return n <= l.n
	}
	return n >= l.n
}

func compileLength(atMost bool) keywordCompiler {
	return func(name string, v bsoncore.Value, _ []byte) (predicate, error) {
		n, err := nonNegativeInteger(name, v)
		if err != nil {
			return nil, err
		}
		return newOnlyFor(stringLength{n: n, atMost: atMost}, bsoncore.TypeString), nil
	}
}

func compilePattern(name string, v bsoncore.Value, _ []byte) (predicate, error) {
	pattern, ok := v.StringValueOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword '%s' must be a string", name)
	}
	re, err := bsonvalue.NewRegex(pattern, "")
	if err != nil {
		return nil, err
	}
	return newOnlyFor(regexPred{re}, bsoncore.TypeString), nil
}

// enumValues accepts values equal to one of a list.
type enumValues []bsoncore.Value

func (e enumValues) test(v bsoncore.Value) bool {
	return slices.ContainsFunc(e, func(w bsoncore.Value) bool { return keycodec.Compare(v, w) == 0 })
}

func compileEnum(name string, v bsoncore.Value, _ []byte) (predicate, error) {
	if err := nonEmptyArray(name, v); err != nil {
		return nil, err
	}
	var values enumValues
	it := bsonvalue.ElementsOf(v.Data)
	for {
		_, e, ok := it.Next()
		if !ok {
			return values, nil
		}
		if values.test(e) {
			return nil, mongoerr.New(mongoerr.FailedToParse, "$jsonSchema keyword 'enum' array cannot contain duplicate values")
		}
		values = append(values, e)
	}
}

// compileBound compiles minimum and maximum, reading whether the bound is
// exclusive from their sibling.
func compileBound(inclusive, exclusive cmpOp, exclusiveName string) keywordCompiler {
	return func(name string, v bsoncore.Value, schema []byte) (predicate, error) {
		if !v.IsNumber() {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword '%s' must be a number", name)
		}
		op := inclusive
		if e, ok := bsonvalue.Lookup(schema, exclusiveName); ok && e.Type == bsoncore.TypeBoolean && e.Boolean() {
			op = exclusive
		}
		return newOnlyFor(newComparison(op, v, nil), numberTypes...), nil
	}
}

// compileExclusive checks exclusiveMinimum and exclusiveMaximum, which the
// bound they qualify reads.
func compileExclusive(bound string) keywordCompiler {
	return func(name string, v bsoncore.Value, schema []byte) (predicate, error) {
		if v.Type != bsoncore.TypeBoolean {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword '%s' must be a boolean", name)
		}
		if _, ok := bsonvalue.Lookup(schema, bound); !ok {
			return nil, mongoerr.New(mongoerr.FailedToParse, "$jsonSchema keyword '%s' must be a present if %s is present", bound, name)
		}
		return nil, nil
	}
}

// multipleOf accepts numbers whose quotient by the divisor is a whole
// number. Like MongoDB, it works in decimal: doubles count with 15
// significant digits, so 0.3 is a multiple of 0.1.
type multipleOf struct {
	divisor *big.Rat
}

func (m multipleOf) test(v bsoncore.Value) bool {
	x, ok := decimalValue(v)
	return ok && new(big.Rat).Quo(x, m.divisor).IsInt()
}

func compileMultipleOf(name string, v bsoncore.Value, _ []byte) (predicate, error) {
	if !v.IsNumber() {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword '%s' must be a number", name)
	}
	d, ok := decimalValue(v)
	if !ok || d.Sign() <= 0 {
		return nil, mongoerr.New(mongoerr.FailedToParse, "$jsonSchema keyword '%s' must have a positive value", name)
	}
	return newOnlyFor(multipleOf{d}, numberTypes...), nil
}

// decimalValue returns a finite number's value, doubles rounded to 15
// significant digits as MongoDB converts them to decimal.
func decimalValue(v bsoncore.Value) (*big.Rat, bool) {
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		n, _ := bsonvalue.IntegerValue(v)
		return new(big.Rat).SetInt64(n), true
	case bsoncore.TypeDouble:
		if isNaN(v) || isInfinite(v) {
			return nil, false
		}
		return new(big.Rat).SetString(strconv.FormatFloat(v.Double(), 'e', 14, 64))
	case bsoncore.TypeDecimal128:
		return bsonvalue.DecimalRat(v)
	}
	return nil, false
}

// arrayItems checks elements by position; elements past the schemas are
// checked by additional, when there is one.
type arrayItems struct {
	positional []predicate
	additional predicate
}

func (a *arrayItems) test(v bsoncore.Value) bool {
	it := bsonvalue.ElementsOf(v.Data)
	for i := 0; ; i++ {
		_, e, ok := it.Next()
		switch {
		case !ok:
			return true
		case i < len(a.positional):
			if !a.positional[i].test(e) {
				return false
			}
		case a.additional == nil:
			return true
		case !a.additional.test(e):
			return false
		}
	}
}

// compileItems compiles items: one schema for every element, or a schema
// per position followed by additionalItems.
func compileItems(name string, v bsoncore.Value, schema []byte) (predicate, error) {
	items := &arrayItems{}
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		s, err := compileSchema(v.Data)
		if err != nil {
			return nil, err
		}
		items.additional = s
	case bsoncore.TypeArray:
		list, err := compileSchemaList(name, v)
		if err != nil {
			return nil, err
		}
		items.positional = list
		if more, ok := bsonvalue.Lookup(schema, "additionalItems"); ok {
			items.additional, err = boolOrSchema("additionalItems", more)
			if err != nil {
				return nil, err
			}
		}
	default:
		return nil, mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword '%s' must be an array or an object", name)
	}
	return newOnlyFor(items, bsoncore.TypeArray), nil
}

// compileAdditionalItems checks additionalItems, which items reads: without
// a list of items it has no effect.
func compileAdditionalItems(name string, v bsoncore.Value, _ []byte) (predicate, error) {
	_, err := boolOrSchema(name, v)
	return nil, err
}

// uniqueElements accepts arrays with no two equal elements.
type uniqueElements struct{}

func (uniqueElements) test(v bsoncore.Value) bool {
	var elems []bsoncore.Value
	it := bsonvalue.ElementsOf(v.Data)
	for _, e, ok := it.Next(); ok; _, e, ok = it.Next() {
		elems = append(elems, e)
	}
	slices.SortFunc(elems, keycodec.Compare)
	for i := 1; i < len(elems); i++ {
		if keycodec.Compare(elems[i-1], elems[i]) == 0 {
			return false
		}
	}
	return true
}

func compileUniqueItems(name string, v bsoncore.Value, _ []byte) (predicate, error) {
	if v.Type != bsoncore.TypeBoolean {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword '%s' must be a boolean", name)
	}
	if !v.Boolean() {
		return nil, nil
	}
	return newOnlyFor(uniqueElements{}, bsoncore.TypeArray), nil
}

// allOfSchemas accepts values every schema accepts; it is also the
// conjunction of a schema's keywords.
type allOfSchemas []predicate

func (s allOfSchemas) test(v bsoncore.Value) bool {
	for _, p := range s {
		if !p.test(v) {
			return false
		}
	}
	return true
}

// anyOfSchemas accepts values some schema accepts.
type anyOfSchemas []predicate

func (s anyOfSchemas) test(v bsoncore.Value) bool {
	return slices.ContainsFunc(s, func(p predicate) bool { return p.test(v) })
}

// oneOfSchemas accepts values exactly one schema accepts.
type oneOfSchemas []predicate

func (s oneOfSchemas) test(v bsoncore.Value) bool {
	n := 0
	for _, p := range s {
		if p.test(v) {
			n++
			if n > 1 {
				return false
			}
		}
	}
	return n == 1
}

// notSchema accepts values its schema rejects.
type notSchema struct {
	schema predicate
}

func (n notSchema) test(v bsoncore.Value) bool { return !n.schema.test(v) }

func compileCombination(combine func([]predicate) predicate) keywordCompiler {
	return func(name string, v bsoncore.Value, _ []byte) (predicate, error) {
		if v.Type == bsoncore.TypeArray && isEmptyContainer(v.Data) {
			return nil, mongoerr.New(mongoerr.FailedToParse, "$jsonSchema keyword '%s' must be a non-empty array", name)
		}
		list, err := compileSchemaList(name, v)
		if err != nil {
			return nil, err
		}
		return combine(list), nil
	}
}

func compileNotSchema(name string, v bsoncore.Value, _ []byte) (predicate, error) {
	s, err := compileSubschema(name, v)
	if err != nil {
		return nil, err
	}
	return notSchema{s}, nil
}

// compileAnnotation checks title and description, which match nothing.
func compileAnnotation(name string, v bsoncore.Value, _ []byte) (predicate, error) {
	if v.Type != bsoncore.TypeString {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema keyword '%s' must be a string", name)
	}
	return nil, nil
}
