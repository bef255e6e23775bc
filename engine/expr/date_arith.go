package expr

import (
	"math"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
)

// timeUnit is a unit of $dateAdd, $dateSubtract, $dateDiff and $dateTrunc.
type timeUnit uint8

const (
	unitMillisecond timeUnit = iota
	unitSecond
	unitMinute
	unitHour
	unitDay
	unitWeek
	unitMonth
	unitQuarter
	unitYear
)

var timeUnitNames = [...]string{"millisecond", "second", "minute", "hour", "day", "week", "month", "quarter", "year"}

// unitMillis are the milliseconds of the units of fixed length.
var unitMillis = [...]int64{unitMillisecond: 1, unitSecond: 1000, unitMinute: 60_000, unitHour: 3_600_000}

func parseTimeUnit(v bsoncore.Value, op string) (timeUnit, error) {
	if v.Type != bsoncore.TypeString {
		return 0, mongoerr.New(5439013, "%s requires 'unit' to be a string, but got %s", op, bsonvalue.TypeName(v.Type))
	}
	name := stringOf(v)
	for i, n := range timeUnitNames {
		if n == name {
			return timeUnit(i), nil
		}
	}
	return 0, mongoerr.New(mongoerr.FailedToParse, "%s parameter 'unit' value parsing failed :: caused by :: unknown time unit value: %s", op, name)
}

// weekday numbers days as ISO 8601 does, Monday 1 to Sunday 7; weeks start
// on Sunday unless startOfWeek says otherwise.
type weekday int

const defaultStartOfWeek weekday = 7

var weekdayNames = [...]string{"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}

func parseStartOfWeek(v bsoncore.Value, op string) (weekday, error) {
	if v.Type != bsoncore.TypeString {
		return 0, mongoerr.New(5439015, "%s requires 'startOfWeek' to be a string, but got %s", op, bsonvalue.TypeName(v.Type))
	}
	name := strings.ToLower(stringOf(v))
	for i, n := range weekdayNames {
		if name == n || name == n[:3] {
			return weekday(i + 1), nil
		}
	}
	return 0, mongoerr.New(5439016, "%s parameter 'startOfWeek' value cannot be recognized as a day of a week: %s", op, stringOf(v))
}

// dayInWeek is the place of t's day in a week starting on start, from 0.
func dayInWeek(t time.Time, start weekday) int64 {
	return int64((isoDayOfWeek(t) - int(start) + 7) % 7)
}

// civilDay numbers the days of the proleptic Gregorian calendar.
func civilDay(t time.Time) int64 {
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC).Unix() / 86400
}

// maxDateAddAmount is, by unit, the bound on the amount $dateAdd accepts:
// roughly what the range of dates can hold, as MongoDB computes it.
var maxDateAddAmount = func() [unitYear + 1]int64 {
	maxDays := int64(math.MaxUint64/86_400_000 + 1)
	maxYears := maxDays/365 + 1
	return [...]int64{
		unitMillisecond: math.MaxInt64,
		unitSecond:      maxDays * 24 * 60 * 60,
		unitMinute:      maxDays * 24 * 60,
		unitHour:        maxDays * 24,
		unitDay:         maxDays,
		unitWeek:        maxDays / 7,
		unitMonth:       maxYears * 12,
		unitQuarter:     maxYears * 4,
		unitYear:        maxYears,
	}
}()

func dateAddOverflow() error { return mongoerr.New(5166406, "dateAdd overflowed") }

// dateAdd adds amount units to the instant ms. Days and longer units keep
// the local time of day in z, across changes to daylight saving time; a
// month added to the 31st ends on the month's last day.
func dateAdd(ms int64, unit timeUnit, amount int64, z zone) (int64, error) {
	if unit == unitMillisecond {
		r, ok := addInt64(ms, amount)
		if !ok {
			return 0, dateAddOverflow()
		}
		return r, nil
	}
	if bound := maxDateAddAmount[unit]; amount <= -bound || amount >= bound {
		return 0, mongoerr.New(5976500, "invalid dateAdd 'amount' parameter value: %d %s", amount, timeUnitNames[unit])
	}
	if unit < unitDay {
		// Shorter units are lengths of time, whatever the zone.
		r, ok := addInt64(ms, amount*unitMillis[unit])
		if !ok {
			return 0, dateAddOverflow()
		}
		return r, nil
	}
	t := localTime(ms, z)
	y, m, d := int64(t.Year()), int64(t.Month()), int64(t.Day())
	switch unit {
	case unitDay:
		d += amount
	case unitWeek:
		d += amount * 7
	default:
		months := amount
		if unit == unitQuarter {
			months *= 3
		} else if unit == unitYear {
			months *= 12
		}
		total := y*12 + (m - 1) + months
		y, m = floorDiv(total, 12), total-floorDiv(total, 12)*12+1
		d = min(d, int64(daysIn(int(y), int(m))))
	}
	out, ok := localToMillis(time.Date(int(y), time.Month(m), int(d), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC), z)
	if !ok {
		return 0, dateAddOverflow()
	}
	return out, nil
}

