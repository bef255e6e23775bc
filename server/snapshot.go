package server

// Snapshot reads outside transactions: find, aggregate and distinct with
// readConcern {level: "snapshot"} (MongoDB 5.0+; the drivers' snapshot
// sessions) read one engine snapshot at a cluster time, given by
// atClusterTime or the latest, and say which in the reply's atClusterTime
// (jstests/replsets/non_transaction_snapshot_reads.js: a cursor's
// atClusterTime, a distinct's at the top level; none for other reads). A
// cursor's getMores read the same snapshot, which it holds until it is
// exhausted or killed.

import (
	"context"
	"io"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/concern"
	"github.com/lethedb/lethe/cursor"
	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/oplog"
)

// snapshotRead is the snapshot a command reads, and whether a cursor took
// it (then the cursor releases it).
type snapshotRead struct {
	t     *engine.Transaction
	at    oplog.Timestamp
	taken bool
}

// beginSnapshotRead opens the snapshot of a command that reads at one,
// outside a transaction; ctx then carries it.
func (s *Server) beginSnapshotRead(ctx context.Context, req *Request) (context.Context, error) {
	at, ok := concern.SnapshotRead(req.Body)
	if !ok || engine.TransactionOf(ctx) != nil {
		return ctx, nil
	}
	t, readAt, err := s.eng.BeginSnapshotRead(ctx, oplog.Timestamp{T: at.T, I: at.I})
	if err != nil {
		return ctx, err
	}
	req.snapshot = &snapshotRead{t: t, at: readAt}
	return engine.WithTransaction(ctx, t), nil
}

// endSnapshotRead adds atClusterTime to the reply of a snapshot read and
// releases its snapshot unless a cursor took it.
func (s *Server) endSnapshotRead(req *Request, reply bson.Raw, err error) bson.Raw {
	sr := req.snapshot
	if sr == nil {
		return reply
	}
	req.snapshot = nil
	if !sr.taken {
		sr.t.Abort()
	}
	if err != nil || reply == nil {
		return reply
	}
	return withAtClusterTime(reply, bson.Timestamp{T: sr.at.T, I: sr.at.I})
}

// snapshotCursor makes a cursor of a snapshot read go on reading its
// snapshot; other sources pass.
func snapshotCursor(req *Request, src cursor.Source) cursor.Source {
	if req.snapshot == nil {
		return src
	}
	req.snapshot.taken = true
	return &snapshotSource{Source: src, t: req.snapshot.t}
}

// snapshotSource is a cursor's source that reads a snapshot, released
// when the cursor closes.
type snapshotSource struct {
	cursor.Source
	t *engine.Transaction
}

func (s *snapshotSource) NextBatch(ctx context.Context, n int, maxBytes int) ([]bson.Raw, error) {
	return s.Source.NextBatch(engine.WithTransaction(ctx, s.t), n, maxBytes)
}

// AppendBatch appends the next batch straight into a reply, reading the
// snapshot (cursor.Appender).
func (s *snapshotSource) AppendBatch(ctx context.Context, dst []byte, n int, maxBytes int) ([]byte, error) {
	return cursor.AppendBatch(engine.WithTransaction(ctx, s.t), s.Source, dst, n, maxBytes)
}

// HeldBytes reports what the source holds, for the cursor limits.
func (s *snapshotSource) HeldBytes() int64 {
	if m, ok := s.Source.(interface{ HeldBytes() int64 }); ok {
		return m.HeldBytes()
	}
	return 0
}

func (s *snapshotSource) Close() error {
	s.t.Abort()
	if c, ok := s.Source.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// withAtClusterTime adds atClusterTime to a reply: inside its cursor
// document if it has one, else at the top level (distinct).
func withAtClusterTime(reply bson.Raw, at bson.Timestamp) bson.Raw {
	idx, dst := bsoncore.AppendDocumentStart(make([]byte, 0, len(reply)+32))
	elems, _ := reply.Elements()
	inCursor := false
	for _, e := range elems {
		if e.Key() == "cursor" {
			if doc, ok := e.Value().DocumentOK(); ok {
				cidx, d := bsoncore.AppendDocumentElementStart(dst, "cursor")
				celems, _ := doc.Elements()
				for _, ce := range celems {
					d = append(d, ce...)
				}
				d = bsoncore.AppendTimestampElement(d, "atClusterTime", at.T, at.I)
				dst, _ = bsoncore.AppendDocumentEnd(d, cidx)
				inCursor = true
				continue
			}
		}
		if e.Key() == "ok" && !inCursor {
			dst = bsoncore.AppendTimestampElement(dst, "atClusterTime", at.T, at.I)
		}
		dst = append(dst, e...)
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}
