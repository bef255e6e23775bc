// Package distinct gathers the distinct values of a key over documents,
// as the distinct command returns them: arrays contribute their elements,
// undefined is left out, and the values come in BSON order, within
// MongoDB's 16 MiB cap on the reply.
package distinct

import (
	"bytes"
	"hash/maphash"
	"slices"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/mongoerr"
)

// maxBytes bounds the values distinct returns, as MongoDB's 16 MiB
// cap on its reply does.
const maxBytes = 16 << 20

// Set gathers the distinct values of a key. Values are found again
// by a hash of their keys, so that only the values are kept. They are one
// array of the reply, which MongoDB caps at 16 MiB: counting them as they
// are found stops a scan that would pass it.
type Set struct {
	key    string
	out    []bsoncore.Value
	seen   map[uint64][]int // indexes in out, by hash of key
	seed   maphash.Seed
	size   int
	tooBig bool
	k, o   []byte // reused
	// coll is the collation values are told apart under: values whose
	// collation keys are equal are one, the first found kept.
	coll *collation.Collator
}

// NewSet is the empty set of the values of key, a dotted path.
func NewSet(key string) *Set {
	return NewCollatedSet(key, nil)
}

// NewCollatedSet is NewSet under a collation; nil is the simple one.
func NewCollatedSet(key string, coll *collation.Collator) *Set {
	return &Set{key: key, seen: map[uint64][]int{}, seed: maphash.MakeSeed(), coll: coll}
}

// Add takes the values of doc; false when the values are too big.
func (s *Set) Add(doc bson.Raw) bool {
	vals := query.DistinctValues(bsoncore.Document(doc), s.key)
next:
	for _, v := range vals {
		if v.Type == bsoncore.TypeUndefined {
			continue
		}
		s.k = keycodec.Append(s.k[:0], s.coll.Key(v))
		h := maphash.Bytes(s.seed, s.k)
		for _, i := range s.seen[h] {
			if s.o = keycodec.Append(s.o[:0], s.coll.Key(s.out[i])); bytes.Equal(s.o, s.k) {
				continue next
			}
		}
		if s.size += 2 + len(strconv.Itoa(len(s.out))) + len(v.Data); s.size > maxBytes {
			s.tooBig = true
			return false
		}
		s.seen[h] = append(s.seen[h], len(s.out))
		s.out = append(s.out, bsoncore.Value{Type: v.Type, Data: append([]byte(nil), v.Data...)})
	}
	return true
}

// Values are the values gathered, in BSON order, or the error of
// MongoDB's cap when they passed it.
func (s *Set) Values() ([]bsoncore.Value, error) {
	if s.tooBig {
		return nil, mongoerr.New(17217, "distinct too big, 16mb cap")
	}
	slices.SortStableFunc(s.out, s.coll.Compare)
	return s.out, nil
}
