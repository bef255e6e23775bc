package wire

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Reply is an OP_REPLY, the answer to an OP_QUERY.
type Reply struct {
	Flags        int32
	CursorID     int64
	StartingFrom int32
	Documents    []bsoncore.Document
}

// minDocumentLen is the size of the empty document, the smallest there is.
const minDocumentLen = 5

// AppendReply appends r to dst as an OP_REPLY with the given header IDs.
func AppendReply(dst []byte, requestID, responseTo int32, r *Reply) []byte {
	start := len(dst)
	dst = appendHeader(dst, requestID, responseTo, OpReply)
	dst = bsoncore.AppendInt32(dst, r.Flags)
	dst = bsoncore.AppendInt64(dst, r.CursorID)
	dst = bsoncore.AppendInt32(dst, r.StartingFrom)
	dst = bsoncore.AppendInt32(dst, int32(len(r.Documents)))
	for _, doc := range r.Documents {
		dst = append(dst, doc...)
	}
	return finishFrame(dst, start)
}

// decodeReply decodes the body of an OP_REPLY, the bytes after the header.
func decodeReply(b []byte) (*Reply, error) {
	var r Reply
	var count int32
	var ok bool
	if r.Flags, b, ok = bsoncore.ReadInt32(b); !ok {
		return nil, fmt.Errorf("OP_REPLY flags cut off: %w", ErrMalformed)
	}
	if r.CursorID, b, ok = bsoncore.ReadInt64(b); !ok {
		return nil, fmt.Errorf("OP_REPLY cursorID cut off: %w", ErrMalformed)
	}
	if r.StartingFrom, b, ok = bsoncore.ReadInt32(b); !ok {
		return nil, fmt.Errorf("OP_REPLY startingFrom cut off: %w", ErrMalformed)
	}
	if count, b, ok = bsoncore.ReadInt32(b); !ok {
		return nil, fmt.Errorf("OP_REPLY numberReturned cut off: %w", ErrMalformed)
	}
	// A count the bytes cannot hold is reported as such, not as whichever
	// document happens to come up short.
	if count < 0 || int64(count) > int64(len(b)/minDocumentLen) {
		return nil, fmt.Errorf("OP_REPLY numberReturned %d does not fit the %d bytes left: %w", count, len(b), ErrMalformed)
	}
	for i := range count {
		doc, rest, err := readDocument(b)
		if err != nil {
			return nil, fmt.Errorf("OP_REPLY document %d: %w", i, err)
		}
		r.Documents = append(r.Documents, doc)
		b = rest
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("OP_REPLY has %d bytes after its %d documents: %w", len(b), count, ErrMalformed)
	}
	return &r, nil
}
