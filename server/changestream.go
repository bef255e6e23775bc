package server

// The $changeStream aggregate and its cursors (see package changestream).

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/changestream"
	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/cursor"
	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/oplog"
)

// defaultAwait is how long a getMore on a change stream waits for events
// when it gives no maxTimeMS, MongoDB's default for awaitData cursors.
const defaultAwait = time.Second

// isChangeStream reports whether the pipeline starts with $changeStream.
func isChangeStream(pipeline []bson.Raw) bool {
	if len(pipeline) == 0 {
		return false
	}
	el, err := bsoncore.Document(pipeline[0]).IndexErr(0)
	return err == nil && el.Key() == "$changeStream"
}

// changeStreamStages are the stages that may follow $changeStream: those
// that look at one event at a time.
var changeStreamStages = map[string]bool{
	"$match": true, "$project": true, "$addFields": true, "$set": true, "$unset": true,
	"$replaceRoot": true, "$replaceWith": true, "$redact": true,
}

// changeStream opens the stream an aggregate asks for; coll is "" for
// aggregate: 1.
func (s *Server) changeStream(ctx context.Context, req *Request, coll string, pipeline []bson.Raw, batchSize int, opts engine.AggregateOptions) (bson.Raw, error) {
	if !s.clustered() || s.eng.Oplog() == nil {
		return nil, mongoerr.New(mongoerr.Location40573, "The $changeStream stage is only supported on replica sets")
	}
	spec, err := changestream.ParseSpec(bson.Raw(pipeline[0]).Index(0).Value(), req.DB, coll)
	if err != nil {
		return nil, err
	}
	rest := make([]bson.Raw, 0, len(pipeline)-1)
	for _, st := range pipeline[1:] {
		name, _, err := engine.StageOf(st)
		if err != nil {
			return nil, err
		}
		// As mongod: parsing the pipeline refuses a stage it does not
		// know (40324, DocumentSource::parse) before the change stream
		// refuses one it does not allow (IllegalOperation,
		// Pipeline::validateCommon).
		if !changeStreamStages[name] {
			if !engine.KnownStage(name) {
				return nil, mongoerr.New(mongoerr.Code(40324), "Unrecognized pipeline stage name: '%s'", name)
			}
			return nil, mongoerr.New(mongoerr.IllegalOperation, "%s is not permitted in a $changeStream pipeline", name)
		}
		rest = append(rest, cloneRaw(st))
	}
	st, err := changestream.Open(spec, streamSource{s.eng})
	if err != nil {
		return nil, err
	}
	if len(rest) > 0 {
		db := req.DB
		// The stages after $changeStream run under the collation the
		// aggregate names in every batch, the getMores' too, whose
		// requests name none.
		var named bson.Raw
		if v, err := req.Body.LookupErr("collation"); err == nil && v.Type == bson.TypeEmbeddedDocument {
			named = cloneRaw(v.Document())
		}
		st.Post = func(ctx context.Context, docs []bson.Raw) ([]bson.Raw, error) {
			if named != nil {
				ctx = engine.WithCollation(ctx, named)
			}
			out, err := s.eng.AggregateDocs(ctx, db, docs, rest, opts)
			if err != nil {
				return nil, err
			}
			return out, checkTokensKept(docs, out)
		}
	}
	ns := req.DB + "." + coll
	if coll == "" {
		ns = req.DB + ".$cmd.aggregate"
	}
	// A getMore waiting for events is no work for the TTL reaper to
	// yield to; one that finds events is.
	st.Waiting = s.foreground.awaiting
	src := &streamCursor{st: st}
	var docs []bson.Raw
	if batchSize != 0 {
		if docs, err = src.NextBatch(ctx, batchSize, cursor.MaxBatchBytes); err != nil {
			return nil, err
		}
	}
	var id int64
	if !src.Exhausted() {
		if id, err = s.cursors.Add(req, src, ns, false); err != nil {
			return nil, err
		}
	}
	return cursor.AppendReplyFrom(&req.Request, "firstBatch", docs, id, ns, src)
}

// streamSource is the engine as a change stream reads it.
type streamSource struct{ e *engine.Engine }

func (s streamSource) ReadOplog(ctx context.Context, after oplog.Timestamp, fn func(oplog.Timestamp, bson.Raw) (bool, error)) (oplog.Timestamp, error) {
	return s.e.ReadOplog(ctx, after, fn)
}

func (s streamSource) OldestOplog() (oplog.Timestamp, error) { return s.e.OldestOplog(context.TODO()) }

func (s streamSource) Watch() (oplog.Timestamp, <-chan struct{}) { return s.e.Oplog().Watch() }

func (s streamSource) Start() (oplog.Timestamp, error) { return s.e.Oplog().Start(context.TODO()) }

func (s streamSource) FindByID(ctx context.Context, db, coll string, id bsoncore.Value) (bson.Raw, error) {
	return s.e.FindByID(ctx, db, coll, id)
}

func (s streamSource) PreImage(ts oplog.Timestamp) (bson.Raw, error) {
	return s.e.PreImage(context.TODO(), ts)
}

func (s streamSource) Clock() (time.Time, <-chan struct{}) {
	c := s.e.Clock()
	if m, ok := c.(*clock.Manual); ok {
		moved := m.Changed()
		return m.Now(), moved
	}
	return c.Now(), nil
}

func (s streamSource) Expiring(fromMs, toMs int64, watch func(db, coll string) bool) ([]changestream.Expired, error) {
	got, err := s.e.ExpiringIn(context.TODO(), fromMs, toMs, watch)
	if err != nil {
		return nil, err
	}
	out := make([]changestream.Expired, len(got))
	for i, x := range got {
		out[i] = changestream.Expired{DB: x.DB, Coll: x.Coll, ID: x.ID, Key: x.Key, At: x.At}
	}
	return out, nil
}

// streamCursor is a change stream as a tailable, awaitData cursor: the
// aggregate's first batch does not wait, getMores do.
type streamCursor struct {
	st      *changestream.Stream
	started bool
}

func (c *streamCursor) NextBatch(ctx context.Context, n int, maxBytes int) ([]bson.Raw, error) {
	await := c.started
	c.started = true
	if _, ok := ctx.Deadline(); await && !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultAwait)
		defer cancel()
	}
	return c.st.Next(ctx, n, maxBytes, await)
}

func (c *streamCursor) Exhausted() bool { return c.st.Done() }

// PostBatchResumeToken is the token the stream's replies carry
// (cursor.ResumeTokener).
func (c *streamCursor) PostBatchResumeToken() bson.Raw { return c.st.PostBatchResumeToken() }

// checkTokensKept refuses events whose _id, the resume token, the stages
// after $changeStream changed: the stream could not be resumed from them.
// Stages that only filter and reshape keep the events' order, so each
// output event's _id is that of a later input event.
func checkTokensKept(in, out []bson.Raw) error {
	i := 0
	for _, ev := range out {
		id := ev.Lookup("_id")
		for i < len(in) && !id.Equal(in[i].Lookup("_id")) {
			i++
		}
		if i == len(in) {
			return mongoerr.New(mongoerr.ChangeStreamFatalError, "Encountered an event whose _id field, which contains the resume token, was modified by the pipeline. Modifying the _id field of an event makes it impossible to resume the stream from that point. Only transformations that retain the unmodified _id field are allowed.")
		}
		i++
	}
	return nil
}
