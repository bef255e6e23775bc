package bsonvalue

import (
	"errors"
	"regexp"
	"regexp/syntax"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/mongoerr"
)

// MongoDB's codes for regular expression errors.
const (
	CodeRegexOptionsInRegex   mongoerr.Code = 51074
	CodeRegexOptionsInOptions mongoerr.Code = 51075
	CodeRegexInvalid          mongoerr.Code = 51091
	CodeRegexBadFlag          mongoerr.Code = 51108
)

// Regex matches strings and symbols against a regular expression,
// and regular expression values equal to it.
type Regex struct {
	pattern, options string
	re               *regexp.Regexp
}

// Regexp is the Go regular expression r compiled to.
func (r *Regex) Regexp() *regexp.Regexp { return r.re }

// Match reports whether v is a string or symbol r matches, or a regular
// expression value equal to r.
func (r *Regex) Match(v bsoncore.Value) bool {
	if s, ok := StringBytes(v); ok {
		return r.re.Match(s)
	}
	return sameRegex(v, r.pattern, r.options)
}

// NewRegex translates a PCRE pattern with MongoDB's options into a Go
// regular expression. Go's RE2 syntax covers most of what queries use; the
// PCRE-only constructs (lookaround, backreferences, possessive quantifiers)
// are refused with an error naming the problem.
func NewRegex(pattern, options string) (*Regex, error) {
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
			return nil, mongoerr.New(CodeRegexBadFlag, "invalid flag in regex options: %c", c)
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
		return nil, mongoerr.New(CodeRegexInvalid, "Regular expression is invalid: %v", err)
	}
	return &Regex{pattern: pattern, options: options, re: re}, nil
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
