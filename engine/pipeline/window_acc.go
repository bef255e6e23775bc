package pipeline

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// windowOnlyAccumulators are the accumulators that only window functions
// have, as in MongoDB: valueAccumulators like those of $group, which
// windowAccumulator looks up after $group's.
var windowOnlyAccumulators = map[string]accCompiler{
	"$covariancePop":  valueAcc(func(string) valueAccumulator { return &covarianceAcc{} }),
	"$covarianceSamp": valueAcc(func(string) valueAccumulator { return &covarianceAcc{sample: true} }),
}

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
	if !isNumeric(vals[0]) || !isNumeric(vals[1]) {
		return 0, nil
	}
	x, y := toFloat(vals[0]), toFloat(vals[1])
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
