package expr

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
)

// dateTruncExpr is $dateTrunc.
type dateTruncExpr struct {
	date, unit, binSize, startOfWeek exprNode // the last two may be nil
	tz                               *zoneArg
}

func compileDateTrunc(c *exprCompiler, _ string, args bsoncore.Value) (exprNode, error) {
	if args.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(5439007, "$dateTrunc only supports an object as its argument")
	}
	nodes, err := c.compileNamed(args.Data, []string{"date", "unit", "binSize", "timezone", "startOfWeek"}, func(arg string) error {
		return mongoerr.New(5439008, "Unrecognized argument to $dateTrunc: %s. Expected arguments are date, unit, and optionally, binSize, timezone, startOfWeek", arg)
	})
	switch {
	case err != nil:
		return nil, err
	case nodes[0] == nil:
		return nil, mongoerr.New(5439009, "Missing 'date' parameter to $dateTrunc")
	case nodes[1] == nil:
		return nil, mongoerr.New(5439010, "Missing 'unit' parameter to $dateTrunc")
	}
	x := &dateTruncExpr{date: nodes[0], unit: nodes[1], binSize: nodes[2], tz: newZoneArg(nodes[3]), startOfWeek: nodes[4]}
	const op = "$dateTrunc"
	checkBinSize := func() error {
		if v, ok := constantArg(x.binSize); ok {
			_, err := binSizeOf(v)
			return err
		}
		return nil
	}
	if err := checkConstantArgs(nodes, checkUnit(x.unit, op), checkStartOfWeek(x.startOfWeek, op), x.tz.checkIn(op), checkBinSize); err != nil {
		return nil, err
	}
	return x, nil
}

func (x *dateTruncExpr) eval(e *env) (bsoncore.Value, error) {
	const op = "$dateTrunc"
	date, err := x.date.eval(e)
	if err != nil || isNullish(date) {
		return nullOr(err)
	}
	binSize := int64(1)
	if x.binSize != nil {
		v, err := x.binSize.eval(e)
		if err != nil || isNullish(v) {
			return nullOr(err)
		}
		if binSize, err = binSizeOf(v); err != nil {
			return bsonvalue.Missing, err
		}
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
	ms, err := dateArg(date, op, "date")
	if err != nil {
		return bsonvalue.Missing, err
	}
	r, err := truncateDate(ms, unit, binSize, z, startOfWeek)
	if err != nil {
		return bsonvalue.Missing, err
	}
	return dateValue(r), nil
}

// binSizeOf reads the binSize of $dateTrunc, a positive integer.
func binSizeOf(v bsoncore.Value) (int64, error) {
	n, ok := bsonvalue.IntegerValue(v)
	if !ok {
		return 0, mongoerr.New(5439017, "$dateTrunc requires 'binSize' to be a 64-bit integer, but got value '%s' of type %s", v, bsonvalue.TypeName(v.Type))
	}
	if n <= 0 {
		return 0, mongoerr.New(5439018, "$dateTrunc requires 'binSize' to be greater than 0, but got value %d", n)
	}
	return n, nil
}

func dateTruncOverflow(code mongoerr.Code) error { return mongoerr.New(code, "dateTrunc overflowed") }

// referenceMillis is 2000-01-01T00:00:00Z, which MongoDB counts bins from.
const referenceMillis = 946_684_800_000

// truncateDate is the start of the bin of binSize units that holds the
// instant ms. Bins are counted from midnight of 2000-01-01 in z (for weeks,
// from the first startOfWeek on or after it), so that a bin of a day or
// longer starts at a local midnight.
func truncateDate(ms int64, unit timeUnit, binSize int64, z zone, startOfWeek weekday) (int64, error) {
	// 2000-01-01 was a Saturday, and early January 2000 had no change of
	// daylight saving time in any zone: whole days can be added as
	// lengths of time.
	ref := referenceMillis - int64(offsetSeconds(localTime(referenceMillis, z)))*1000
	refDay := 1
	if unit == unitWeek {
		const saturday = 6
		shift := (7 - (saturday-int(startOfWeek)+7)%7) % 7
		ref += int64(shift) * 86_400_000
		refDay += shift
	}
	if unit < unitDay {
		size, ok := mulInt64(binSize, unitMillis[unit])
		if !ok {
			return 0, dateTruncOverflow(5439002)
		}
		shifted, ok := subInt64(ms, ref)
		if !ok {
			return 0, dateTruncOverflow(5439000)
		}
		r, ok := subInt64(ms, floorMod(shifted, size))
		if !ok {
			return 0, dateTruncOverflow(5439001)
		}
		return r, nil
	}
	if binSize > 100_000_000_000 {
		return 0, mongoerr.New(5439006, "dateTrunc unsupported binSize value")
	}
	refTime := time.Date(2000, 1, refDay, 0, 0, 0, 0, time.UTC)
	distance := dateDiff(refTime, localTime(ms, z), unit, startOfWeek)
	// The reference is midnight in both times, whatever their offsets: the
	// distance in days and longer units needs no correction.
	return dateAdd(ref, unit, distance-floorMod(distance, binSize), z)
}

// floorMod is the remainder of a floored division, never negative for a
// positive divisor.
func floorMod(a, b int64) int64 {
	r := a % b
	if r < 0 {
		r += b
	}
	return r
}
