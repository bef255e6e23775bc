package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Compressor identifies an OP_COMPRESSED compression algorithm by its
// compressorId.
type Compressor uint8

// The compressors of the wire protocol.
const (
	// CompressorNoop leaves the payload as it is.
	CompressorNoop   Compressor = 0
	CompressorSnappy Compressor = 1
	CompressorZlib   Compressor = 2
	CompressorZstd   Compressor = 3
)

// compressedPrefixLen is the size of the fields between an OP_COMPRESSED
// header and its payload: originalOpcode, uncompressedSize and compressorId.
const compressedPrefixLen = 4 + 4 + 1

// CompressorByName returns the compressor a client names in its handshake's
// compression list: "snappy", "zlib" or "zstd". The noop compressor is never
// negotiated, so "noop" is not a name it knows.
func CompressorByName(name string) (Compressor, bool) {
	switch name {
	case "snappy":
		return CompressorSnappy, true
	case "zlib":
		return CompressorZlib, true
	case "zstd":
		return CompressorZstd, true
	}
	return CompressorNoop, false
}

// String returns the compressor's name, "noop" for CompressorNoop.
func (c Compressor) String() string {
	switch c {
	case CompressorNoop:
		return "noop"
	case CompressorSnappy:
		return "snappy"
	case CompressorZlib:
		return "zlib"
	case CompressorZstd:
		return "zstd"
	}
	return "Compressor(" + strconv.Itoa(int(c)) + ")"
}

// Compress wraps frame, a whole encoded message, in an OP_COMPRESSED with the
// same request and response IDs, its payload compressed with c.
func Compress(frame []byte, c Compressor) ([]byte, error) {
	h, err := frameHeader(frame)
	if err != nil {
		return nil, fmt.Errorf("wire: compress: %w", err)
	}
	if h.OpCode == OpCompressed {
		return nil, errors.New("wire: compress: message is already an OP_COMPRESSED")
	}
	body := frame[HeaderLen:]
	dst := appendHeader(nil, h.RequestID, h.ResponseTo, OpCompressed)
	dst = bsoncore.AppendInt32(dst, int32(h.OpCode))
	dst = bsoncore.AppendInt32(dst, int32(len(body)))
	dst = append(dst, byte(c))
	if dst, err = c.appendCompressed(dst, body); err != nil {
		return nil, fmt.Errorf("wire: compress: %w", err)
	}
	return finishFrame(dst, 0), nil
}

// decodeCompressed decodes the OP_COMPRESSED in frame, which has passed
// frameHeader.
func decodeCompressed(m *Message, h Header, frame []byte) error {
	b := frame[HeaderLen:]
	if len(b) < compressedPrefixLen {
		return fmt.Errorf("OP_COMPRESSED fields cut off: %w", ErrMalformed)
	}
	op := OpCode(binary.LittleEndian.Uint32(b[0:]))
	size := int32(binary.LittleEndian.Uint32(b[4:]))
	c := Compressor(b[8])
	payload := b[compressedPrefixLen:]
	switch {
	case op == OpCompressed:
		return fmt.Errorf("OP_COMPRESSED wraps another OP_COMPRESSED: %w", ErrMalformed)
	case c > CompressorZstd:
		return fmt.Errorf("OP_COMPRESSED uses unknown compressor %d: %w", uint8(c), ErrMalformed)
	case size < 0:
		return fmt.Errorf("OP_COMPRESSED declares negative size %d: %w", size, ErrMalformed)
	case int64(size) > MaxMessageSize-HeaderLen:
		return fmt.Errorf("OP_COMPRESSED declares %d bytes uncompressed, above the limit of %d: %w",
			size, MaxMessageSize-HeaderLen, ErrMessageTooLarge)
	}

	// The message is rebuilt with its own header, as it was before
	// compression, because an OP_MSG checksum covers that header.
	inner := appendHeader(nil, h.RequestID, h.ResponseTo, op)
	inner, err := c.appendDecompressed(inner, payload, int(size))
	if err != nil {
		return fmt.Errorf("OP_COMPRESSED %s payload: %w", c, err)
	}
	if err := decodeOp(m, finishFrame(inner, 0)); err != nil {
		return err
	}
	m.Header.Length = h.Length
	m.Compressor = c
	return nil
}

