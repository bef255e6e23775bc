package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
)

var allCompressors = []Compressor{CompressorNoop, CompressorSnappy, CompressorZlib, CompressorZstd}

func TestCompressRoundTrip(t *testing.T) {
	frames := map[string][]byte{
		"OP_QUERY":          helloOpQuery(1),
		"OP_REPLY":          helloOpReply(),
		"OP_MSG":            findOpMsg(),
		"OP_MSG sequence":   insertOpMsgSequence(),
		"OP_MSG checksum":   pingChecksum(),
		"OP_MSG large body": bigCursorReply(),
	}
	for _, c := range allCompressors {
		for name, frame := range frames {
			wrapped, err := Compress(frame, c)
			if err != nil {
				t.Fatalf("%v %s: Compress: %v", c, name, err)
			}
			m, err := Decode(wrapped)
			if err != nil {
				t.Fatalf("%v %s: Decode: %v", c, name, err)
			}
			h := parseHeader(frame)
			h.Length = int32(len(wrapped))
			if m.Header != h || m.Compressor != c {
				t.Errorf("%v %s: header %+v compressor %v, want %+v", c, name, m.Header, m.Compressor, h)
			}
			m.Compressor = CompressorNoop
			if plain, err := Encode(m); err != nil || !bytes.Equal(plain, frame) {
				t.Errorf("%v %s: decompressed message re-encodes to %x, %v; want %x", c, name, plain, err, frame)
			}
		}
	}
}

func TestCompressRejects(t *testing.T) {
	frame := findOpMsg()
	wrapped, err := Compress(frame, CompressorZstd)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Compress(wrapped, CompressorSnappy); err == nil {
		t.Error("Compress accepted an OP_COMPRESSED")
	}
	if _, err := Compress(frame[:len(frame)-1], CompressorSnappy); !errors.Is(err, ErrMalformed) {
		t.Errorf("Compress of a short frame: err = %v, want ErrMalformed", err)
	}
	if _, err := Compress(frame, Compressor(9)); err == nil {
		t.Error("Compress accepted compressor 9")
	}
}

// TestDecompressSizeMismatch checks each compressor against payloads that
// expand to more or less than the size the message declares.
func TestDecompressSizeMismatch(t *testing.T) {
	frame := pingChecksum()
	for _, c := range allCompressors {
		for _, delta := range []int32{-1, +1} {
			wrapped, err := Compress(frame, c)
			if err != nil {
				t.Fatal(err)
			}
			at := HeaderLen + 4
			size := int32(binary.LittleEndian.Uint32(wrapped[at:]))
			binary.LittleEndian.PutUint32(wrapped[at:], uint32(size+delta))
			if _, err := Decode(wrapped); !errors.Is(err, ErrMalformed) {
				t.Errorf("%v, declared size off by %+d: err = %v, want ErrMalformed", c, delta, err)
			}
		}
	}
}

// TestDecompressChecksSizeFirst checks that a declared size the payload
// cannot decompress to is rejected before a buffer of that size is
// allocated.
func TestDecompressChecksSizeFirst(t *testing.T) {
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	body := pingChecksum()[HeaderLen:]
	for _, tc := range []struct {
		c       Compressor
		payload []byte
	}{
		{CompressorNoop, body},
		{CompressorSnappy, snappy.Encode(nil, body)},
		{CompressorZlib, []byte{0x78, 0x9c, 0x01, 0x00, 0x00, 0xff, 0xff}},
		// Sixty-four megabytes of zeros declare their size in the frame.
		{CompressorZstd, enc.EncodeAll(make([]byte, 64<<20), nil)},
	} {
		frame := appendHeader(nil, 1, 0, OpCompressed)
		frame = binary.LittleEndian.AppendUint32(frame, uint32(OpMsg))
		frame = binary.LittleEndian.AppendUint32(frame, MaxMessageSize-HeaderLen)
		frame = append(frame, byte(tc.c))
		frame = finishFrame(append(frame, tc.payload...), 0)

		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Decode(frame)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%v: err = %v, want ErrMalformed", tc.c, err)
		}
		if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 1<<20 {
			t.Errorf("%v: Decode allocated %d bytes before rejecting the size", tc.c, allocated)
		}
	}
}

func TestCompressorNames(t *testing.T) {
	for _, c := range allCompressors[1:] {
		got, ok := CompressorByName(c.String())
		if !ok || got != c {
			t.Errorf("CompressorByName(%q) = %v, %v", c.String(), got, ok)
		}
	}
	for _, name := range []string{"noop", "lz4", "", "ZSTD"} {
		if c, ok := CompressorByName(name); ok {
			t.Errorf("CompressorByName(%q) = %v, want no compressor", name, c)
		}
	}
	if s := CompressorNoop.String(); s != "noop" {
		t.Errorf("CompressorNoop.String() = %q", s)
	}
	if s := Compressor(9).String(); s != "Compressor(9)" {
		t.Errorf("Compressor(9).String() = %q", s)
	}
}
