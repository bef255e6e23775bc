package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
)

// header returns a bare header declaring length bytes.
func header(length int32) []byte {
	h := binary.LittleEndian.AppendUint32(nil, uint32(length))
	h = binary.LittleEndian.AppendUint32(h, 9)
	h = binary.LittleEndian.AppendUint32(h, 0)
	return binary.LittleEndian.AppendUint32(h, uint32(OpMsg))
}

// endless never runs out of bytes, so that a reader trusting a huge length
// would go on reading and allocating.
type endless struct{ read int }

func (e *endless) Read(p []byte) (int, error) {
	e.read += len(p)
	return len(p), nil
}

func TestReadFrameTooLarge(t *testing.T) {
	r := io.MultiReader(bytes.NewReader(header(2_000_000_000)), &endless{})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, frame, err := ReadFrame(r, MaxMessageSize, nil)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrMessageTooLarge) || frame != nil {
		t.Fatalf("ReadFrame = %d bytes, %v; want ErrMessageTooLarge", len(frame), err)
	}
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 1<<20 {
		t.Errorf("ReadFrame allocated %d bytes before rejecting the length", allocated)
	}
}

func TestReadFrameLimits(t *testing.T) {
	for _, tc := range []struct {
		length  int32
		maxSize int32
		want    error
	}{
		{length: 100, maxSize: 100},
		{length: HeaderLen, maxSize: 100},
		{length: 101, maxSize: 100, want: ErrMessageTooLarge},
		{length: MaxMessageSize + 1, maxSize: MaxMessageSize, want: ErrMessageTooLarge},
		{length: HeaderLen - 1, maxSize: 100, want: ErrMalformed},
		{length: 0, maxSize: 100, want: ErrMalformed},
		{length: -1, maxSize: 100, want: ErrMalformed},
	} {
		data := append(header(tc.length), make([]byte, 100)...)
		h, frame, err := ReadFrame(bytes.NewReader(data), tc.maxSize, nil)
		if !errors.Is(err, tc.want) {
			t.Errorf("length %d, limit %d: err = %v, want %v", tc.length, tc.maxSize, err, tc.want)
			continue
		}
		if err == nil && (h.Length != tc.length || len(frame) != int(tc.length) || !bytes.Equal(frame, data[:tc.length])) {
			t.Errorf("length %d: got header %+v and %d bytes", tc.length, h, len(frame))
		}
	}
}

func TestReadFrameEOF(t *testing.T) {
	full := pingChecksum()
	for _, tc := range []struct {
		name string
		data []byte
		want error
	}{
		{"nothing", nil, io.EOF},
		{"half a header", full[:7], io.ErrUnexpectedEOF},
		{"header only", full[:HeaderLen], io.ErrUnexpectedEOF},
		{"all but one byte", full[:len(full)-1], io.ErrUnexpectedEOF},
	} {
		_, _, err := ReadFrame(bytes.NewReader(tc.data), MaxMessageSize, nil)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
		if tc.want == io.EOF && err != io.EOF {
			t.Errorf("%s: err = %#v, want io.EOF itself", tc.name, err)
		}
	}
}

func TestReadFrameReusesBuffer(t *testing.T) {
	want := findOpMsg()
	roomy := make([]byte, 3, len(want))
	_, frame, err := ReadFrame(bytes.NewReader(want), MaxMessageSize, roomy)
	if err != nil {
		t.Fatal(err)
	}
	if &frame[0] != &roomy[:1][0] || !bytes.Equal(frame, want) {
		t.Errorf("a buffer with room was not used")
	}
	small := make([]byte, 0, len(want)-1)
	_, frame, err = ReadFrame(bytes.NewReader(want), MaxMessageSize, small)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(frame, want) {
		t.Errorf("frame read past a small buffer = %x, want %x", frame, want)
	}
}

func FuzzReadFrame(f *testing.F) {
	for _, c := range goodCaptures {
		f.Add(readCapture(f, c.name))
	}
	f.Add(header(2_000_000_000))
	f.Fuzz(func(t *testing.T, data []byte) {
		const maxSize = 1 << 16
		h, frame, err := ReadFrame(bytes.NewReader(data), maxSize, nil)
		if err != nil {
			for _, want := range []error{io.EOF, io.ErrUnexpectedEOF, ErrMalformed, ErrMessageTooLarge} {
				if errors.Is(err, want) {
					return
				}
			}
			t.Fatalf("unexpected kind of error: %v", err)
		}
		if h.Length < HeaderLen || h.Length > maxSize || int(h.Length) != len(frame) || !bytes.Equal(frame, data[:h.Length]) || h != parseHeader(frame) {
			t.Fatalf("header %+v does not describe the %d-byte frame", h, len(frame))
		}
	})
}
