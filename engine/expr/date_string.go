package expr

import (
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
)

// isoFormat is the format $dateToString uses when given none. MongoDB 7.0
// writes the Z whatever the time zone.
const isoFormat = "%Y-%m-%dT%H:%M:%S.%LZ"

// The format specifiers $dateToString and $dateFromString accept, besides
// "%%".
const (
	toStringSpecifiers   = "bBdGHjLmMSwuUVYzZ"
	fromStringSpecifiers = "bBdGHjLmMSuVYzZ"
)

var monthNames = [...]string{"January", "February", "March", "April", "May", "June", "July",
	"August", "September", "October", "November", "December"}

// checkFormat checks that every '%' of a format starts one of the
// specifiers allowed.
func checkFormat(format, allowed string) error {
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		if i == len(format) {
			return mongoerr.New(codeFormatUnmatched, "Unmatched '%%' at end of format string")
		}
		if c := format[i]; c != '%' && strings.IndexByte(allowed, c) < 0 {
			return mongoerr.New(codeFormatInvalid, "Invalid format character '%%%c' in format string", c)
		}
	}
	return nil
}

// dateToStringExpr is $dateToString.
type dateToStringExpr struct {
	date, format, onNull exprNode // all but date may be nil
	tz                   *zoneArg
}

func compileDateToString(c *exprCompiler, _ string, args bsoncore.Value) (exprNode, error) {
	if args.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(18629, "$dateToString only supports an object as its argument")
	}
	nodes, err := c.compileNamed(args.Data, []string{"date", "format", "timezone", "onNull"}, func(name string) error {
		return mongoerr.New(18534, "Unrecognized argument to $dateToString: %s", name)
	})
	switch {
	case err != nil:
		return nil, err
	case nodes[0] == nil:
		return nil, mongoerr.New(18628, "Missing 'date' parameter to $dateToString")
	}
	x := &dateToStringExpr{date: nodes[0], format: nodes[1], tz: newZoneArg(nodes[2]), onNull: nodes[3]}
	if err := checkConstantArgs(nodes, x.tz.check); err != nil {
		return nil, err
	}
	return x, nil
}

func (x *dateToStringExpr) eval(e *env) (bsoncore.Value, error) {
	held := e.held
	defer func() { e.held = held }()
	date, err := x.date.eval(e)
	if err == nil {
		err = e.hold(date)
	}
	if err != nil {
		return bsonvalue.Missing, err
	}
	// MongoDB checks the format and the zone before it looks at the date,
	// so that a wrong one fails even for a null date.
	format, hasFormat := isoFormat, true
	if x.format != nil {
		f, err := x.format.eval(e)
		if err == nil {
			err = e.hold(f)
		}
		switch {
		case err != nil:
			return bsonvalue.Missing, err
		case isNullish(f):
			hasFormat = false
		case f.Type != bsoncore.TypeString:
			return bsonvalue.Missing, mongoerr.New(18533, "$dateToString requires that 'format' be a string, found: %s", bsonvalue.TypeName(f.Type))
		default:
			format = stringOf(f)
			if err := checkFormat(format, toStringSpecifiers); err != nil {
				return bsonvalue.Missing, err
			}
		}
	}
	z, hasZone, err := evalZone(e, x.tz)
	if err != nil {
		return bsonvalue.Missing, err
	}
	if isNullish(date) {
		if x.onNull != nil {
			return x.onNull.eval(e)
		}
		return nullValue, nil
	}
	if !hasZone || !hasFormat {
		return nullValue, nil
	}
	ms, err := coerceToDate(date)
	if err != nil {
		return bsonvalue.Missing, err
	}
	s, err := formatDateIn(format, ms, z)
	if err != nil {
		return bsonvalue.Missing, err
	}
	return stringValue(s), nil
}

