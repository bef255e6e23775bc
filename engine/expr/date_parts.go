package expr

import (
	"math"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
)

// dateToPartsExpr is $dateToParts.
type dateToPartsExpr struct {
	date, iso8601 exprNode // iso8601 may be nil
	tz            *zoneArg
}

func compileDateToParts(c *exprCompiler, _ string, args bsoncore.Value) (exprNode, error) {
	if args.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(40524, "$dateToParts only supports an object as its argument")
	}
	nodes, err := c.compileNamed(args.Data, []string{"date", "timezone", "iso8601"}, func(name string) error {
		return mongoerr.New(40520, "Unrecognized argument to $dateToParts: %s", name)
	})
	switch {
	case err != nil:
		return nil, err
	case nodes[0] == nil:
		return nil, mongoerr.New(40522, "Missing 'date' parameter to $dateToParts")
	}
	x := &dateToPartsExpr{date: nodes[0], tz: newZoneArg(nodes[1]), iso8601: nodes[2]}
	if err := checkConstantArgs(nodes, x.tz.check); err != nil {
		return nil, err
	}
	return x, nil
}

func (x *dateToPartsExpr) eval(e *env) (bsoncore.Value, error) {
	date, err := x.date.eval(e)
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
	iso := false
	if x.iso8601 != nil {
		v, err := x.iso8601.eval(e)
		switch {
		case err != nil:
			return bsonvalue.Missing, err
		case isNullish(v):
			return nullValue, nil
		case v.Type != bsoncore.TypeBoolean:
			return bsonvalue.Missing, mongoerr.New(40521, "iso8601 must evaluate to a bool, found %s", bsonvalue.TypeName(v.Type))
		}
		iso = v.Boolean()
	}
	if isNullish(date) {
		return nullValue, nil
	}
	ms, err := coerceToDate(date)
	if err != nil {
		return bsonvalue.Missing, err
	}
	t := localTime(ms, z)
	b := bsoncore.NewDocumentBuilder()
	if iso {
		y, w := t.ISOWeek()
		b.AppendInt32("isoWeekYear", int32(y)).
			AppendInt32("isoWeek", int32(w)).
			AppendInt32("isoDayOfWeek", int32(isoDayOfWeek(t)))
	} else {
		b.AppendInt32("year", int32(t.Year())).
			AppendInt32("month", int32(t.Month())).
			AppendInt32("day", int32(t.Day()))
	}
	b.AppendInt32("hour", int32(t.Hour())).
		AppendInt32("minute", int32(t.Minute())).
		AppendInt32("second", int32(t.Second())).
		AppendInt32("millisecond", int32(millisecondOf(ms)))
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: b.Build()}, nil
}

// The parts of $dateFromParts, in the order MongoDB evaluates them.
const (
	partHour = iota
	partMinute
	partSecond
	partMillisecond
	partYear
	partMonth
	partDay
	partIsoWeekYear
	partIsoWeek
	partIsoDayOfWeek
	partTimezone
)

var datePartNames = []string{"hour", "minute", "second", "millisecond", "year", "month", "day",
	"isoWeekYear", "isoWeek", "isoDayOfWeek", "timezone"}

// Bounds of the parts MongoDB limits to an int16 so that carrying them over
// stays cheap: all but the year, second and millisecond.
const (
	minDatePart = math.MinInt16
	maxDatePart = math.MaxInt16
)

// dateFromPartsExpr is $dateFromParts, of calendar parts (year, month, day)
// or ISO 8601 ones (isoWeekYear, isoWeek, isoDayOfWeek).
type dateFromPartsExpr struct {
	parts []exprNode // by the part constants; those not given are nil
	tz    *zoneArg
}

func compileDateFromParts(c *exprCompiler, _ string, args bsoncore.Value) (exprNode, error) {
	if args.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(40519, "$dateFromParts only supports an object as its argument")
	}
	nodes, err := c.compileNamed(args.Data, datePartNames, func(name string) error {
		return mongoerr.New(40518, "Unrecognized argument to $dateFromParts: %s", name)
	})
	if err != nil {
		return nil, err
	}
	calendar := nodes[partYear] != nil
	iso := nodes[partIsoWeekYear] != nil
	switch {
	case !calendar && !iso:
		return nil, mongoerr.New(40516, "$dateFromParts requires either 'year' or 'isoWeekYear' to be present")
	case calendar && (iso || nodes[partIsoWeek] != nil || nodes[partIsoDayOfWeek] != nil):
		return nil, mongoerr.New(40489, "$dateFromParts does not allow mixing natural dates with ISO dates")
	case iso && (nodes[partMonth] != nil || nodes[partDay] != nil):
		return nil, mongoerr.New(40525, "$dateFromParts does not allow mixing ISO dates with natural dates")
	}
	x := &dateFromPartsExpr{parts: nodes, tz: newZoneArg(nodes[partTimezone])}
	if err := checkConstantArgs(nodes, x.tz.check); err != nil {
		return nil, err
	}
	return x, nil
}

