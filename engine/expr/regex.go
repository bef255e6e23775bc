package expr

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
)

// The regular expression operators, $regexMatch, $regexFind and
// $regexFindAll, share their arguments ({input, regex, options}), their
// checks and their codes. Patterns are PCRE in MongoDB and RE2 here: what
// RE2 lacks (lookaround, backreferences) is refused by bsonvalue.NewRegex.

// regexMode is what a regular expression operator makes of its matches.
type regexMode int

const (
	regexMatchMode   regexMode = iota // $regexMatch: whether there is one
	regexFindMode                     // $regexFind: the first, or null
	regexFindAllMode                  // $regexFindAll: all, without overlaps
)

// regexExpr is a regular expression operator. A constant pattern is
// compiled once.
type regexExpr struct {
	name                  string
	mode                  regexMode
	input, regex, options exprNode

	constant      bool             // regex and options are constants
	constantRegex *bsonvalue.Regex // nil when the constant pattern is null
	constantFind  *searcher        // $regexFindAll's, for constantRegex
}

func compileRegexMatch(c *exprCompiler, name string, args bsoncore.Value) (exprNode, error) {
	return compileRegex(c, name, args, regexMatchMode)
}

func regexOperators() map[string]exprOperator {
	return map[string]exprOperator{
		"$regexFind": func(c *exprCompiler, name string, args bsoncore.Value) (exprNode, error) {
			return compileRegex(c, name, args, regexFindMode)
		},
		"$regexFindAll": func(c *exprCompiler, name string, args bsoncore.Value) (exprNode, error) {
			return compileRegex(c, name, args, regexFindAllMode)
		},
	}
}

func compileRegex(c *exprCompiler, name string, args bsoncore.Value, mode regexMode) (exprNode, error) {
	if args.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(51103, "%s expects an object of named arguments but found: %s", name, bsonvalue.TypeName(args.Type))
	}
	nodes, err := c.compileNamed(args.Data, []string{"input", "regex", "options"},
		func(arg string) error { return mongoerr.New(31024, "%s found an unknown argument: %s", name, arg) })
	switch {
	case err != nil:
		return nil, err
	case nodes[0] == nil:
		return nil, mongoerr.New(31022, "%s requires 'input' parameter", name)
	case nodes[1] == nil:
		return nil, mongoerr.New(31023, "%s requires 'regex' parameter", name)
	}
	x := &regexExpr{name: name, mode: mode, input: nodes[0], regex: nodes[1], options: nodes[2]}
	regex, isConst := x.regex.(literal)
	options, optionsConst := x.options.(literal)
	if isConst && (x.options == nil || optionsConst) {
		x.constant = true
		if x.constantRegex, err = compileRegexArgs(name, regex.v, options.v); err != nil {
			return nil, err
		}
		if mode == regexFindAllMode && x.constantRegex != nil {
			search, err := newSearcher(x.constantRegex.Regexp())
			if err != nil {
				return nil, err
			}
			x.constantFind = &search
		}
	}
	return x, nil
}

// compileRegexArgs checks and compiles the regex and options of the
// operator name; it returns nil for a null pattern.
func compileRegexArgs(name string, regex, options bsoncore.Value) (*bsonvalue.Regex, error) {
	var pattern, flags string
	switch {
	case isNullish(regex):
	case regex.Type == bsoncore.TypeString:
		pattern = stringOf(regex)
	case regex.Type == bsoncore.TypeRegex:
		pattern, flags, _ = regex.RegexOK()
	default:
		return nil, mongoerr.New(51105, "%s needs 'regex' to be of type string or regex", name)
	}
	switch {
	case isNullish(options):
	case options.Type != bsoncore.TypeString:
		return nil, mongoerr.New(51106, "%s needs 'options' to be of type string", name)
	case flags != "":
		return nil, mongoerr.New(51107, "%s: found regex option(s) specified in both 'regex' and 'option' fields", name)
	default:
		flags = stringOf(options)
	}
	switch {
	case strings.ContainsRune(pattern, 0):
		return nil, mongoerr.New(51109, "%s: regular expression cannot contain an embedded null byte", name)
	case strings.ContainsRune(flags, 0):
		return nil, mongoerr.New(51110, "%s: regular expression options cannot contain an embedded null byte", name)
	case isNullish(regex):
		return nil, nil
	}
	re, err := bsonvalue.NewRegex(pattern, flags)
	if mongoerr.CodeOf(err) == bsonvalue.CodeRegexInvalid {
		return nil, mongoerr.New(51111, "Invalid Regex in %s: %v", name, err)
	}
	return re, err
}

