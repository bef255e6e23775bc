package wire

import "errors"

// Callers tell these apart with errors.Is; the returned errors wrap them with
// the detail of what was wrong and where.
var (
	// ErrMessageTooLarge reports a declared message size above the limit,
	// detected before any buffer of that size is allocated.
	ErrMessageTooLarge = errors.New("message too large")

	// ErrMalformed reports bytes that do not follow the wire protocol's
	// layout: truncated fields, inconsistent lengths, unknown section kinds
	// or required flags, or a compressed payload that does not decompress.
	ErrMalformed = errors.New("malformed message")

	// ErrInvalidBSON reports a document that is not well-formed BSON. It
	// lets a server answer with an InvalidBSON error rather than drop the
	// connection.
	ErrInvalidBSON = errors.New("invalid BSON")

	// ErrChecksum reports an OP_MSG whose CRC-32C does not match its
	// contents.
	ErrChecksum = errors.New("checksum mismatch")

	// ErrUnsupportedOpCode reports a well-framed message whose operation this
	// package does not decode, such as the legacy OP_INSERT.
	ErrUnsupportedOpCode = errors.New("unsupported opcode")
)
