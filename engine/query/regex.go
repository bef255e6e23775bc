package query

import (
	"errors"
	"regexp"
	"regexp/syntax"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/mongoerr"
)

// MongoDB's codes for regular expression errors.
const (
	codeRegexOptionsInRegex   mongoerr.Code = 51074
	codeRegexOptionsInOptions mongoerr.Code = 51075
	codeRegexInvalid          mongoerr.Code = 51091
	codeRegexBadFlag          mongoerr.Code = 51108
)

// regexPredicate matches strings and symbols against a regular expression,
// and regular expression values equal to it.
type regexPredicate struct {
	pattern, options string
	re               *regexp.Regexp
}

func (r *regexPredicate) test(v bsoncore.Value) bool {
	if s, ok := stringBytes(v); ok {
		return r.re.Match(s)
	}
	return sameRegex(v, r.pattern, r.options)
}

// compileRegexValue compiles a BSON regular expression value.
func compileRegexValue(v bsoncore.Value) (*regexPredicate, error) {
	pattern, options, _ := v.RegexOK()
	return newRegex(pattern, options)
}

// newRegex translates a PCRE pattern with MongoDB's options into a Go
// regular expression. Go's RE2 syntax covers most of what queries use; the
// PCRE-only constructs (lookaround, backreferences, possessive quantifiers)
// are refused with an error naming the problem.
func newRegex(pattern, options string) (*regexPredicate, error) {
	var flags strings.Builder
	extended := false
	for _, c := range options {
		switch c {
		case 'i', 'm', 's':
			flags.WriteRune(c)
		case 'x':
			extended = true
		case 'u':
			// PCRE's UTF-8 mode: Go always matches UTF-8.
		default:
			return nil, mongoerr.New(codeRegexBadFlag, "invalid flag in regex options: %c", c)
		}
	}
	expr := pattern
	if extended {
		expr = stripExtended(expr)
	}
	if flags.Len() > 0 {
		expr = "(?" + flags.String() + ")" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		var serr *syntax.Error
		if errors.As(err, &serr) && (serr.Code == syntax.ErrInvalidPerlOp || serr.Code == syntax.ErrInvalidEscape) {
			return nil, mongoerr.New(mongoerr.BadValue,
				"regular expression /%s/ is not supported: Lethe uses RE2 syntax, without lookaround, backreferences or \\Z (%s)",
				pattern, serr.Code)
		}
		return nil, mongoerr.New(codeRegexInvalid, "Regular expression is invalid: %v", err)
	}
	return &regexPredicate{pattern: pattern, options: options, re: re}, nil
}

// stripExtended removes what PCRE's extended mode ignores: whitespace and
// #-comments outside character classes, unless escaped.
func stripExtended(p string) string {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			b.WriteByte(c)
			b.WriteByte(p[i+1])
			i++
		case inClass:
			inClass = c != ']'
			b.WriteByte(c)
		case c == '[':
			inClass = true
			b.WriteByte(c)
			// A ']' first in a class, after an optional '^', is literal.
			if i+1 < len(p) && p[i+1] == '^' {
				b.WriteByte('^')
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' {
				b.WriteByte(']')
				i++
			}
		case c == '#':
			for i+1 < len(p) && p[i+1] != '\n' {
				i++
			}
		case strings.IndexByte(" \t\n\v\f\r", c) >= 0:
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// compileRegexOperator compiles {$regex: ..., $options: ...}. Both operators
// are read from the operator document, so their order does not matter.
func compileRegexOperator(op operand) (fieldExpr, error) {
	var pattern, options string
	it := elementsOf(op.siblings)
	for {
		name, v, ok := it.next()
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
						return nil, mongoerr.New(codeRegexOptionsInRegex, "options set in both $regex and $options")
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
				return nil, mongoerr.New(codeRegexOptionsInOptions, "options set in both $regex and $options")
			}
			options, _ = v.StringValueOK()
		}
	}
	re, err := newRegex(pattern, options)
	if err != nil {
		return nil, err
	}
	return &leafExpr{pred: re, leafArrays: true}, nil
}

// compileOptions accepts $options next to a $regex, which reads it.
func compileOptions(op operand) (fieldExpr, error) {
	if _, ok := lookup(op.siblings, "$regex"); !ok {
		return nil, mongoerr.New(mongoerr.BadValue, "$options needs a $regex")
	}
	return nil, nil
}
