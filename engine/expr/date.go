package expr

import (
	"sync"
	"time"

	// The time zone database ships inside the binary, so that every Olson
	// name is known on a host without one (time prefers the host's own).
	_ "time/tzdata"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
)

// The date operators read dates in a time zone: an Olson name such as
// "America/New_York", or a fixed offset from UTC such as "+04:45", "-0530"
// or "+03". Without one they work in UTC. A date argument may be a Date, a
// Timestamp or an ObjectId, which MongoDB reads as the instant it names.

// MongoDB's codes for the date operators.
const (
	codeNotDate         mongoerr.Code = 16006 // an argument that is no date
	codeUnknownZone     mongoerr.Code = 40485
	codeZoneNotString   mongoerr.Code = 40517
	codeDateOption      mongoerr.Code = 40535 // {$year: {bogus: ...}}
	codeDateArrayArity  mongoerr.Code = 40536
	codeDateMissing     mongoerr.Code = 40539
	codeDatePartRange   mongoerr.Code = 18537 // a part outside 0-9999 in a string
	codeFormatUnmatched mongoerr.Code = 18535
	codeFormatInvalid   mongoerr.Code = 18536
)

// dateOperators is the table of the date operators, which ops.go adds to
// the expression language.
func dateOperators() map[string]exprOperator {
	ops := map[string]exprOperator{
		"$dateToString":   compileDateToString,
		"$dateFromString": compileDateFromString,
		"$dateToParts":    compileDateToParts,
		"$dateFromParts":  compileDateFromParts,
		"$dateAdd":        compileDateArith,
		"$dateSubtract":   compileDateArith,
		"$dateDiff":       compileDateDiff,
		"$dateTrunc":      compileDateTrunc,
	}
	for name, part := range datePartOperators {
		ops[name] = compileDatePart(part)
	}
	return ops
}

// zone is the time zone a date operator works in.
type zone struct {
	loc *time.Location
	// utc is whether the zone is UTC itself, as MongoDB tells it apart from
	// other zones with no offset: no timezone, "UTC", or a zero offset. In
	// UTC, $dateFromString accepts strings that carry their own offset.
	utc bool
}

var utcZone = zone{loc: time.UTC, utc: true}

// parseZone reads a time zone argument: an Olson name or a UTC offset.
func parseZone(v bsoncore.Value) (zone, error) {
	if v.Type != bsoncore.TypeString {
		return zone{}, mongoerr.New(codeZoneNotString, "timezone must evaluate to a string, found %s", bsonvalue.TypeName(v.Type))
	}
	name := stringOf(v)
	if secs, ok := parseUTCOffset(name); ok {
		return zone{loc: time.FixedZone(name, secs), utc: secs == 0}, nil
	}
	if name == "UTC" {
		return utcZone, nil
	}
	// LoadLocation also takes "" and "Local", which name no zone in
	// MongoDB's database.
	if name != "" && name != "Local" {
		if loc, err := time.LoadLocation(name); err == nil {
			return zone{loc: loc}, nil
		}
	}
	return zone{}, mongoerr.New(codeUnknownZone, "unrecognized time zone identifier: \"%s\"", name)
}

// parseUTCOffset reads "±HH", "±HHMM" or "±HH:MM" as seconds east of UTC.
func parseUTCOffset(s string) (int, bool) {
	if len(s) < 3 || s[0] != '+' && s[0] != '-' {
		return 0, false
	}
	sign := 1
	if s[0] == '-' {
		sign = -1
	}
	digits := func(s string) (int, bool) {
		n := 0
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return 0, false
			}
			n = n*10 + int(s[i]-'0')
		}
		return n, true
	}
	var hh, mm string
	switch {
	case len(s) == 3:
		hh = s[1:3]
	case len(s) == 5:
		hh, mm = s[1:3], s[3:5]
	case len(s) == 6 && s[3] == ':':
		hh, mm = s[1:3], s[4:6]
	default:
		return 0, false
	}
	h, ok := digits(hh)
	if !ok {
		return 0, false
	}
	m, ok := digits(mm)
	if !ok {
		return 0, false
	}
	return sign * (h*3600 + m*60), true
}

// zoneArg is the time zone argument of a date operator. Loading a zone
// reads its rules, so it keeps the zones it loaded by name: most
// expressions name one zone, or a few in a field of their documents.
type zoneArg struct {
	n      exprNode
	loaded sync.Map // zone names to zones
}

// newZoneArg makes the argument of an expression, nil when not given.
func newZoneArg(n exprNode) *zoneArg {
	if n == nil {
		return nil
	}
	return &zoneArg{n: n}
}

