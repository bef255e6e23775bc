package pipeline

import (
	"math/rand/v2"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/bsonvalue"
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
		if !isNumeric(bv) {
			return nil, specError(28746, "size argument to $sample must be a number")
		}
		n, ok := bsonvalue.IntegerValue(bv)
		if !ok {
			n = int64(toFloat(bv))
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

func (s *sampleStage) apply(_ *run, docs []bson.Raw, _ Limit) ([]bson.Raw, error) {
	// A partial Fisher-Yates shuffle: the first size places get random
	// documents.
	n := int(min(s.size, int64(len(docs))))
	for i := 0; i < n; i++ {
		j := i + rand.IntN(len(docs)-i)
		docs[i], docs[j] = docs[j], docs[i]
	}
	return docs[:n], nil
}
