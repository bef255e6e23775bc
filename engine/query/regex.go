package query

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
)

// compileRegexValue compiles a BSON regular expression value.
func compileRegexValue(v bsoncore.Value) (*bsonvalue.Regex, error) {
	pattern, options, _ := v.RegexOK()
	return bsonvalue.NewRegex(pattern, options)
}

// compileRegexOperator compiles {$regex: ..., $options: ...}. Both operators
// are read from the operator document, so their order does not matter.
func compileRegexOperator(op operand) (fieldExpr, error) {
	var pattern, options string
	it := bsonvalue.ElementsOf(op.siblings)
	for {
		name, v, ok := it.Next()
		if !ok {
			break
		}
		switch string(name) {
		case "$regex":
			switch v.Type {
			case bsoncore.TypeString:
				pattern, _ = v.StringValueOK()
			case bsoncore.TypeRegex:
				var opts string
				pattern, opts, _ = v.RegexOK()
				if opts != "" {
					if options != "" {
						return nil, mongoerr.New(bsonvalue.CodeRegexOptionsInRegex, "options set in both $regex and $options")
					}
					options = opts
				}
			default:
				return nil, mongoerr.New(mongoerr.BadValue, "$regex has to be a string")
			}
		case "$options":
			if v.Type != bsoncore.TypeString {
				return nil, mongoerr.New(mongoerr.BadValue, "$options has to be a string")
			}
			if options != "" {
				return nil, mongoerr.New(bsonvalue.CodeRegexOptionsInOptions, "options set in both $regex and $options")
			}
			options, _ = v.StringValueOK()
		}
	}
	re, err := bsonvalue.NewRegex(pattern, options)
	if err != nil {
		return nil, err
	}
	return &leafExpr{pred: regexPred{re}, leafArrays: true}, nil
}

// compileOptions accepts $options next to a $regex, which reads it.
func compileOptions(op operand) (fieldExpr, error) {
	if _, ok := bsonvalue.Lookup(op.siblings, "$regex"); !ok {
		return nil, mongoerr.New(mongoerr.BadValue, "$options needs a $regex")
	}
	return nil, nil
}

// regexPred is a regular expression as a predicate of the filter language.
type regexPred struct{ *bsonvalue.Regex }

func (r regexPred) test(v bsoncore.Value) bool { return r.Match(v) }