// dateArithExpr is $dateAdd and $dateSubtract.
type dateArithExpr struct {
	name                    string
	startDate, unit, amount exprNode
	tz                      *zoneArg // nil when not given
}

func compileDateArith(c *exprCompiler, name string, args bsoncore.Value) (exprNode, error) {
	if args.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(5166400, "%s expects an object as its argument", name)
	}
	nodes, err := c.compileNamed(args.Data, []string{"startDate", "unit", "amount", "timezone"}, func(arg string) error {
		return mongoerr.New(5166401, "Unrecognized argument to %s: %s. Expected arguments are startDate, unit, amount, and optionally timezone.", name, arg)
	})
	switch {
	case err != nil:
		return nil, err
	case nodes[0] == nil || nodes[1] == nil || nodes[2] == nil:
		return nil, mongoerr.New(5166402, "%s requires startDate, unit, and amount to be present", name)
	}
	x := &dateArithExpr{name: name, startDate: nodes[0], unit: nodes[1], amount: nodes[2], tz: newZoneArg(nodes[3])}
	if err := checkConstantArgs(nodes, checkUnit(x.unit, name), x.tz.check); err != nil {
		return nil, err
	}
	return x, nil
}

func (x *dateArithExpr) eval(e *env) (bsoncore.Value, error) {
	start, err := x.startDate.eval(e)
	if err != nil || isNullish(start) {
		return nullOr(err)
	}
	unitValue, err := x.unit.eval(e)
	if err != nil || isNullish(unitValue) {
		return nullOr(err)
	}
	unit, err := parseTimeUnit(unitValue, x.name)
	if err != nil {
		return bsonvalue.Missing, err
	}
	amountValue, err := x.amount.eval(e)
	if err != nil || isNullish(amountValue) {
		return nullOr(err)
	}
	z, ok, err := evalZone(e, x.tz)
	if !ok {
		return nullOr(err)
	}
	if !coercibleToDate(start) {
		return bsonvalue.Missing, mongoerr.New(5166403, "%s requires startDate to be convertible to a date", x.name)
	}
	amount, ok := bsonvalue.IntegerValue(amountValue)
	if !ok {
		return bsonvalue.Missing, mongoerr.New(5166405, "%s expects integer amount of time units", x.name)
	}
	if x.name == "$dateSubtract" {
		if amount == math.MinInt64 {
			return bsonvalue.Missing, mongoerr.New(6045000, "invalid $dateSubtract 'amount' parameter value: %d", amount)
		}
		amount = -amount
	}
	ms, _ := coerceToDate(start)
	r, err := dateAdd(ms, unit, amount, z)
	if err != nil {
		return bsonvalue.Missing, err
	}
	return dateValue(r), nil
}

// checkUnit checks a constant unit.
func checkUnit(n exprNode, op string) func() error {
	return func() error {
		if v, ok := constantArg(n); ok {
			_, err := parseTimeUnit(v, op)
			return err
		}
		return nil
	}
}

// checkStartOfWeek checks a constant startOfWeek, whatever the unit.
func checkStartOfWeek(n exprNode, op string) func() error {
	return func() error {
		if v, ok := constantArg(n); ok {
			_, err := parseStartOfWeek(v, op)
			return err
		}
		return nil
	}
}

// checkIn checks a constant zone of $dateDiff or $dateTrunc.
func (a *zoneArg) checkIn(op string) func() error {
	return func() error { return zoneContext(a.check(), op) }
}

// zoneContext says which argument of $dateDiff or $dateTrunc failed.
func zoneContext(err error, op string) error {
	if me, ok := mongoerr.As(err); ok {
		return mongoerr.New(me.Code, "%s parameter 'timezone' value parsing failed :: caused by :: %s", op, me.Msg)
	}
	return err
}

// contextZone evaluates the zone of $dateDiff or $dateTrunc, whose errors
// say which argument failed.
func contextZone(e *env, n *zoneArg, op string) (zone, bool, error) {
	z, ok, err := evalZone(e, n)
	return z, ok, zoneContext(err, op)
}

// evalStartOfWeek evaluates the optional startOfWeek of a week unit.
func evalStartOfWeek(e *env, n exprNode, op string) (weekday, bool, error) {
	if n == nil {
		return defaultStartOfWeek, true, nil
	}
	v, err := n.eval(e)
	if err != nil || isNullish(v) {
		return 0, false, err
	}
	w, err := parseStartOfWeek(v, op)
	return w, err == nil, err
}