// evalZone evaluates an optional time zone argument. A missing argument is
// UTC; one that is null or missing makes the operator's result null, which
// ok false reports.
func evalZone(e *env, a *zoneArg) (z zone, ok bool, err error) {
	if a == nil {
		return utcZone, true, nil
	}
	v, err := a.n.eval(e)
	if err != nil || isNullish(v) {
		return zone{}, false, err
	}
	if v.Type == bsoncore.TypeString {
		if z, ok := a.loaded.Load(stringOf(v)); ok {
			return z.(zone), true, nil
		}
	}
	if z, err = parseZone(v); err != nil {
		return zone{}, false, err
	}
	// Only names of zones are kept, so what is kept stays small.
	a.loaded.Store(stringOf(v), z)
	return z, true, nil
}

// coercibleToDate reports whether MongoDB reads v as an instant.
func coercibleToDate(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeDateTime, bsoncore.TypeTimestamp, bsoncore.TypeObjectID:
		return true
	}
	return false
}

// coerceToDate reads a Date, a Timestamp (its seconds) or an ObjectId (the
// second it was made) as milliseconds since the epoch.
func coerceToDate(v bsoncore.Value) (int64, error) {
	switch v.Type {
	case bsoncore.TypeDateTime:
		ms, _ := v.DateTimeOK()
		return ms, nil
	case bsoncore.TypeTimestamp:
		t, _, _ := v.TimestampOK()
		return int64(t) * 1000, nil
	case bsoncore.TypeObjectID:
		oid, _ := v.ObjectIDOK()
		return bson.ObjectID(oid).Timestamp().Unix() * 1000, nil
	}
	return 0, mongoerr.New(codeNotDate, "can't convert from BSON type %s to Date", bsonvalue.TypeName(v.Type))
}

// localTime is the instant ms in z.
func localTime(ms int64, z zone) time.Time { return time.UnixMilli(ms).In(z.loc) }

// millisecondOf is the millisecond within its second of an instant, which
// no zone changes.
func millisecondOf(ms int64) int { return int((ms%1000 + 1000) % 1000) }

// offsetSeconds is the offset from UTC of z at t, east positive.
func offsetSeconds(t time.Time) int {
	_, off := t.Zone()
	return off
}

// dayOfWeek numbers days from Sunday (1) to Saturday (7).
func dayOfWeek(t time.Time) int { return int(t.Weekday()) + 1 }

// isoDayOfWeek numbers days from Monday (1) to Sunday (7).
func isoDayOfWeek(t time.Time) int { return (int(t.Weekday())+6)%7 + 1 }

// weekOfYear numbers weeks from Sunday to Saturday: 0 for the days before
// the year's first Sunday, then 1 to 53, as strftime's %U does.
func weekOfYear(t time.Time) int { return (t.YearDay() - dayOfWeek(t) + 7) / 7 }

// A datePart is what one of $year, $month and the rest reads of a date.
type datePart func(t time.Time, ms int64) bsoncore.Value

var datePartOperators = map[string]datePart{
	"$year":         func(t time.Time, _ int64) bsoncore.Value { return int32Value(int32(t.Year())) },
	"$month":        func(t time.Time, _ int64) bsoncore.Value { return int32Value(int32(t.Month())) },
	"$dayOfMonth":   func(t time.Time, _ int64) bsoncore.Value { return int32Value(int32(t.Day())) },
	"$hour":         func(t time.Time, _ int64) bsoncore.Value { return int32Value(int32(t.Hour())) },
	"$minute":       func(t time.Time, _ int64) bsoncore.Value { return int32Value(int32(t.Minute())) },
	"$second":       func(t time.Time, _ int64) bsoncore.Value { return int32Value(int32(t.Second())) },
	"$millisecond":  func(_ time.Time, ms int64) bsoncore.Value { return int32Value(int32(millisecondOf(ms))) },
	"$dayOfWeek":    func(t time.Time, _ int64) bsoncore.Value { return int32Value(int32(dayOfWeek(t))) },
	"$dayOfYear":    func(t time.Time, _ int64) bsoncore.Value { return int32Value(int32(t.YearDay())) },
	"$week":         func(t time.Time, _ int64) bsoncore.Value { return int32Value(int32(weekOfYear(t))) },
	"$isoDayOfWeek": func(t time.Time, _ int64) bsoncore.Value { return int32Value(int32(isoDayOfWeek(t))) },
	"$isoWeek": func(t time.Time, _ int64) bsoncore.Value {
		_, w := t.ISOWeek()
		return int32Value(int32(w))
	},
	// MongoDB computes the ISO year as a long, and returns it as one.
	"$isoWeekYear": func(t time.Time, _ int64) bsoncore.Value {
		y, _ := t.ISOWeek()
		return int64Value(int64(y))
	},
}

// datePartExpr is $year, $month and the other operators that read one part
// of a date, in UTC or a time zone.
type datePartExpr struct {
	part datePart
	date exprNode
	tz   *zoneArg // nil when not given
}

