package wire

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// MsgFlags are the flag bits of an OP_MSG.
type MsgFlags uint32

// The OP_MSG flags this package knows.
const (
	// FlagChecksumPresent marks a message that ends with a CRC-32C of
	// everything before it, header included.
	FlagChecksumPresent MsgFlags = 1 << 0
	// FlagMoreToCome marks a message the sender expects no reply to: a
	// request sent unacknowledged, or one reply of a stream.
	FlagMoreToCome MsgFlags = 1 << 1
	// FlagExhaustAllowed marks a request whose sender accepts a stream of
	// replies.
	FlagExhaustAllowed MsgFlags = 1 << 16
)

// requiredFlags are the bits that a receiver must understand: a message that
// sets one unknown to it must be rejected. Unknown bits above them are
// optional and ignored.
const requiredFlags MsgFlags = 0xffff

// knownFlags are the bits this package understands.
const knownFlags = FlagChecksumPresent | FlagMoreToCome | FlagExhaustAllowed

// The kinds of OP_MSG section.
const (
	sectionBody     = 0
	sectionSequence = 1
)

// castagnoli is the CRC-32C table OP_MSG checksums use.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Msg is an OP_MSG: a command or its reply.
type Msg struct {
	Flags MsgFlags
	// Body is the single kind-0 section.
	Body bsoncore.Document
	// Sequences are the kind-1 sections, in the order they appeared.
	Sequences []Sequence
}

// Sequence is a kind-1 OP_MSG section: documents that stand for an array
// field of the body, such as the documents of an insert, sent outside it so
// that together they may exceed the size limit of a single document.
type Sequence struct {
	Identifier string // the body field the documents belong to
	Documents  []bsoncore.Document
}

// AppendMsg appends m to dst as an OP_MSG with the given header IDs, writing
// the body section before the sequences. It appends the CRC-32C when m.Flags
// has FlagChecksumPresent.
func AppendMsg(dst []byte, requestID, responseTo int32, m *Msg) []byte {
	start := len(dst)
	dst = appendMsgStart(dst, requestID, responseTo, m.Flags)
	dst = append(dst, m.Body...)
	for _, s := range m.Sequences {
		dst = append(dst, sectionSequence)
		size := len(dst)
		dst = binary.LittleEndian.AppendUint32(dst, 0)
		dst = bsoncore.AppendKey(dst, s.Identifier)
		for _, doc := range s.Documents {
			dst = append(dst, doc...)
		}
		binary.LittleEndian.PutUint32(dst[size:], uint32(len(dst)-size))
	}
	if m.Flags&FlagChecksumPresent == 0 {
		return finishFrame(dst, start)
	}
	// The checksum covers the header, so the length must already count it.
	dst = finishFrame(binary.LittleEndian.AppendUint32(dst, 0), start)
	sum := crc32.Checksum(dst[start:len(dst)-4], castagnoli)
	binary.LittleEndian.PutUint32(dst[len(dst)-4:], sum)
	return dst
}

// AppendMsgPrefix appends what comes before the body in an OP_MSG of one
// body section of bodyLen bytes, no sequences and no checksum: the header,
// the flags and the section's kind. Sent with the body after it, it is the
// message AppendMsg builds, and the body need not be copied behind it.
func AppendMsgPrefix(dst []byte, requestID, responseTo int32, flags MsgFlags, bodyLen int) []byte {
	start := len(dst)
	dst = appendMsgStart(dst, requestID, responseTo, flags)
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(dst)-start+bodyLen))
	return dst
}

// appendMsgStart appends an OP_MSG's header, its length left for the
// caller, then its flags and the kind of the body section that follows.
func appendMsgStart(dst []byte, requestID, responseTo int32, flags MsgFlags) []byte {
	dst = appendHeader(dst, requestID, responseTo, OpMsg)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(flags))
	return append(dst, sectionBody)
}

