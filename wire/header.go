package wire

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// OpCode identifies the operation a message carries.
type OpCode int32

// The operations this package decodes.
const (
	OpReply      OpCode = 1
	OpQuery      OpCode = 2004
	OpCompressed OpCode = 2012
	OpMsg        OpCode = 2013
)

// Legacy operations that MongoDB removed; they are named only so that errors
// about them read well.
const (
	opUpdate      OpCode = 2001
	opInsert      OpCode = 2002
	opGetMore     OpCode = 2005
	opDelete      OpCode = 2006
	opKillCursors OpCode = 2007
)

// String returns the protocol's name for op, such as "OP_MSG".
func (op OpCode) String() string {
	switch op {
	case OpReply:
		return "OP_REPLY"
	case OpQuery:
		return "OP_QUERY"
	case OpCompressed:
		return "OP_COMPRESSED"
	case OpMsg:
		return "OP_MSG"
	case opUpdate:
		return "OP_UPDATE"
	case opInsert:
		return "OP_INSERT"
	case opGetMore:
		return "OP_GET_MORE"
	case opDelete:
		return "OP_DELETE"
	case opKillCursors:
		return "OP_KILL_CURSORS"
	}
	return "OpCode(" + strconv.Itoa(int(op)) + ")"
}

// HeaderLen is the size of the header that starts every message.
const HeaderLen = 16

// MaxMessageSize is the largest message, header included, that MongoDB
// accepts; servers advertise it to clients as maxMessageSizeBytes.
const MaxMessageSize = 48_000_000

// Header is the standard message header.
type Header struct {
	Length     int32 // of the whole message, header included
	RequestID  int32
	ResponseTo int32 // RequestID of the request this message answers, or 0
	OpCode     OpCode
}

// parseHeader reads a header from the first HeaderLen bytes of b.
func parseHeader(b []byte) Header {
	return Header{
		Length:     int32(binary.LittleEndian.Uint32(b[0:])),
		RequestID:  int32(binary.LittleEndian.Uint32(b[4:])),
		ResponseTo: int32(binary.LittleEndian.Uint32(b[8:])),
		OpCode:     OpCode(binary.LittleEndian.Uint32(b[12:])),
	}
}

// appendHeader appends a header whose length is left zero; finishFrame fills
// it once the message is complete.
func appendHeader(dst []byte, requestID, responseTo int32, op OpCode) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, 0)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(requestID))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(responseTo))
	return binary.LittleEndian.AppendUint32(dst, uint32(op))
}

// finishFrame stores the length of the message that starts at dst[start:].
func finishFrame(dst []byte, start int) []byte {
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(dst)-start))
	return dst
}

// frameHeader returns the header of frame after checking that frame holds
// exactly the message the header declares.
func frameHeader(frame []byte) (Header, error) {
	if len(frame) < HeaderLen {
		return Header{}, fmt.Errorf("frame of %d bytes is shorter than a header: %w", len(frame), ErrMalformed)
	}
	h := parseHeader(frame)
	if int64(h.Length) != int64(len(frame)) {
		return Header{}, fmt.Errorf("header declares %d bytes but the frame holds %d: %w", h.Length, len(frame), ErrMalformed)
	}
	return h, nil
}
