package expr

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
)

// isoDateLayout is how MongoDB writes dates as strings.
const isoDateLayout = "2006-01-02T15:04:05.000Z"

// coerceToString is the text MongoDB's string operators make of a value:
// null and missing are empty, numbers and dates are formatted, other types
// are refused.
func coerceToString(v bsoncore.Value) (string, error) {
	switch v.Type {
	case 0, bsoncore.TypeNull, bsoncore.TypeUndefined:
		return "", nil
	case bsoncore.TypeString, bsoncore.TypeSymbol, bsoncore.TypeJavaScript:
		s, _ := bsonvalue.StringBytes(bsoncore.Value{Type: bsoncore.TypeString, Data: v.Data})
		return string(s), nil
	case bsoncore.TypeDouble:
		f, _ := v.DoubleOK()
		return bsonvalue.FormatDouble(f), nil
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		return strconv.FormatInt(toInt64(v), 10), nil
	case bsoncore.TypeDecimal128:
		return decimalString(v), nil
	case bsoncore.TypeDateTime:
		ms, _ := v.DateTimeOK()
		return formatDate(ms), nil
	case bsoncore.TypeTimestamp:
		t, i, _ := v.TimestampOK()
		return time.Unix(int64(t), 0).UTC().Format(isoDateLayout) + ":" + strconv.FormatUint(uint64(i), 10), nil
	}
	return "", mongoerr.New(16007, "can't convert from BSON type %s to String", bsonvalue.TypeName(v.Type))
}

func decimalString(v bsoncore.Value) string {
	hi, lo, _ := v.Decimal128OK()
	return bson.NewDecimal128(hi, lo).String()
}

func formatDate(ms int64) string { return time.UnixMilli(ms).UTC().Format(isoDateLayout) }

func stringOf(v bsoncore.Value) string {
	s, _ := bsonvalue.StringBytes(v)
	return string(s)
}

// concatExpr is $concat; a null operand makes the result null.
type concatExpr []exprNode

func (x concatExpr) eval(e *env) (bsoncore.Value, error) {
	// The operands are gathered first, so that the result is allocated
	// once, at its size: doubling a string makes no more garbage than it
	// must.
	var parts [][]byte
	size := e.buildingString("$concat")
	defer size.release()
	null, err := operands(e, x, func(v bsoncore.Value) error {
		if v.Type != bsoncore.TypeString {
			return mongoerr.New(16702, "$concat only supports strings, not %s", bsonvalue.TypeName(v.Type))
		}
		s := mustStringBytes(v)
		parts = append(parts, s)
		return size.add(len(s))
	})
	if err != nil || null {
		return bsonvalue.Null, err
	}
	out := make([]byte, 4, size.n)
	for _, p := range parts {
		out = appendChunked(out, p)
	}
	out = append(out, 0)
	binary.LittleEndian.PutUint32(out, uint32(len(out)-4))
	return bsoncore.Value{Type: bsoncore.TypeString, Data: out}, nil
}

func mustStringBytes(v bsoncore.Value) []byte {
	s, _ := bsonvalue.StringBytes(v)
	return s
}

// changeCase makes $toUpper or $toLower, which, as in MongoDB, change
// ASCII letters only.
func changeCase(mapping func(rune) rune) func([]bsoncore.Value) (bsoncore.Value, error) {
	return func(v []bsoncore.Value) (bsoncore.Value, error) {
		s, err := coerceToString(v[0])
		if err != nil {
			return bsonvalue.Missing, err
		}
		return stringValue(strings.Map(mapping, s)), nil
	}
}

func upperASCII(r rune) rune {
	if r >= 'a' && r <= 'z' {
		return r - 'a' + 'A'
	}
	return r
}

func lowerASCII(r rune) rune {
	if r >= 'A' && r <= 'Z' {
		return r - 'A' + 'a'
	}
	return r
}

func strcasecmp(v []bsoncore.Value) (bsoncore.Value, error) {
	a, err := coerceToString(v[0])
	if err != nil {
		return bsonvalue.Missing, err
	}
	b, err := coerceToString(v[1])
	if err != nil {
		return bsonvalue.Missing, err
	}
	return int32Value(int32(strings.Compare(strings.Map(upperASCII, a), strings.Map(upperASCII, b)))), nil
}

func isContinuationByte(b byte) bool { return b&0xc0 == 0x80 }

