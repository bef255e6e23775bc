package pipeline

import (
	"math/rand/v2"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/pipeline/internal/values"
)

// sampleStage is $sample: size documents chosen at random, in random
// order.
type sampleStage struct {
	size int64
}

func compileSample(_ *compiler, _ string, arg bson.RawValue) (stage, error) {
	spec, ok := arg.DocumentOK()
	if !ok {
		return nil, specError(28745, "the $sample stage specification must be an object")
	}
	s := &sampleStage{}
	haveSize := false
	elems, _ := spec.Elements()
	for _, el := range elems {
		if el.Key() != "size" {
			return nil, specError(28748, "unrecognized option to $sample: %s", el.Key())
		}
		v := el.Value()
		bv := bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value}
		if !values.IsNumeric(bv) {
			return nil, specError(28746, "size argument to $sample must be a number")
		}
		n, ok := bsonvalue.IntegerValue(bv)
		if !ok {
			n = int64(values.ToFloat(bv))
		}
		if n < 0 {
			return nil, specError(28747, "size argument to $sample must not be negative")
		}
		s.size, haveSize = n, true
	}
	if !haveSize {
		return nil, specError(28749, "$sample stage must specify a size")
	}
	return s, nil
}

func (*sampleStage) blocks() {}

func (s *sampleStage) apply(r *run, docs []bson.Raw, _ Limit) ([]bson.Raw, error) {
	return s.stream(r, Slice(docs))
}

// stream samples src as it comes, holding no more than size documents:
// a reservoir sample, shuffled.
func (s *sampleStage) stream(r *run, src Source) ([]bson.Raw, error) {
	h := held{limit: r.blocking(SortExceeded)}
	var res []bson.Raw
	seen := int64(0)
	err := src(func(d bson.Raw) error {
		if seen++; seen%256 == 0 && r.ctx.Err() != nil {
			return r.ctx.Err()
		}
		if int64(len(res)) < s.size {
			res = append(res, d)
			return h.add(len(d))
		}
		if j := rand.Int64N(seen); j < s.size {
			if err := h.add(len(d) - len(res[j])); err != nil {
				return err
			}
			res[j] = d
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rand.Shuffle(len(res), func(i, j int) { res[i], res[j] = res[j], res[i] })
	return res, nil
}