// part evaluates one part: its default when not given, ok false when null.
func (x *dateFromPartsExpr) part(e *env, i int, def int64, bounded bool) (n int64, ok bool, err error) {
	if x.parts[i] == nil {
		return def, true, nil
	}
	v, err := x.parts[i].eval(e)
	if err != nil || isNullish(v) {
		return 0, false, err
	}
	n, ok = bsonvalue.IntegerValue(v)
	if !ok {
		return 0, false, mongoerr.New(40515, "'%s' must evaluate to an integer, found %s with value %s", datePartNames[i], bsonvalue.TypeName(v.Type), v)
	}
	if bounded && (n < minDatePart || n > maxDatePart) {
		return 0, false, mongoerr.New(31034, "'%s' must evaluate to a value in the range [%d, %d]; value %d is not in range", datePartNames[i], minDatePart, maxDatePart, n)
	}
	return n, true, nil
}

func (x *dateFromPartsExpr) eval(e *env) (bsoncore.Value, error) {
	var v [partTimezone]int64
	parts := func(list ...int) (bool, error) {
		for _, i := range list {
			def := int64(0)
			switch i {
			case partYear, partIsoWeekYear:
				def = 1970
			case partMonth, partDay, partIsoWeek, partIsoDayOfWeek:
				def = 1
			}
			bounded := i != partYear && i != partIsoWeekYear && i != partSecond && i != partMillisecond
			n, ok, err := x.part(e, i, def, bounded)
			if !ok {
				return false, err
			}
			v[i] = n
		}
		return true, nil
	}
	if ok, err := parts(partHour, partMinute, partSecond, partMillisecond); !ok {
		return nullOr(err)
	}
	z, ok, err := evalZone(e, x.tz)
	if !ok {
		return nullOr(err)
	}
	var y, m, d int64
	if x.parts[partYear] != nil {
		if ok, err := parts(partYear, partMonth, partDay); !ok {
			return nullOr(err)
		}
		if v[partYear] < 1 || v[partYear] > 9999 {
			return bsonvalue.Missing, mongoerr.New(40523, "'year' must evaluate to an integer in the range 1 to 9999, found %d", v[partYear])
		}
		y, m, d = v[partYear], v[partMonth], v[partDay]
	} else {
		if ok, err := parts(partIsoWeekYear, partIsoWeek, partIsoDayOfWeek); !ok {
			return nullOr(err)
		}
		if v[partIsoWeekYear] < 1 || v[partIsoWeekYear] > 9999 {
			return bsonvalue.Missing, mongoerr.New(31095, "'isoWeekYear' must evaluate to an integer in the range 1 to 9999, found %d", v[partIsoWeekYear])
		}
		t := isoDate(int(v[partIsoWeekYear]), int(v[partIsoWeek]), int(v[partIsoDayOfWeek]))
		y, m, d = int64(t.Year()), int64(t.Month()), int64(t.Day())
	}
	// Parts out of their range carry into the larger ones in local time,
	// as time.Date does: month 13 is January of the next year, hour -1 the
	// last hour of the day before. Milliseconds carry into seconds first.
	sec, ok := addInt64(v[partSecond], floorDiv(v[partMillisecond], 1000))
	if !ok {
		return bsonvalue.Missing, dateOverflow()
	}
	nsec := int(v[partMillisecond]-floorDiv(v[partMillisecond], 1000)*1000) * int(time.Millisecond)
	ms, ok := localToMillis(time.Date(int(y), time.Month(m), int(d), int(v[partHour]), int(v[partMinute]), int(sec), nsec, time.UTC), z)
	if !ok {
		return bsonvalue.Missing, dateOverflow()
	}
	return dateValue(ms), nil
}

// floorDiv divides rounding toward negative infinity.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// nullOr is the result of an operator that stopped at a null argument or
// at an error.
func nullOr(err error) (bsoncore.Value, error) {
	if err != nil {
		return bsonvalue.Missing, err
	}
	return nullValue, nil
}