// substrBytes is $substrBytes and its old name $substr: a range of bytes
// that must not cut a character.
func substrBytes(v []bsoncore.Value) (bsoncore.Value, error) {
	s, err := coerceToString(v[0])
	if err != nil {
		return bsonvalue.Missing, err
	}
	start, length := v[1], v[2]
	if !start.IsNumber() {
		return bsonvalue.Missing, mongoerr.New(16034, "$substrBytes:  starting index must be a numeric type (is BSON type %s)", bsonvalue.TypeName(start.Type))
	}
	if !length.IsNumber() {
		return bsonvalue.Missing, mongoerr.New(16035, "$substrBytes:  length must be a numeric type (is BSON type %s)", bsonvalue.TypeName(length.Type))
	}
	lo := toTruncatedInt64(start)
	if lo < 0 {
		return bsonvalue.Missing, mongoerr.New(50752, "$substrBytes:  starting index must be non-negative (got: %d)", lo)
	}
	n := toTruncatedInt64(length)
	if n < 0 || n > int64(len(s)) {
		n = int64(len(s))
	}
	if lo < int64(len(s)) && isContinuationByte(s[lo]) {
		return bsonvalue.Missing, mongoerr.New(28656, "$substrBytes:  Invalid range, starting index is a UTF-8 continuation byte.")
	}
	if lo+n < int64(len(s)) && isContinuationByte(s[lo+n]) {
		return bsonvalue.Missing, mongoerr.New(28657, "$substrBytes:  Invalid range, ending index is in the middle of a UTF-8 character.")
	}
	if lo >= int64(len(s)) {
		return stringValue(""), nil
	}
	return stringValue(s[lo:min(lo+n, int64(len(s)))]), nil
}

// int32Arg reads an argument that must be a number representable as an
// int32, as MongoDB's "integral" test says.
func int32Arg(v bsoncore.Value) (int, bool) {
	n, ok := bsonvalue.IntegerValue(v)
	return int(n), ok && n == int64(int32(n))
}

// substrCP is $substrCP: a range of code points.
func substrCP(v []bsoncore.Value) (bsoncore.Value, error) {
	s, err := coerceToString(v[0])
	if err != nil {
		return bsonvalue.Missing, err
	}
	start, length := v[1], v[2]
	if !start.IsNumber() {
		return bsonvalue.Missing, mongoerr.New(34450, "$substrCP: starting index must be a numeric type (is BSON type %s)", bsonvalue.TypeName(start.Type))
	}
	lo, ok := int32Arg(start)
	if !ok {
		return bsonvalue.Missing, mongoerr.New(34451, "$substrCP: starting index cannot be represented as a 32-bit integral value: %s", start)
	}
	if !length.IsNumber() {
		return bsonvalue.Missing, mongoerr.New(34452, "$substrCP: length must be a numeric type (is BSON type %s)", bsonvalue.TypeName(length.Type))
	}
	n, ok := int32Arg(length)
	if !ok {
		return bsonvalue.Missing, mongoerr.New(34453, "$substrCP: length cannot be represented as a 32-bit integral value: %s", length)
	}
	if n < 0 {
		return bsonvalue.Missing, mongoerr.New(34454, "$substrCP: length must be a nonnegative integer.")
	}
	if lo < 0 {
		return bsonvalue.Missing, mongoerr.New(34455, "$substrCP: the starting index must be nonnegative integer.")
	}
	begin, ok := skipCodePoints(s, 0, lo)
	if !ok {
		return bsonvalue.Missing, mongoerr.New(34456, "$substrCP: invalid UTF-8 string")
	}
	end, ok := skipCodePoints(s, begin, n)
	if !ok {
		return bsonvalue.Missing, mongoerr.New(34458, "$substrCP: invalid UTF-8 string")
	}
	return stringValue(s[begin:end]), nil
}

// skipCodePoints returns the byte offset n code points after from, or the
// end of s; ok is false when it meets a continuation byte where a code
// point should start.
func skipCodePoints(s string, from, n int) (int, bool) {
	i := from
	for ; n > 0 && i < len(s); n-- {
		if isContinuationByte(s[i]) {
			return 0, false
		}
		i += codePointLength(s[i])
	}
	return min(i, len(s)), true
}

// codePointLength is the length of the UTF-8 sequence that b starts.
func codePointLength(b byte) int {
	switch {
	case b < 0x80:
		return 1
	case b >= 0xf0:
		return 4
	case b >= 0xe0:
		return 3
	}
	return 2
}

func strLenBytes(v []bsoncore.Value) (bsoncore.Value, error) {
	if v[0].Type != bsoncore.TypeString {
		return bsonvalue.Missing, mongoerr.New(34473, "$strLenBytes requires a string argument, found: %s", bsonvalue.TypeName(v[0].Type))
	}
	return int32Value(int32(len(mustStringBytes(v[0])))), nil
}