// decodeMsg decodes the OP_MSG in frame, which has passed frameHeader,
// into m, reusing its sequences' slices.
func decodeMsg(m *Msg, frame []byte) error {
	b := frame[HeaderLen:]
	if len(b) < 4 {
		return fmt.Errorf("OP_MSG flags cut off: %w", ErrMalformed)
	}
	seqs := m.Sequences[:0]
	*m = Msg{Flags: MsgFlags(binary.LittleEndian.Uint32(b))}
	if unknown := m.Flags & requiredFlags &^ knownFlags; unknown != 0 {
		return fmt.Errorf("OP_MSG sets unknown required flags %#x: %w", uint32(unknown), ErrMalformed)
	}
	sections := b[4:]
	if m.Flags&FlagChecksumPresent != 0 {
		if len(sections) < 4 {
			return fmt.Errorf("OP_MSG checksum cut off: %w", ErrMalformed)
		}
		end := len(frame) - 4
		sent := binary.LittleEndian.Uint32(frame[end:])
		if sum := crc32.Checksum(frame[:end], castagnoli); sum != sent {
			return fmt.Errorf("OP_MSG carries CRC-32C %#08x but its contents hash to %#08x: %w", sent, sum, ErrChecksum)
		}
		sections = sections[:len(sections)-4]
	}

	haveBody := false
	for i := 0; len(sections) > 0; i++ {
		kind := sections[0]
		sections = sections[1:]
		switch kind {
		case sectionBody:
			if haveBody {
				return fmt.Errorf("OP_MSG section %d is a second body: %w", i, ErrMalformed)
			}
			body, rest, err := readDocument(sections)
			if err != nil {
				return fmt.Errorf("OP_MSG body: %w", err)
			}
			m.Body, sections, haveBody = body, rest, true
		case sectionSequence:
			// The slot's last sequence lends its documents' slice and
			// its identifier when the same.
			var last Sequence
			if len(seqs) < cap(seqs) {
				last = seqs[:len(seqs)+1][len(seqs)]
			}
			seq, rest, err := readSequence(sections, last)
			if err != nil {
				return fmt.Errorf("OP_MSG section %d: %w", i, err)
			}
			seqs = append(seqs, seq)
			sections = rest
		default:
			return fmt.Errorf("OP_MSG section %d has unknown kind %d: %w", i, kind, ErrMalformed)
		}
	}
	if !haveBody {
		return fmt.Errorf("OP_MSG has no body section: %w", ErrMalformed)
	}
	m.Sequences = seqs // nil for a new Msg without sequences, as before
	return nil
}

// readSequence reads the payload of a kind-1 section from the start of b and
// returns it and the bytes after it. It appends the documents to
// last.Documents[:0].
func readSequence(b []byte, last Sequence) (Sequence, []byte, error) {
	if len(b) < 4 {
		return Sequence{}, nil, fmt.Errorf("document sequence size cut off: %w", ErrMalformed)
	}
	// The size counts itself and the identifier's null byte at least.
	size := int32(binary.LittleEndian.Uint32(b))
	if size < 5 || int64(size) > int64(len(b)) {
		return Sequence{}, nil, fmt.Errorf("document sequence size %d does not fit the %d bytes left: %w", size, len(b), ErrMalformed)
	}
	key, docs, ok := bsoncore.ReadKeyBytes(b[4:size])
	if !ok {
		return Sequence{}, nil, fmt.Errorf("document sequence identifier not terminated: %w", ErrMalformed)
	}
	seq := Sequence{Identifier: identifier(key, last.Identifier), Documents: last.Documents[:0]}
	for len(docs) > 0 {
		doc, rest, err := readDocument(docs)
		if err != nil {
			return Sequence{}, nil, fmt.Errorf("document sequence %q document %d: %w", seq.Identifier, len(seq.Documents), err)
		}
		seq.Documents = append(seq.Documents, doc)
		docs = rest
	}
	return seq, b[size:], nil
}

// identifier is a sequence's identifier as a string, allocated only when it
// is none of the write commands' and not last.
func identifier(key []byte, last string) string {
	switch string(key) {
	case "documents":
		return "documents"
	case "updates":
		return "updates"
	case "deletes":
		return "deletes"
	case last:
		return last
	}
	return string(key)
}