func (x *regexExpr) eval(e *env) (bsoncore.Value, error) {
	// As in MongoDB, every argument is evaluated before any is checked.
	in, err := x.input.eval(e)
	if err != nil {
		return bsonvalue.Missing, err
	}
	var regex, options bsoncore.Value
	if !x.constant {
		if regex, err = x.regex.eval(e); err != nil {
			return bsonvalue.Missing, err
		}
		if x.options != nil {
			if options, err = x.options.eval(e); err != nil {
				return bsonvalue.Missing, err
			}
		}
	}
	if !isNullish(in) && in.Type != bsoncore.TypeString {
		return bsonvalue.Missing, mongoerr.New(51104, "%s needs 'input' to be of type string", x.name)
	}
	re := x.constantRegex
	if !x.constant {
		if re, err = compileRegexArgs(x.name, regex, options); err != nil {
			return bsonvalue.Missing, err
		}
	}
	if re == nil || isNullish(in) {
		switch x.mode {
		case regexMatchMode:
			return boolValue(false), nil
		case regexFindMode:
			return bsonvalue.Null, nil
		}
		return arrayValue(nil), nil
	}
	s := stringOf(in)
	switch x.mode {
	case regexMatchMode:
		return boolValue(re.Regexp().MatchString(s)), nil
	case regexFindMode:
		loc := re.Regexp().FindStringSubmatchIndex(s)
		if loc == nil {
			return bsonvalue.Null, nil
		}
		return matchDocument(s, loc, codePointCount(s[:loc[0]])), nil
	}
	search := x.constantFind
	if search == nil {
		sr, err := newSearcher(re.Regexp())
		if err != nil {
			return bsonvalue.Missing, err
		}
		search = &sr
	}
	return x.findAll(e, search, s)
}

// findAll is $regexFindAll: the matches MongoDB finds by searching again
// from the end of each match, or one code point further after an empty
// match, until the search would start at the end of the input. Unlike Go's
// own iteration, an empty match right after a non-empty one counts.
func (x *regexExpr) findAll(e *env, search *searcher, s string) (bsoncore.Value, error) {
	size := e.buildingArray(x.name)
	defer size.release()
	var found []bsoncore.Value
	pos, cp := 0, 0
	for {
		loc := search.from(s, pos)
		if loc == nil {
			break
		}
		cp += codePointCount(s[pos:loc[0]])
		m := matchDocument(s, loc, cp)
		if err := size.addElement(len(found), m); err != nil {
			return bsonvalue.Missing, err
		}
		found = append(found, m)
		if err := e.tick(); err != nil {
			return bsonvalue.Missing, err
		}
		if loc[0] == loc[1] {
			pos, cp = loc[0]+1, cp+1
			for pos < len(s) && isContinuationByte(s[pos]) {
				pos++
			}
		} else {
			pos, cp = loc[1], cp+codePointCount(s[loc[0]:loc[1]])
		}
		if pos >= len(s) {
			break
		}
	}
	return arrayValue(found), nil
}

// searcher finds the first match of a regular expression at or after a
// position of the input, seeing what comes before it as a search that
// continues in the whole input does.
type searcher struct {
	re *regexp.Regexp
	// inContext is nil when re has no assertion that looks behind (^, \A,
	// \b, \B), so that searching the rest of the input is the same. Else it
	// is re after one code point of context and the shortest prefix.
	inContext *regexp.Regexp
}

func newSearcher(re *regexp.Regexp) (searcher, error) {
	if !needsContext(re) {
		return searcher{re: re}, nil
	}
	inContext, err := regexp.Compile(`\A(?s:.)(?s:.*?)(` + re.String() + `)`)
	if err != nil {
		return searcher{}, mongoerr.New(51111, "Invalid Regex: %v", err)
	}
	return searcher{re: re, inContext: inContext}, nil
}

// from returns the submatch indexes in s of the first match at or after
// pos, or nil.
func (sr searcher) from(s string, pos int) []int {
	var loc []int
	base := pos
	if pos == 0 || sr.inContext == nil {
		loc = sr.re.FindStringSubmatchIndex(s[pos:])
	} else {
		_, w := utf8.DecodeLastRuneInString(s[:pos])
		base = pos - w
		if loc = sr.inContext.FindStringSubmatchIndex(s[base:]); loc != nil {
			loc = loc[2:] // the match of re and its groups
		}
	}
	for i := range loc {
		if loc[i] >= 0 {
			loc[i] += base
		}
	}
	return loc
}

// matchDocument is what $regexFind and $regexFindAll make of a match: the
// matched text, its position in code points, and the text of each capture
// group, null for a group that took no part in the match.
func matchDocument(s string, loc []int, cp int) bsoncore.Value {
	captures := make([]bsoncore.Value, 0, len(loc)/2-1)
	for i := 2; i < len(loc); i += 2 {
		if loc[i] < 0 {
			captures = append(captures, bsonvalue.Null)
			continue
		}
		captures = append(captures, stringValue(s[loc[i]:loc[i+1]]))
	}
	doc := bsoncore.NewDocumentBuilder().
		AppendString("match", s[loc[0]:loc[1]]).
		AppendInt32("idx", int32(cp)).
		AppendArray("captures", bsoncore.BuildArray(nil, captures...)).
		Build()
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}
}

// codePointCount counts code points as MongoDB does: the bytes that are
// not UTF-8 continuation bytes.
func codePointCount(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if !isContinuationByte(s[i]) {
			n++
		}
	}
	return n
}

// needsContext reports whether re has assertions that look before the
// position they are tested at (^, \A, \b, \B), so that matching a suffix
// of the input is not the same as continuing a search in the whole input.
func needsContext(re *regexp.Regexp) bool {
	prog, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return true
	}
	var walk func(r *syntax.Regexp) bool
	walk = func(r *syntax.Regexp) bool {
		switch r.Op {
		case syntax.OpBeginLine, syntax.OpBeginText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
			return true
		}
		for _, sub := range r.Sub {
			if walk(sub) {
				return true
			}
		}
		return false
	}
	return walk(prog)
}
