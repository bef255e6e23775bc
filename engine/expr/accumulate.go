package expr

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/collation"
)

// accumulated returns the values $sum, $avg, $max and $min work on: the
// elements of a single array argument, or else the arguments themselves.
func accumulated(args []bsoncore.Value) []bsoncore.Value {
	if len(args) == 1 && args[0].Type == bsoncore.TypeArray {
		return arrayElements(args[0])
	}
	return args
}

// total adds the numbers among vals, ignoring other values, with $add's
// widening of types; n counts them.
func total(vals []bsoncore.Value) (s sum, n int) {
	s = sum{widest: bsoncore.TypeInt32}
	for _, v := range accumulated(vals) {
		if v.IsNumber() {
			// Numbers cannot make add fail: only dates can.
			_ = s.add(v)
			n++
		}
	}
	return s, n
}

// sumOf is the expression $sum: 0 when there is nothing to add.
func sumOf(vals []bsoncore.Value) (bsoncore.Value, error) {
	s, _ := total(vals)
	return s.value(), nil
}

// avgOf is the expression $avg: a double, or a decimal for decimals, and
// null when there are no numbers.
func avgOf(vals []bsoncore.Value) (bsoncore.Value, error) {
	s, n := total(vals)
	switch {
	case n == 0:
		return bsonvalue.Null, nil
	case s.widest == bsoncore.TypeDecimal128:
		return s.d.quo(decimalFromInt(int64(n))).value(), nil
	}
	return doubleValue(toFloat64(s.value()) / float64(n)), nil
}

// extreme makes $max or $min: the greatest or least of the values in BSON
// order, leaving null and missing out; null when nothing is left.
func extreme(greatest bool) func(*collation.Collator, []bsoncore.Value) (bsoncore.Value, error) {
	return func(coll *collation.Collator, vals []bsoncore.Value) (bsoncore.Value, error) {
		best := bsonvalue.Null
		for _, v := range accumulated(vals) {
			if isNullish(v) {
				continue
			}
			r := compareExprValues(coll, v, best)
			if best.Type == bsoncore.TypeNull || greatest && r > 0 || !greatest && r < 0 {
				best = v
			}
		}
		return best, nil
	}
}
