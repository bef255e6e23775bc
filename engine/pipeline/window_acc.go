package pipeline

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// windowOnlyAccumulators are accumulators of window functions that
// $group does not have here (yet): they are valueAccumulators like those
// of $group, so that $group can take them over by moving them into its
// table, which windowAccumulator looks in first.
var windowOnlyAccumulators = map[string]accCompiler{
	"$stdDevPop":      valueAcc(func(string) valueAccumulator { return &stdDevAcc{} }),
	"$stdDevSamp":     valueAcc(func(string) valueAccumulator { return &stdDevAcc{sample: true} }),
	"$covariancePop":  valueAcc(func(string) valueAccumulator { return &covarianceAcc{} }),
	"$covarianceSamp": valueAcc(func(string) valueAccumulator { return &covarianceAcc{sample: true} }),
}

// stdDevAcc is $stdDevPop, or $stdDevSamp: values that are not numbers
// are ignored, and a deviation of too few values is null. It keeps a
// running mean and sum of squared deviations (Welford's method), which
// stays accurate where sums of squares would not.
type stdDevAcc struct {
	sample bool
	n      int64
	mean   float64
	m2     float64
}

func (a *stdDevAcc) take(v bsoncore.Value) (int, error) {
	f, ok := numberAsFloat(v)
	if !ok {
		return 0, nil
	}
	a.n++
	d := f - a.mean
	a.mean += d / float64(a.n)
	a.m2 += d * (f - a.mean)
	return 0, nil
}

func (a *stdDevAcc) result() bsoncore.Value {
	n := a.n
	if a.sample {
		n--
	}
	if n <= 0 {
		return nullValue
	}
	return doubleValue(math.Sqrt(a.m2 / float64(n)))
}

func (a *stdDevAcc) size() int { return 16 }

// covarianceAcc is $covariancePop, or $covarianceSamp, of the pairs of
// numbers [x, y] its expression makes; other values are ignored.
type covarianceAcc struct {
	sample       bool
	n            int64
	meanX, meanY float64
	c            float64
}

func (a *covarianceAcc) take(v bsoncore.Value) (int, error) {
	if v.Type != bsoncore.TypeArray {
		return 0, nil
	}
	vals, _ := bsoncore.Array(v.Data).Values()
	if len(vals) != 2 {
		return 0, nil
	}
	x, okX := numberAsFloat(vals[0])
	y, okY := numberAsFloat(vals[1])
	if !okX || !okY {
		return 0, nil
	}
	a.n++
	dx := x - a.meanX
	a.meanX += dx / float64(a.n)
	a.meanY += (y - a.meanY) / float64(a.n)
	a.c += dx * (y - a.meanY)
	return 0, nil
}

func (a *covarianceAcc) result() bsoncore.Value {
	n := a.n
	if a.sample {
		n--
	}
	if a.n == 0 || n <= 0 {
		return nullValue
	}
	return doubleValue(a.c / float64(n))
}

func (a *covarianceAcc) size() int { return 16 }