func strLenCP(v []bsoncore.Value) (bsoncore.Value, error) {
	if v[0].Type != bsoncore.TypeString {
		return bsonvalue.Missing, mongoerr.New(34471, "$strLenCP requires a string argument, found: %s", bsonvalue.TypeName(v[0].Type))
	}
	n := 0
	for _, b := range mustStringBytes(v[0]) {
		if !isContinuationByte(b) {
			n++
		}
	}
	return int32Value(int32(n)), nil
}

func split(v []bsoncore.Value) (bsoncore.Value, error) {
	s, sep := v[0], v[1]
	switch {
	case isNullish(s) || isNullish(sep):
		return bsonvalue.Null, nil
	case s.Type != bsoncore.TypeString:
		return bsonvalue.Missing, mongoerr.New(40085, "$split requires an expression that evaluates to a string as a first argument, found: %s", bsonvalue.TypeName(s.Type))
	case sep.Type != bsoncore.TypeString:
		return bsonvalue.Missing, mongoerr.New(40086, "$split requires an expression that evaluates to a string as a second argument, found: %s", bsonvalue.TypeName(sep.Type))
	case len(mustStringBytes(sep)) == 0:
		return bsonvalue.Missing, mongoerr.New(40087, "$split requires a non-empty separator")
	}
	str, delim := mustStringBytes(s), mustStringBytes(sep)
	// Each part is an element of its own: count them before making them,
	// for a short separator can make many more bytes than the string has.
	n := bytes.Count(str, delim) + 1
	size := 5 + len(str) - (n-1)*len(delim)
	for i := range n {
		size += 2 + digits(i) + 5
	}
	if size > MaxValueBytes {
		return bsonvalue.Missing, valueTooLarge("$split", size)
	}
	parts := bytes.Split(str, delim)
	vals := make([]bsoncore.Value, len(parts))
	for i, p := range parts {
		vals[i] = stringValue(string(p))
	}
	return arrayValue(vals), nil
}

// searchBounds reads the optional start and end arguments of $indexOfBytes
// and $indexOfCP, which must be non-negative integers.
func searchBounds(name string, v []bsoncore.Value, length int) (start, end int, err error) {
	start, end = 0, length
	for i, what := range []string{"starting index", "ending index"} {
		if len(v) <= 2+i {
			break
		}
		n, ok := int32Arg(v[2+i])
		if !ok {
			return 0, 0, mongoerr.New(40096, "%srequires an integral %s, found a value of type: %s, with value: %s", name, what, bsonvalue.TypeName(v[2+i].Type), v[2+i])
		}
		if n < 0 {
			return 0, 0, mongoerr.New(40097, "%s requires a nonnegative %s, found: %s", name, what, v[2+i])
		}
		if i == 0 {
			start = n
		} else {
			end = min(n, length)
		}
	}
	return start, end, nil
}

func indexOfBytes(v []bsoncore.Value) (bsoncore.Value, error) {
	s, token, err := indexOfStrings("$indexOfBytes", 40091, 40092, v)
	if err != nil || s == nil {
		return bsonvalue.Null, err
	}
	start, end, err := searchBounds("$indexOfBytes", v, len(s))
	if err != nil {
		return bsonvalue.Missing, err
	}
	if start > len(s) || end < start {
		return int32Value(-1), nil
	}
	i := bytes.Index(s[start:end], token)
	if i < 0 {
		return int32Value(-1), nil
	}
	return int32Value(int32(start + i)), nil
}

// indexOfStrings reads the string and the token of $indexOfBytes and
// $indexOfCP; s is nil when the string is null.
func indexOfStrings(name string, stringCode, tokenCode mongoerr.Code, v []bsoncore.Value) (s, token []byte, err error) {
	switch {
	case isNullish(v[0]):
		return nil, nil, nil
	case v[0].Type != bsoncore.TypeString:
		return nil, nil, mongoerr.New(stringCode, "%s requires a string as the first argument, found: %s", name, bsonvalue.TypeName(v[0].Type))
	case v[1].Type != bsoncore.TypeString:
		return nil, nil, mongoerr.New(tokenCode, "%s requires a string as the second argument, found: %s", name, bsonvalue.TypeName(v[1].Type))
	}
	s = mustStringBytes(v[0])
	if s == nil {
		s = []byte{}
	}
	return s, mustStringBytes(v[1]), nil
}

