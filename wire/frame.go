package wire

import (
	"errors"
	"fmt"
	"io"
)

// ReadFrame reads one whole message, header included, from r and returns its
// header and bytes. The returned frame is buf[:Length] when buf has the
// capacity, and a new slice otherwise.
//
// The declared length is checked before anything is allocated: a length
// below HeaderLen is an error wrapping ErrMalformed and one above maxSize an
// error wrapping ErrMessageTooLarge. ReadFrame returns io.EOF, unwrapped, only
// when r ends cleanly between messages; an end inside a message is
// io.ErrUnexpectedEOF.
func ReadFrame(r io.Reader, maxSize int32, buf []byte) (Header, []byte, error) {
	// The header goes to buf when it can: a scratch array would escape
	// to the heap through io.ReadFull at every call.
	var head []byte
	if cap(buf) >= HeaderLen {
		head = buf[:HeaderLen]
	} else {
		head = make([]byte, HeaderLen)
	}
	if _, err := io.ReadFull(r, head); err != nil {
		if errors.Is(err, io.EOF) {
			return Header{}, nil, io.EOF
		}
		return Header{}, nil, fmt.Errorf("wire: reading message header: %w", err)
	}
	h := parseHeader(head)
	switch {
	case h.Length < HeaderLen:
		return Header{}, nil, fmt.Errorf("wire: header declares %d bytes, less than the header itself: %w", h.Length, ErrMalformed)
	case h.Length > maxSize:
		return Header{}, nil, fmt.Errorf("wire: header declares %d bytes, above the limit of %d: %w", h.Length, maxSize, ErrMessageTooLarge)
	}

	frame := buf
	if cap(frame) < int(h.Length) {
		frame = make([]byte, h.Length)
	}
	frame = frame[:h.Length]
	copy(frame, head)
	if _, err := io.ReadFull(r, frame[HeaderLen:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return Header{}, nil, fmt.Errorf("wire: reading %s message %d: %w", h.OpCode, h.RequestID, err)
	}
	return h, frame, nil
}
