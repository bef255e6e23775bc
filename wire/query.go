package wire

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Query is an OP_QUERY. Current drivers send one only for the first hello of
// a connection, as a command on "admin.$cmd".
type Query struct {
	Flags              int32
	FullCollectionName string // "db.collection"
	NumberToSkip       int32
	NumberToReturn     int32
	Query              bsoncore.Document
	// ReturnFieldsSelector is nil when the message has none.
	ReturnFieldsSelector bsoncore.Document
}

// AppendQuery appends q to dst as an OP_QUERY with the given header IDs.
func AppendQuery(dst []byte, requestID, responseTo int32, q *Query) []byte {
	start := len(dst)
	dst = appendHeader(dst, requestID, responseTo, OpQuery)
	dst = bsoncore.AppendInt32(dst, q.Flags)
	dst = bsoncore.AppendKey(dst, q.FullCollectionName)
	dst = bsoncore.AppendInt32(dst, q.NumberToSkip)
	dst = bsoncore.AppendInt32(dst, q.NumberToReturn)
	dst = append(dst, q.Query...)
	dst = append(dst, q.ReturnFieldsSelector...)
	return finishFrame(dst, start)
}

// decodeQuery decodes the body of an OP_QUERY, the bytes after the header.
func decodeQuery(b []byte) (*Query, error) {
	var q Query
	var ok bool
	if q.Flags, b, ok = bsoncore.ReadInt32(b); !ok {
		return nil, fmt.Errorf("OP_QUERY flags cut off: %w", ErrMalformed)
	}
	if q.FullCollectionName, b, ok = bsoncore.ReadKey(b); !ok {
		return nil, fmt.Errorf("OP_QUERY collection name not terminated: %w", ErrMalformed)
	}
	if q.NumberToSkip, b, ok = bsoncore.ReadInt32(b); !ok {
		return nil, fmt.Errorf("OP_QUERY numberToSkip cut off: %w", ErrMalformed)
	}
	if q.NumberToReturn, b, ok = bsoncore.ReadInt32(b); !ok {
		return nil, fmt.Errorf("OP_QUERY numberToReturn cut off: %w", ErrMalformed)
	}
	var err error
	if q.Query, b, err = readDocument(b); err != nil {
		return nil, fmt.Errorf("OP_QUERY query: %w", err)
	}
	if len(b) == 0 {
		return &q, nil
	}
	if q.ReturnFieldsSelector, b, err = readDocument(b); err != nil {
		return nil, fmt.Errorf("OP_QUERY returnFieldsSelector: %w", err)
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("OP_QUERY has %d bytes after its documents: %w", len(b), ErrMalformed)
	}
	return &q, nil
}
