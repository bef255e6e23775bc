package pipeline

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestDeterministicSubPipelines(t *testing.T) {
	raw := func(d bson.D) bson.Raw {
		b, err := bson.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	rand := raw(bson.D{{Key: "$match", Value: bson.D{{Key: "$expr", Value: bson.D{{Key: "$lt", Value: bson.A{bson.D{{Key: "$rand", Value: bson.D{}}}, 0.5}}}}}}})
	sample := raw(bson.D{{Key: "$sample", Value: bson.D{{Key: "size", Value: 1}}}})
	rate := raw(bson.D{{Key: "$match", Value: bson.D{{Key: "$sampleRate", Value: 0.5}}}})
	nested := raw(bson.D{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "x"}, {Key: "pipeline", Value: bson.A{sample}}, {Key: "as", Value: "y"}}}})
	plain := raw(bson.D{{Key: "$match", Value: bson.D{{Key: "random", Value: "$rand"}}}})
	for _, c := range []struct {
		stages []bson.Raw
		want   bool
	}{
		{nil, true},
		{[]bson.Raw{plain}, true},
		{[]bson.Raw{plain, rand}, false},
		{[]bson.Raw{sample}, false},
		{[]bson.Raw{rate}, false},
		{[]bson.Raw{nested}, false},
	} {
		if got := deterministic(c.stages); got != c.want {
			t.Errorf("deterministic(%v) = %v, want %v", c.stages, got, c.want)
		}
	}
}
