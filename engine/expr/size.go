package expr

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
)

// The memory an expression may use. Expressions build BSON values, so
// every value one builds is bounded as MongoDB bounds a BSON object, by
// MaxValueBytes: an operator that builds a string, an array or a document
// counts its bytes as it goes and stops as soon as it passes the limit,
// rather than after the whole value is in memory. A $reduce that doubles a
// string forty times thus fails at 16 MiB instead of exhausting the server.
//
// Values an evaluation holds at once, such as an operator's arguments, the
// variables of a $let, and values still being built by enclosing
// operators, are bounded together by MaxHeldBytes, so that many values
// under the limit cannot add up to too much either.

// MaxValueBytes is the size of the largest value an expression may build:
// MongoDB's limit on a BSON object, 16 MiB. Building a larger one fails
// with BSONObjectTooLarge.
const MaxValueBytes = 16 << 20

// MaxHeldBytes bounds the values one evaluation holds at once, like the
// 100 MiB MongoDB allows its blocking stages and accumulators. Passing it
// fails with ExceededMemoryLimit.
const MaxHeldBytes = 100 << 20

// valueTooLarge is the error of a value that would pass MaxValueBytes.
func valueTooLarge(what string, n int) error {
	return mongoerr.New(mongoerr.BSONObjectTooLarge, "%s would build a value of at least %d bytes, more than the maximum BSON size of %d bytes", what, n, MaxValueBytes)
}

// charge counts n bytes as held by the evaluation.
func (e *env) charge(n int) error {
	e.held += n
	if e.held > MaxHeldBytes {
		return mongoerr.New(mongoerr.ExceededMemoryLimit, "an expression would hold more than %d bytes of values at once", MaxHeldBytes)
	}
	return nil
}

// hold counts v as held by the evaluation until the caller resets e.held.
func (e *env) hold(v bsoncore.Value) error { return e.charge(len(v.Data)) }

// valueSize counts the encoded size of a value being built: a string, or
// a document or array element by element. It charges what it counts to the
// evaluation too, until release.
type valueSize struct {
	e    *env
	what string // the operator building the value, for errors
	n    int
}

// building starts counting a value that what builds, with the bytes of its
// empty encoding.
func (e *env) building(what string, empty int) valueSize {
	s := valueSize{e: e, what: what}
	_ = s.add(empty)
	return s
}

// buildingArray starts counting an array or a document.
func (e *env) buildingArray(what string) valueSize { return e.building(what, 5) }

// buildingString starts counting a string.
func (e *env) buildingString(what string) valueSize { return e.building(what, 5) }

// add counts n bytes more.
func (s *valueSize) add(n int) error {
	s.n += n
	if s.n > MaxValueBytes {
		return valueTooLarge(s.what, s.n)
	}
	return s.e.charge(n)
}

// addField counts a document's field.
func (s *valueSize) addField(name string, v bsoncore.Value) error {
	return s.add(2 + len(name) + len(v.Data))
}

// addElement counts the i-th element of an array, whose key is i's digits.
func (s *valueSize) addElement(i int, v bsoncore.Value) error {
	return s.add(2 + digits(i) + len(v.Data))
}

// release stops charging the evaluation for the value: its builder has
// returned it, and whoever keeps it charges it again.
func (s *valueSize) release() { s.e.held -= s.n }

func digits(i int) int {
	n := 1
	for ; i >= 10; i /= 10 {
		n++
	}
	return n
}

// buildArray makes an array of vals, counting it element by element.
func (e *env) buildArray(what string, vals []bsoncore.Value) (bsoncore.Value, error) {
	s := e.buildingArray(what)
	defer s.release()
	for i, v := range vals {
		if err := s.addElement(i, v); err != nil {
			return bsonvalue.Missing, err
		}
	}
	return arrayValue(vals), nil
}

// tick is called at each step of a loop over an array: it stops the
// evaluation when the request it serves has ended.
func (e *env) tick() error {
	if e.ctx == nil {
		return nil
	}
	if e.ticks++; e.ticks%16 != 0 {
		return nil
	}
	return e.ctx.Err()
}

// appendChunked appends src to dst a piece at a time. A copy of megabytes
// in one piece cannot be preempted, and holds up every goroutine while the
// garbage collector waits for it to stop; pieces let it stop between them.
func appendChunked(dst, src []byte) []byte {
	const piece = 64 << 10
	for len(src) > piece {
		dst = append(dst, src[:piece]...)
		src = src[piece:]
	}
	return append(dst, src...)
}
