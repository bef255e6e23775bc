package accum

import (
	"math"

	"github.com/lethedb/lethe/engine/pipeline/internal/values"
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
// numbers [x, y] its expression makes; other values are ignored. As in
// MongoDB, a pair with NaN or an infinity is not counted: it only makes
// the result NaN or infinite, through nonFinite.
type covarianceAcc struct {
	sample       bool
	n            int64
	meanX, meanY float64
	c            float64
	nonFinite    float64 // 0, or the sum of what the non-finite pairs stand for
}

func (a *covarianceAcc) take(v bsoncore.Value) (int, error) {
	if v.Type != bsoncore.TypeArray {
		return 0, nil
	}
	vals, _ := bsoncore.Array(v.Data).Values()
	if len(vals) != 2 {
		return 0, nil
	}
	if !values.IsNumeric(vals[0]) || !values.IsNumeric(vals[1]) {
		return 0, nil
	}
	x, y := values.ToFloat(vals[0]), values.ToFloat(vals[1])
	if !isFinite(x) || !isFinite(y) {
		a.nonFinite += nonFinitePair(x, y)
		return 0, nil
	}
	a.n++
	dx := x - a.meanX
	a.meanX += dx / float64(a.n)
	a.meanY += (y - a.meanY) / float64(a.n)
	a.c += dx * (y - a.meanY)
	return 0, nil
}

func isFinite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// nonFinitePair is what a pair with NaN or an infinity adds to a
// covariance: NaN when either is NaN or they are infinities of opposite
// signs, else the infinity of their sign.
func nonFinitePair(x, y float64) float64 {
	switch {
	case math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 1) && math.IsInf(y, -1) || math.IsInf(x, -1) && math.IsInf(y, 1):
		return math.NaN()
	case math.IsInf(x, -1) || math.IsInf(y, -1):
		return math.Inf(-1)
	}
	return math.Inf(1)
}

func (a *covarianceAcc) Result() bsoncore.Value {
	if a.n == 1 && !a.sample {
		// MongoDB's answer for one pair, whatever else came.
		return values.Double(0)
	}
	n := a.n
	if a.sample {
		n--
	}
	if n <= 0 {
		return values.Null
	}
	return values.Double((a.c + a.nonFinite) / float64(n))
}

func (a *covarianceAcc) Size() int { return 16 }
func (*covarianceAcc) borrows()    {}