// dateArg reads the date of $dateDiff or $dateTrunc.
func dateArg(v bsoncore.Value, op, param string) (int64, error) {
	if !coercibleToDate(v) {
		return 0, mongoerr.New(5166307, "%s requires '%s' to be a date, but got %s", op, param, bsonvalue.TypeName(v.Type))
	}
	return coerceToDate(v)
}

// dateDiffExpr is $dateDiff.
type dateDiffExpr struct {
	startDate, endDate, unit, startOfWeek exprNode // startOfWeek may be nil
	tz                                    *zoneArg
}

func compileDateDiff(c *exprCompiler, _ string, args bsoncore.Value) (exprNode, error) {
	if args.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(5166301, "$dateDiff only supports an object as its argument")
	}
	nodes, err := c.compileNamed(args.Data, []string{"startDate", "endDate", "unit", "timezone", "startOfWeek"}, func(arg string) error {
		return mongoerr.New(5166302, "Unrecognized argument to $dateDiff: %s", arg)
	})
	switch {
	case err != nil:
		return nil, err
	case nodes[0] == nil:
		return nil, mongoerr.New(5166303, "Missing 'startDate' parameter to $dateDiff")
	case nodes[1] == nil:
		return nil, mongoerr.New(5166304, "Missing 'endDate' parameter to $dateDiff")
	case nodes[2] == nil:
		return nil, mongoerr.New(5166305, "Missing 'unit' parameter to $dateDiff")
	}
	x := &dateDiffExpr{startDate: nodes[0], endDate: nodes[1], unit: nodes[2], tz: newZoneArg(nodes[3]), startOfWeek: nodes[4]}
	const op = "$dateDiff"
	if err := checkConstantArgs(nodes, checkUnit(x.unit, op), checkStartOfWeek(x.startOfWeek, op), x.tz.checkIn(op)); err != nil {
		return nil, err
	}
	return x, nil
}

func (x *dateDiffExpr) eval(e *env) (bsoncore.Value, error) {
	const op = "$dateDiff"
	start, err := x.startDate.eval(e)
	if err != nil || isNullish(start) {
		return nullOr(err)
	}
	end, err := x.endDate.eval(e)
	if err != nil || isNullish(end) {
		return nullOr(err)
	}
	unitValue, err := x.unit.eval(e)
	if err != nil || isNullish(unitValue) {
		return nullOr(err)
	}
	unit, err := parseTimeUnit(unitValue, op)
	if err != nil {
		return bsonvalue.Missing, err
	}
	startOfWeek := defaultStartOfWeek
	if unit == unitWeek {
		var ok bool
		if startOfWeek, ok, err = evalStartOfWeek(e, x.startOfWeek, op); !ok {
			return nullOr(err)
		}
	}
	z, ok, err := contextZone(e, x.tz, op)
	if !ok {
		return nullOr(err)
	}
	startMs, err := dateArg(start, op, "startDate")
	if err != nil {
		return bsonvalue.Missing, err
	}
	endMs, err := dateArg(end, op, "endDate")
	if err != nil {
		return bsonvalue.Missing, err
	}
	if unit == unitMillisecond {
		d, ok := subInt64(endMs, startMs)
		if !ok {
			return bsonvalue.Missing, mongoerr.New(5166308, "dateDiff overflowed")
		}
		return int64Value(d), nil
	}
	return int64Value(dateDiff(localTime(startMs, z), localTime(endMs, z), unit, startOfWeek)), nil
}

// dateDiff counts the boundaries of unit crossed from s to t, both local
// times of one zone. The hours, minutes and seconds between local times
// are corrected for a change of offset between them, so that they count
// elapsed time.
func dateDiff(s, t time.Time, unit timeUnit, startOfWeek weekday) int64 {
	years := int64(t.Year() - s.Year())
	days := civilDay(t) - civilDay(s)
	offsetChange := int64(offsetSeconds(s) - offsetSeconds(t))
	hours := int64(t.Hour()-s.Hour()) + days*24
	minutes := int64(t.Minute()-s.Minute()) + hours*60
	switch unit {
	case unitYear:
		return years
	case unitQuarter:
		return int64((int(t.Month())-1)/3-(int(s.Month())-1)/3) + years*4
	case unitMonth:
		return int64(t.Month()-s.Month()) + years*12
	case unitWeek:
		return (days + dayInWeek(s, startOfWeek) - dayInWeek(t, startOfWeek)) / 7
	case unitDay:
		return days
	case unitHour:
		return hours + offsetChange/3600
	case unitMinute:
		return minutes + offsetChange/60
	}
	return int64(t.Second()-s.Second()) + minutes*60 + offsetChange
}
