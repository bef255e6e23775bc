package wire

import (
	"errors"
	"fmt"
)

// Message is a decoded wire message. Exactly one of Msg, Query and Reply is
// set, according to Header.OpCode.
type Message struct {
	// Header is that of the frame as received, except that for a compressed
	// message OpCode is the operation inside.
	Header Header
	// Compressor is the compressor the message arrived with, for the reply to
	// use; CompressorNoop if the message was not compressed.
	Compressor Compressor

	Msg   *Msg
	Query *Query
	Reply *Reply
}

// Decode decodes frame, one whole message such as ReadFrame returns. An
// OP_COMPRESSED is decompressed, its declared size checked against
// MaxMessageSize first, and the message inside decoded. Every document is
// validated, nested documents included.
//
// The documents of the result alias frame; see the package documentation.
func Decode(frame []byte) (*Message, error) {
	m := new(Message)
	if err := DecodeInto(m, frame); err != nil {
		return nil, err
	}
	return m, nil
}

// DecodeInto is Decode into m, which it overwrites. It reuses m.Msg and
// the slices it holds, so that a connection decoding one request after
// another into the same Message allocates nothing once they have grown; a
// caller must be done with what m held before.
func DecodeInto(m *Message, frame []byte) error {
	h, err := frameHeader(frame)
	if err != nil {
		return fmt.Errorf("wire: %w", err)
	}
	if h.OpCode == OpCompressed {
		err = decodeCompressed(m, h, frame)
	} else {
		err = decodeOp(m, frame)
	}
	if err != nil {
		return fmt.Errorf("wire: request %d: %w", h.RequestID, err)
	}
	return nil
}

// decodeOp decodes an uncompressed message, which has passed frameHeader,
// into m.
func decodeOp(m *Message, frame []byte) error {
	msg := m.Msg
	*m = Message{Header: parseHeader(frame)}
	var err error
	switch m.Header.OpCode {
	case OpMsg:
		if msg == nil {
			msg = new(Msg)
		}
		err = decodeMsg(msg, frame)
		m.Msg = msg
	case OpQuery:
		m.Query, err = decodeQuery(frame[HeaderLen:])
	case OpReply:
		m.Reply, err = decodeReply(frame[HeaderLen:])
	default:
		err = fmt.Errorf("%w %s", ErrUnsupportedOpCode, m.Header.OpCode)
	}
	return err
}

// Encode encodes m with its header's IDs, compressing it with m.Compressor
// unless that is CompressorNoop. It undoes Decode, except that a message that
// arrived wrapped with the noop compressor comes out unwrapped.
func Encode(m *Message) ([]byte, error) {
	var frame []byte
	id, to := m.Header.RequestID, m.Header.ResponseTo
	switch {
	case m.Msg != nil:
		frame = AppendMsg(nil, id, to, m.Msg)
	case m.Query != nil:
		frame = AppendQuery(nil, id, to, m.Query)
	case m.Reply != nil:
		frame = AppendReply(nil, id, to, m.Reply)
	default:
		return nil, errors.New("wire: encode: message has no Msg, Query or Reply")
	}
	if m.Compressor == CompressorNoop {
		return frame, nil
	}
	return Compress(frame, m.Compressor)
}