// compileDatePart compiles the argument of a part operator: a date, a
// one-element array of one, or {date, timezone}.
func compileDatePart(part datePart) exprOperator {
	return func(c *exprCompiler, name string, args bsoncore.Value) (exprNode, error) {
		x := &datePartExpr{part: part}
		var err error
		switch args.Type {
		case bsoncore.TypeEmbeddedDocument:
			if first := bsonvalue.FirstKey(args.Data); len(first) > 0 && first[0] == '$' {
				x.date, err = c.compile(args)
				return x, err
			}
			nodes, err := c.compileNamed(args.Data, []string{"date", "timezone"}, func(arg string) error {
				return mongoerr.New(codeDateOption, "unrecognized option to %s: \"%s\"", name, arg)
			})
			if err != nil {
				return nil, err
			}
			if nodes[0] == nil {
				return nil, mongoerr.New(codeDateMissing, "missing 'date' argument to %s, provided: %s", name, bsoncore.Document(args.Data))
			}
			x.date, x.tz = nodes[0], newZoneArg(nodes[1])
			if err := checkConstantArgs(nodes, x.tz.check); err != nil {
				return nil, err
			}
			return x, nil
		case bsoncore.TypeArray:
			nodes, err := c.compileList(args.Data)
			if err != nil {
				return nil, err
			}
			if len(nodes) != 1 {
				return nil, mongoerr.New(codeDateArrayArity, "%s accepts exactly one argument if given an array, but was given %d", name, len(nodes))
			}
			x.date = nodes[0]
			return x, nil
		}
		x.date, err = c.compile(args)
		return x, err
	}
}

func (x *datePartExpr) eval(e *env) (bsoncore.Value, error) {
	v, err := x.date.eval(e)
	switch {
	case err != nil:
		return bsonvalue.Missing, err
	case isNullish(v):
		return nullValue, nil
	}
	// MongoDB reads the date before the zone, so a wrong date fails first.
	ms, err := coerceToDate(v)
	if err != nil {
		return bsonvalue.Missing, err
	}
	z, ok, err := evalZone(e, x.tz)
	switch {
	case err != nil:
		return bsonvalue.Missing, err
	case !ok:
		return nullValue, nil
	}
	return x.part(localTime(ms, z), ms), nil
}

// checkConstantArgs checks the constant arguments of a date operator when
// it compiles, as MongoDB does when it optimizes one: a bad constant zone
// or unit then fails the expression even for documents whose other
// arguments would make the result null. An operator whose arguments are
// all constant is evaluated whole instead, so its checks wait for
// evaluation, which finds a null first.
func checkConstantArgs(args []exprNode, checks ...func() error) error {
	constant := true
	for _, n := range args {
		if _, ok := n.(literal); n != nil && !ok {
			constant = false
		}
	}
	if constant {
		return nil
	}
	for _, check := range checks {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// constantArg is the value of a constant argument that is not null.
func constantArg(n exprNode) (bsoncore.Value, bool) {
	l, ok := n.(literal)
	if !ok || isNullish(l.v) {
		return bsonvalue.Missing, false
	}
	return l.v, true
}

// check loads a constant zone, which must be one.
func (a *zoneArg) check() error {
	if a == nil {
		return nil
	}
	v, ok := constantArg(a.n)
	if !ok {
		return nil
	}
	z, err := parseZone(v)
	if err == nil {
		a.loaded.Store(stringOf(v), z)
	}
	return err
}

// wallToUnix is the instant, in seconds, at which the clocks of loc show
// wall, a local time given as the seconds of a UTC time with its fields.
// A local time that a change of offset skips or repeats resolves as
// MongoDB's timelib resolves it: by the offset before the change, so that
// 02:30 on the night clocks go from 02:00 to 03:00 is 03:30 of the later
// offset, and 01:30 of a night that repeats it is the first 01:30.
func wallToUnix(wall int64, loc *time.Location) int64 {
	_, current := time.Unix(wall, 0).In(loc).Zone()
	guess := time.Unix(wall-int64(current), 0).In(loc)
	_, after := guess.Zone()
	if current == after {
		return wall - int64(current)
	}
	start, _ := guess.ZoneBounds()
	// In the hour a change skips or repeats, keep the earlier offset.
	inChange := !start.IsZero() &&
		wall-int64(after) >= start.Unix()+int64(current-after) &&
		wall-int64(after) < start.Unix()
	if inChange {
		return wall - int64(current)
	}
	return wall - int64(after)
}

// localToMillis is the instant, in milliseconds, at which the clocks of z
// show the local time with t's fields (t's own zone is ignored); ok is
// false if it is past the range of dates.
func localToMillis(t time.Time, z zone) (ms int64, ok bool) {
	wall := time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), 0, time.UTC).Unix()
	ms, ok = mulInt64(wallToUnix(wall, z.loc), 1000)
	if ok {
		ms, ok = addInt64(ms, int64(t.Nanosecond()/int(time.Millisecond)))
	}
	return ms, ok
}