// formatDateIn writes the instant ms in z by a checked format.
func formatDateIn(format string, ms int64, z zone) (string, error) {
	t := localTime(ms, z)
	var b strings.Builder
	padded := func(n, width int) error {
		if n < 0 || n > 9999 {
			return mongoerr.New(codeDatePartRange, "Could not convert date to string: date component was outside the supported range of 0-9999: %d", n)
		}
		s := strconv.Itoa(n)
		for i := len(s); i < width; i++ {
			b.WriteByte('0')
		}
		b.WriteString(s)
		return nil
	}
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			b.WriteByte(format[i])
			continue
		}
		i++
		var err error
		switch format[i] {
		case '%':
			b.WriteByte('%')
		case 'Y':
			err = padded(t.Year(), 4)
		case 'm':
			err = padded(int(t.Month()), 2)
		case 'd':
			err = padded(t.Day(), 2)
		case 'H':
			err = padded(t.Hour(), 2)
		case 'M':
			err = padded(t.Minute(), 2)
		case 'S':
			err = padded(t.Second(), 2)
		case 'L':
			err = padded(millisecondOf(ms), 3)
		case 'j':
			err = padded(t.YearDay(), 3)
		case 'w':
			err = padded(dayOfWeek(t), 1)
		case 'U':
			err = padded(weekOfYear(t), 2)
		case 'G':
			y, _ := t.ISOWeek()
			err = padded(y, 4)
		case 'V':
			_, w := t.ISOWeek()
			err = padded(w, 2)
		case 'u':
			err = padded(isoDayOfWeek(t), 1)
		case 'b':
			b.WriteString(monthNames[t.Month()-1][:3])
		case 'B':
			b.WriteString(monthNames[t.Month()-1])
		case 'z':
			off := offsetSeconds(t)
			sign := byte('+')
			if off < 0 {
				sign, off = '-', -off
			}
			b.WriteByte(sign)
			if err = padded(off/3600, 2); err == nil {
				err = padded(off/60%60, 2)
			}
		case 'Z':
			b.WriteString(strconv.Itoa(offsetSeconds(t) / 60))
		}
		if err != nil {
			return "", err
		}
		// A long format of wide specifiers builds a string larger than
		// the format: stop as soon as it passes the bound.
		if b.Len() > MaxValueBytes {
			return "", valueTooLarge("$dateToString", b.Len())
		}
	}
	return b.String(), nil
}

// dateFromStringExpr is $dateFromString.
type dateFromStringExpr struct {
	dateString, format, onNull, onError exprNode // all but dateString may be nil
	tz                                  *zoneArg
}

func compileDateFromString(c *exprCompiler, _ string, args bsoncore.Value) (exprNode, error) {
	if args.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(40540, "$dateFromString only supports an object as an argument, found: %s", bsonvalue.TypeName(args.Type))
	}
	nodes, err := c.compileNamed(args.Data, []string{"dateString", "format", "timezone", "onNull", "onError"}, func(name string) error {
		return mongoerr.New(40541, "Unrecognized argument to $dateFromString: %s", name)
	})
	switch {
	case err != nil:
		return nil, err
	case nodes[0] == nil:
		return nil, mongoerr.New(40542, "Missing 'dateString' parameter to $dateFromString")
	}
	x := &dateFromStringExpr{dateString: nodes[0], format: nodes[1], tz: newZoneArg(nodes[2]), onNull: nodes[3], onError: nodes[4]}
	if err := checkConstantArgs(nodes, x.tz.check); err != nil {
		return nil, err
	}
	return x, nil
}

func (x *dateFromStringExpr) eval(e *env) (bsoncore.Value, error) {
	held := e.held
	defer func() { e.held = held }()
	s, err := x.dateString.eval(e)
	if err == nil {
		err = e.hold(s)
	}
	if err != nil {
		return bsonvalue.Missing, err
	}
	// As $dateToString, MongoDB checks the format and the zone first; a
	// wrong one is an error onError does not catch.
	var format bsoncore.Value
	if x.format != nil {
		if format, err = x.format.eval(e); err != nil {
			return bsonvalue.Missing, err
		}
		if !isNullish(format) {
			if format.Type != bsoncore.TypeString {
				return bsonvalue.Missing, mongoerr.New(40684, "$dateFromString requires that 'format' be a string, found: %s", bsonvalue.TypeName(format.Type))
			}
			if err := checkFormat(stringOf(format), fromStringSpecifiers); err != nil {
				return bsonvalue.Missing, err
			}
		}
	}
	z, hasZone, err := evalZone(e, x.tz)
	if err != nil {
		return bsonvalue.Missing, err
	}
	if isNullish(s) {
		if x.onNull != nil {
			return x.onNull.eval(e)
		}
		return nullValue, nil
	}
	v, err := x.parse(s, format, z, hasZone)
	if mongoerr.CodeOf(err) == mongoerr.ConversionFailure && x.onError != nil {
		return x.onError.eval(e)
	}
	return v, err
}

// parse reads the date string s; errors of the string itself are
// ConversionFailure, which onError catches.
func (x *dateFromStringExpr) parse(s, format bsoncore.Value, z zone, hasZone bool) (bsoncore.Value, error) {
	if s.Type != bsoncore.TypeString {
		return bsonvalue.Missing, mongoerr.New(mongoerr.ConversionFailure, "$dateFromString requires that 'dateString' be a string, found: %s", bsonvalue.TypeName(s.Type))
	}
	if !hasZone || x.format != nil && isNullish(format) {
		return nullValue, nil
	}
	str := stringOf(s)
	var fields dateFields
	var err error
	if x.format != nil {
		fields, err = parseWithFormat(str, stringOf(format))
	} else {
		fields, err = parseFreeDate(str)
	}
	if err == nil {
		var ms int64
		if ms, err = fields.instant(str, z); err == nil {
			return dateValue(ms), nil
		}
	}
	return bsonvalue.Missing, err
}
