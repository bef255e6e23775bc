package wire

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// decodeErrors are the sentinels every Decode error wraps one of.
var decodeErrors = []error{ErrMalformed, ErrInvalidBSON, ErrChecksum, ErrMessageTooLarge, ErrUnsupportedOpCode}

func wrapsSentinel(err error) bool {
	for _, s := range decodeErrors {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// TestDecodeGarbage feeds Decode random bodies under each opcode, and the
// captures with random bytes changed, as a deterministic complement to
// FuzzDecode.
func TestDecodeGarbage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(frame []byte) {
		t.Helper()
		if _, err := Decode(frame); err != nil && !wrapsSentinel(err) {
			t.Fatalf("Decode(%x): error wraps no sentinel: %v", frame, err)
		}
	}
	for _, op := range []OpCode{OpMsg, OpQuery, OpReply, OpCompressed, opInsert, 0} {
		for range 500 {
			frame := appendHeader(nil, 1, 0, op)
			for range rng.IntN(300) {
				frame = append(frame, byte(rng.Uint32()))
			}
			check(finishFrame(frame, 0))
		}
	}
	for _, c := range goodCaptures {
		capture := readCapture(t, c.name)
		for range 200 {
			frame := append([]byte(nil), capture...)
			for range 1 + rng.IntN(3) {
				frame[HeaderLen+rng.IntN(len(frame)-HeaderLen)] = byte(rng.Uint32())
			}
			check(frame)
		}
	}
}