// indexOfCP is $indexOfCP, with MongoDB's bounds: the token may run past
// the ending index, and a starting index at the end finds nothing, not
// even the empty string.
func indexOfCP(v []bsoncore.Value) (bsoncore.Value, error) {
	s, token, err := indexOfStrings("$indexOfCP", 40093, 40094, v)
	if err != nil || s == nil {
		return bsonvalue.Null, err
	}
	length := 0
	for i := 0; i < len(s); i += codePointLength(s[i]) {
		if isContinuationByte(s[i]) {
			return bsonvalue.Missing, mongoerr.New(40095, "$indexOfCP found bad UTF-8 in the input")
		}
		length++
	}
	start, end, err := searchBounds("$indexOfCP", v, length)
	if err != nil {
		return bsonvalue.Missing, err
	}
	if end < start {
		return int32Value(-1), nil
	}
	if len(s) == 0 && len(token) == 0 && start == 0 {
		return int32Value(0), nil
	}
	i, _ := skipCodePoints(string(s), 0, start)
	for cp := start; cp < end && i < len(s); cp++ {
		if bytes.HasPrefix(s[i:], token) {
			return int32Value(int32(cp)), nil
		}
		i += codePointLength(s[i])
	}
	return int32Value(-1), nil
}

// trimExpr is $trim, $ltrim or $rtrim.
type trimExpr struct {
	name        string
	left, right bool
	input       exprNode
	chars       exprNode // nil for whitespace
}

// trimWhitespace is what $trim removes by default: the null character and
// the Unicode spaces MongoDB lists.
var trimWhitespace = []string{
	"\x00", " ", "\t", "\n", "\v", "\f", "\r", "\u00a0", "\u1680",
	"\u2000", "\u2001", "\u2002", "\u2003", "\u2004", "\u2005", "\u2006", "\u2007", "\u2008", "\u2009", "\u200a",
}

func compileTrim(c *exprCompiler, name string, args bsoncore.Value) (exprNode, error) {
	if args.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(50696, "%s only supports an object as an argument, found %s", name, bsonvalue.TypeName(args.Type))
	}
	nodes, err := c.compileNamed(args.Data, []string{"input", "chars"},
		func(arg string) error { return mongoerr.New(50694, "%s found an unknown argument: %s", name, arg) })
	if err != nil {
		return nil, err
	}
	if nodes[0] == nil {
		return nil, mongoerr.New(50695, "%s requires an 'input' field", name)
	}
	return &trimExpr{name: name, left: name != "$rtrim", right: name != "$ltrim", input: nodes[0], chars: nodes[1]}, nil
}

func (x *trimExpr) eval(e *env) (bsoncore.Value, error) {
	in, ok, err := evalTyped(e, x.input, bsoncore.TypeString, func(v bsoncore.Value) error {
		return mongoerr.New(50699, "%s requires its input to be a string, got %s (of type %s) instead.", x.name, v, bsonvalue.TypeName(v.Type))
	})
	if !ok {
		return bsonvalue.Null, err
	}
	cut := trimWhitespace
	if x.chars != nil {
		chars, ok, err := evalTyped(e, x.chars, bsoncore.TypeString, func(v bsoncore.Value) error {
			return mongoerr.New(50700, "%s requires 'chars' to be a string, got %s (of type %s) instead.", x.name, v, bsonvalue.TypeName(v.Type))
		})
		if !ok {
			return bsonvalue.Null, err
		}
		if cut, err = codePoints(x.name, stringOf(chars)); err != nil {
			return bsonvalue.Missing, err
		}
	}
	s := stringOf(in)
	for trimmed := true; x.left && trimmed; {
		trimmed = false
		for _, cp := range cut {
			if strings.HasPrefix(s, cp) {
				s, trimmed = s[len(cp):], true
				break
			}
		}
	}
	for trimmed := true; x.right && trimmed; {
		trimmed = false
		for _, cp := range cut {
			if strings.HasSuffix(s, cp) {
				s, trimmed = s[:len(s)-len(cp)], true
				break
			}
		}
	}
	return stringValue(s), nil
}

// codePoints splits the chars argument of $trim into its code points.
func codePoints(name, s string) ([]string, error) {
	var cps []string
	for i := 0; i < len(s); {
		if isContinuationByte(s[i]) {
			return nil, mongoerr.New(50698, "Failed to parse \"chars\" argument to %s: Detected invalid UTF-8. Got continuation byte when expecting the start of a new code point.", name)
		}
		n := codePointLength(s[i])
		if i+n > len(s) {
			return nil, mongoerr.New(50697, "Failed to parse \"chars\" argument to %s: Detected invalid UTF-8. Missing expected continuation byte at end of string.", name)
		}
		cps = append(cps, s[i:i+n])
		i += n
	}
	return cps, nil
}
