package command

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/wire"
)

// BeginReply starts a reply document in the connection's reply buffer, which
// is reused from one request to the next, so that building a reply allocates
// nothing once the buffer has grown. Append elements with bsoncore and finish
// with EndReply:
//
//	idx, dst := req.BeginReply()
//	dst = bsoncore.AppendInt32Element(dst, "n", n)
//	return req.EndReply(idx, dst)
func (req *Request) BeginReply() (int32, []byte) {
	// A buffer grown by a large reply is let go rather than kept by an idle
	// connection: many connections could otherwise each hold 16 MiB.
	if cap(req.reply) > MaxKeptReplyBytes {
		req.reply = nil
	}
	return bsoncore.AppendDocumentStart(req.reply[:0])
}

// MaxKeptReplyBytes is the largest reply buffer a connection keeps for the
// next reply.
const MaxKeptReplyBytes = 1 << 20

// maxReplyBytes is the largest reply the server sends: a message, with its
// header and section kind, must fit in wire.MaxMessageSize.
const maxReplyBytes = wire.MaxMessageSize - 64

// EndReply appends ok: 1 and closes the document begun at idx. The result is
// valid until the connection reads its next request.
func (req *Request) EndReply(idx int32, dst []byte) (bson.Raw, error) {
	dst = bsoncore.AppendDoubleElement(dst, "ok", 1)
	if len(dst) > maxReplyBytes {
		// Every reply's parts are bounded, so this is a last resort: refuse
		// rather than send what no client can read.
		return nil, mongoerr.New(mongoerr.BSONObjectTooLarge, "the reply would be %d bytes, more than the maximum message size of %d bytes", len(dst), wire.MaxMessageSize)
	}
	dst, err := bsoncore.AppendDocumentEnd(dst, idx)
	if err != nil {
		return nil, fmt.Errorf("server: finish reply: %w", err)
	}
	req.reply = dst
	return dst, nil
}

// OK returns the document {elems..., ok: 1}. It is the convenient form
// for replies off the hot path; values are marshalled with the bson package.
func OK(elems ...bson.E) (bson.Raw, error) {
	doc := make(bson.D, 0, len(elems)+1)
	doc = append(doc, elems...)
	doc = append(doc, bson.E{Key: "ok", Value: 1.0})
	raw, err := bson.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("server: marshal reply: %w", err)
	}
	return raw, nil
}

// AppendError appends {ok: 0, errmsg, code, codeName, extra...} to dst.
func AppendError(dst []byte, e *mongoerr.Error) []byte {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	dst = bsoncore.AppendDoubleElement(dst, "ok", 0)
	dst = bsoncore.AppendStringElement(dst, "errmsg", e.Msg)
	dst = bsoncore.AppendInt32Element(dst, "code", int32(e.Code))
	dst = bsoncore.AppendStringElement(dst, "codeName", e.Code.String())
	if len(e.Labels) > 0 {
		aidx, adst := bsoncore.AppendArrayElementStart(dst, "errorLabels")
		for i, l := range e.Labels {
			adst = bsoncore.AppendStringElement(adst, appendIndexKeyString(i), l)
		}
		dst, _ = bsoncore.AppendArrayEnd(adst, aidx)
	}
	if len(e.Extra) > 0 {
		// Extra holds ordinary Go values; marshal them as a document and
		// splice its elements in.
		if extra, err := bson.Marshal(e.Extra); err == nil {
			dst = append(dst, extra[4:len(extra)-1]...)
		}
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

func appendIndexKeyString(i int) string { return strconv.Itoa(i) }

// AsMongoError turns any error a handler returns into the error a client
// sees. Errors without a MongoDB code are internal errors; the caller logs
// them.
func AsMongoError(err error) (e *mongoerr.Error, internal bool) {
	if e, ok := mongoerr.As(err); ok {
		return e, false
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return mongoerr.New(mongoerr.MaxTimeMSExpired, "operation exceeded time limit"), false
	case errors.Is(err, context.Canceled):
		return mongoerr.New(mongoerr.InterruptedAtShutdown, "interrupted at shutdown"), false
	}
	return &mongoerr.Error{Code: mongoerr.InternalError, Msg: err.Error()}, true
}

// ErrorReply is the reply for e, built in the request's reply buffer.
func (req *Request) ErrorReply(e *mongoerr.Error) bson.Raw {
	req.reply = AppendError(req.reply[:0], e)
	return req.reply
}

// TrimReply lets go of a reply buffer grown past MaxKeptReplyBytes, so
// that an idle connection does not pin its memory.
func (req *Request) TrimReply() {
	if cap(req.reply) > MaxKeptReplyBytes {
		req.reply = nil
	}
}
