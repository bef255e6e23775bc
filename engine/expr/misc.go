package expr

import (
	"maps"
	"math/rand/v2"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/text"
	"github.com/lethedb/lethe/mongoerr"
)

// Operators that fit no family: sizes, timestamps, randomness, document
// metadata, and those Lethe refuses (server-side JavaScript).

// miscOperators are the operators of this file and of fields.go, regex.go
// and replace.go.
func miscOperators() map[string]exprOperator {
	ops := map[string]exprOperator{
		// $const is MongoDB's other name for $literal.
		"$const": compileLiteral,

		"$rand":        compileRand,
		"$binarySize":  fixed(1, binarySize),
		"$bsonSize":    fixed(1, bsonSize),
		"$tsSecond":    fixed(1, timestampPart("$tsSecond", 5687301, false)),
		"$tsIncrement": fixed(1, timestampPart("$tsIncrement", 5687302, true)),
		"$meta":        compileMeta,

		"$toHashedIndexKey": compileToHashedIndexKey,
		"$function":         compileFunction,
		"$accumulator":      compileNotAnExpression,
		"$sampleRate":       compileNotAnExpression,
	}
	for _, family := range []map[string]exprOperator{fieldOperators(), regexOperators(), replaceOperators()} {
		maps.Copy(ops, family)
	}
	return ops
}

// randExpr is $rand: a double drawn uniformly from [0, 1).
type randExpr struct{}

func compileRand(_ *exprCompiler, name string, args bsoncore.Value) (exprNode, error) {
	if args.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(10065, "invalid parameter: expected an object (%s)", name)
	}
	if countFields(args.Data) != 0 {
		return nil, mongoerr.New(3040501, "$rand does not currently accept arguments")
	}
	return randExpr{}, nil
}

func (randExpr) eval(*env) (bsoncore.Value, error) { return doubleValue(rand.Float64()), nil }

// binarySize is $binarySize: the bytes of a string or of binary data.
func binarySize(v []bsoncore.Value) (bsoncore.Value, error) {
	switch {
	case isNullish(v[0]):
		return bsonvalue.Null, nil
	case v[0].Type == bsoncore.TypeString:
		return int32Value(int32(len(mustStringBytes(v[0])))), nil
	case v[0].Type == bsoncore.TypeBinary:
		_, data := v[0].Binary()
		return int32Value(int32(len(data))), nil
	}
	return bsonvalue.Missing, mongoerr.New(51276, "$binarySize requires a string or BinData argument, found: %s", bsonvalue.TypeName(v[0].Type))
}

// bsonSize is $bsonSize: the bytes of a document encoded as BSON.
func bsonSize(v []bsoncore.Value) (bsoncore.Value, error) {
	switch {
	case isNullish(v[0]):
		return bsonvalue.Null, nil
	case v[0].Type == bsoncore.TypeEmbeddedDocument:
		return int32Value(int32(len(v[0].Data))), nil
	}
	return bsonvalue.Missing, mongoerr.New(31393, "$bsonSize requires a document input, found: %s", bsonvalue.TypeName(v[0].Type))
}

// timestampPart makes $tsSecond or $tsIncrement: a part of a timestamp, as
// a long.
func timestampPart(name string, code mongoerr.Code, increment bool) func([]bsoncore.Value) (bsoncore.Value, error) {
	return func(v []bsoncore.Value) (bsoncore.Value, error) {
		if isNullish(v[0]) {
			return bsonvalue.Null, nil
		}
		if v[0].Type != bsoncore.TypeTimestamp {
			return bsonvalue.Missing, mongoerr.New(code, " Argument to %s must be a timestamp, but is %s", name, bsonvalue.TypeName(v[0].Type))
		}
		t, i := v[0].Timestamp()
		if increment {
			return int64Value(int64(i)), nil
		}
		return int64Value(int64(t)), nil
	}
}

// metaNames are the kinds of metadata $meta reads in MongoDB 7.0. Lethe
// keeps none of them with documents: text search, Atlas Search and $geoNear
// scores and distances, random values of $sample, index keys and record
// ids.
var metaNames = []string{
	"textScore", "randVal", "searchScore", "searchHighlights", "searchScoreDetails",
	"geoNearDistance", "geoNearPoint", "recordId", "indexKey", "sortKey", "searchSequenceToken",
}