// appendCompressed appends src compressed with c to dst.
func (c Compressor) appendCompressed(dst, src []byte) ([]byte, error) {
	switch c {
	case CompressorNoop:
		return append(dst, src...), nil
	case CompressorSnappy:
		return append(dst, snappy.Encode(nil, src)...), nil
	case CompressorZlib:
		buf := bytes.NewBuffer(dst)
		w := zlib.NewWriter(buf)
		if _, err := w.Write(src); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case CompressorZstd:
		enc, err := zstdEncoder()
		if err != nil {
			return nil, err
		}
		return enc.EncodeAll(src, dst), nil
	}
	return nil, fmt.Errorf("unknown compressor %d", uint8(c))
}

// appendDecompressed appends the decompressed payload to dst, failing unless
// it decompresses to exactly size bytes. Failures wrap ErrMalformed.
func (c Compressor) appendDecompressed(dst, payload []byte, size int) ([]byte, error) {
	if err := c.checkDecompressedSize(payload, size); err != nil {
		return nil, err
	}
	dst = slices.Grow(dst, size)
	out := dst[len(dst) : len(dst)+size]
	switch c {
	case CompressorNoop:
		copy(out, payload)
	case CompressorSnappy:
		if _, err := snappy.Decode(out, payload); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
	case CompressorZlib:
		if err := inflate(out, payload); err != nil {
			return nil, err
		}
	case CompressorZstd:
		dec, err := zstdDecoder()
		if err != nil {
			return nil, err
		}
		// DecodeAll appends past the capacity if the stream holds more than
		// size bytes, up to the decoder's memory limit.
		got, err := dec.DecodeAll(payload, dst)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		if n := len(got) - len(dst); n != size {
			return nil, sizeMismatch(n, size)
		}
	}
	return dst[:len(dst)+size], nil
}

// maxDeflateRatio bounds how many times larger than its input a deflate
// stream can decompress to.
const maxDeflateRatio = 1032

// checkDecompressedSize rejects, before the space is allocated, a declared
// size that payload cannot decompress to, as far as that can be told without
// decompressing it.
func (c Compressor) checkDecompressedSize(payload []byte, size int) error {
	switch c {
	case CompressorNoop:
		if len(payload) != size {
			return sizeMismatch(len(payload), size)
		}
	case CompressorSnappy:
		n, err := snappy.DecodedLen(payload)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		if n != size {
			return sizeMismatch(n, size)
		}
	case CompressorZlib:
		if int64(size) > maxDeflateRatio*int64(len(payload)) {
			return fmt.Errorf("%d bytes of zlib cannot decompress to the declared %d: %w", len(payload), size, ErrMalformed)
		}
	case CompressorZstd:
		// Only the first frame's size is known here, and a payload may
		// hold several.
		var h zstd.Header
		if h.Decode(payload) == nil && h.HasFCS && h.FrameContentSize > uint64(size) {
			return fmt.Errorf("zstd frame of %d bytes exceeds the declared %d: %w", h.FrameContentSize, size, ErrMalformed)
		}
	}
	return nil
}

// inflate fills out with the zlib stream in payload, which must hold exactly
// len(out) bytes.
func inflate(out, payload []byte) error {
	r, err := zlib.NewReader(bytes.NewReader(payload))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	defer r.Close()
	if n, err := io.ReadFull(r, out); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return sizeMismatch(n, len(out))
		}
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	// Reading on to the end makes the reader verify the stream's checksum.
	var probe [1]byte
	switch _, err := io.ReadFull(r, probe[:]); {
	case err == nil:
		return fmt.Errorf("decompresses to more than the declared %d bytes: %w", len(out), ErrMalformed)
	case !errors.Is(err, io.EOF):
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return nil
}

func sizeMismatch(got, declared int) error {
	return fmt.Errorf("decompresses to %d bytes, not the declared %d: %w", got, declared, ErrMalformed)
}

// The zstd codecs are expensive to build, hold no per-message state and are
// safe for concurrent use, so each is built once, on first use, and shared.
var (
	zstdEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
		return zstd.NewWriter(nil)
	})
	zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
		return zstd.NewReader(nil, zstd.WithDecoderMaxMemory(MaxMessageSize))
	})
)