func compileMeta(_ *exprCompiler, name string, args bsoncore.Value) (exprNode, error) {
	s, ok := args.StringValueOK()
	if !ok {
		return nil, mongoerr.New(17307, "$meta only supports string arguments")
	}
	if s == "textScore" {
		return textScoreExpr{}, nil
	}
	for _, m := range metaNames {
		if s == m {
			return nil, mongoerr.New(mongoerr.NotImplemented, "%s: \"%s\" is not supported by Lethe, which keeps no such metadata with documents", name, s)
		}
	}
	return nil, mongoerr.New(17308, "Unsupported argument to $meta: %s", s)
}

// textScoreExpr is {$meta: "textScore"}: the score of the request's $text
// for the document, computed from it by the scorer the request's context
// carries (the document as the stage sees it, which is the matched one
// until a stage reshapes it).
type textScoreExpr struct{}

func (textScoreExpr) eval(e *env) (bsoncore.Value, error) {
	score := text.ScorerFrom(e.ctx)
	if score == nil {
		return bsoncore.Value{}, text.ErrNoScore()
	}
	s, ok := score(e.root)
	if !ok {
		return bsoncore.Value{}, nil // missing, as MongoDB's ExpressionMeta gives it
	}
	return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, s)}, nil
}

// functionExpr is $function, which runs JavaScript on the server. Lethe
// has no JavaScript engine, so it answers as MongoDB does with scripting
// disabled: the arguments are checked when the expression compiles, and
// evaluating it fails.
type functionExpr struct {
	args exprNode
}

func compileFunction(c *exprCompiler, name string, args bsoncore.Value) (exprNode, error) {
	if args.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(31260, "%s requires an object as an argument, found: %s", name, bsonvalue.TypeName(args.Type))
	}
	body, ok := bsonvalue.Lookup(args.Data, "body")
	if !ok {
		return nil, mongoerr.New(31261, "The body function must be specified.")
	}
	bodyNode, err := c.compile(body)
	if err != nil {
		return nil, err
	}
	lit, ok := bodyNode.(literal)
	if !ok {
		return nil, mongoerr.New(31432, "The body function must be a constant expression")
	}
	if lit.v.Type != bsoncore.TypeString && lit.v.Type != bsoncore.TypeJavaScript {
		return nil, mongoerr.New(31262, "The body function must evaluate to type string or code")
	}
	fnArgs, ok := bsonvalue.Lookup(args.Data, "args")
	if !ok {
		return nil, mongoerr.New(31263, "The args field must be specified.")
	}
	x := &functionExpr{}
	if x.args, err = c.compile(fnArgs); err != nil {
		return nil, err
	}
	lang, ok := bsonvalue.Lookup(args.Data, "lang")
	if !ok {
		return nil, mongoerr.New(31418, "The lang field must be specified.")
	}
	if s, isString := lang.StringValueOK(); !isString || s != "js" {
		return nil, mongoerr.New(31419, "Currently the only supported language specifier is 'js'.")
	}
	return x, nil
}

func (x *functionExpr) eval(e *env) (bsoncore.Value, error) {
	if _, err := x.args.eval(e); err != nil {
		return bsonvalue.Missing, err
	}
	return bsonvalue.Missing, mongoerr.New(31264, "Cannot run server-side javascript without the javascript engine enabled: Lethe has no JavaScript engine")
}

// compileNotAnExpression refuses the operators MongoDB knows in other
// languages only, as MongoDB does, with a hint to where they belong:
// $accumulator is a $group accumulator and $sampleRate a query operator.
func compileNotAnExpression(_ *exprCompiler, name string, _ bsoncore.Value) (exprNode, error) {
	where := "a $group accumulator"
	if name == "$sampleRate" {
		where = "a query operator ({$match: {$sampleRate: <rate>}})"
	}
	return nil, mongoerr.New(mongoerr.InvalidPipelineOperator, "Unrecognized expression '%s': it is %s, not an expression", name, where)
}
