package server

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"strconv"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/mongoerr"
)

// Cursors idle longer than this are closed, as MongoDB's
// cursorTimeoutMillis default does.
const cursorIdleTimeout = 10 * time.Minute

// maxBatchBytes keeps a batch, with the reply around it, under the 16 MiB
// BSON limit.
const maxBatchBytes = 16*1024*1024 - 64*1024

// batchSource is what a cursor reads from: an engine cursor or results
// already in memory (aggregate, listCollections).
type batchSource interface {
	NextBatch(ctx context.Context, n int, maxBytes int) ([]bson.Raw, error)
	Exhausted() bool
}

// sliceSource serves documents already computed.
type sliceSource struct{ docs []bson.Raw }

func (s *sliceSource) NextBatch(_ context.Context, n int, maxBytes int) ([]bson.Raw, error) {
	size, i := 0, 0
	// Like MongoDB's, a batch passes maxBytes only with its first document.
	for i < len(s.docs) && (n <= 0 || i < n) && (i == 0 || size+len(s.docs[i]) <= maxBytes) {
		size += len(s.docs[i])
		i++
	}
	out := s.docs[:i]
	s.docs = s.docs[i:]
	return out, nil
}

func (s *sliceSource) Exhausted() bool { return len(s.docs) == 0 }

type openCursor struct {
	mu       sync.Mutex // one getMore at a time
	src      batchSource
	ns       string
	conn     int64 // the connection that opened it
	lastUsed time.Time
}

// cursorTable holds open cursors by id. Idle cursors are swept lazily,
// whenever cursors are used, so no goroutine is needed.
type cursorTable struct {
	mu        sync.Mutex
	open      map[int64]*openCursor
	byConn    map[int64]int // open cursors by the connection that opened them
	lastSweep time.Time
}

func (t *cursorTable) add(req *Request, src batchSource, ns string) (int64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.open == nil {
		t.open = make(map[int64]*openCursor)
		t.byConn = make(map[int64]int)
	}
	now := time.Now()
	t.sweepLocked(now)
	for {
		var b [8]byte
		_, _ = rand.Read(b[:])
		id := int64(binary.BigEndian.Uint64(b[:]) &^ (1 << 63))
		if id != 0 && t.open[id] == nil {
			t.open[id] = &openCursor{src: src, ns: ns, conn: req.Conn.id, lastUsed: now}
			t.byConn[req.Conn.id]++
			return id, nil
		}
	}
}

// openBy is the number of open cursors the connection opened.
func (t *cursorTable) openBy(conn int64) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byConn[conn]
}

// deleteLocked forgets an open cursor.
func (t *cursorTable) deleteLocked(id int64, c *openCursor) {
	delete(t.open, id)
	if t.byConn[c.conn]--; t.byConn[c.conn] <= 0 {
		delete(t.byConn, c.conn)
	}
}

func (t *cursorTable) get(id int64) *openCursor {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	t.sweepLocked(now)
	c := t.open[id]
	if c != nil {
		c.lastUsed = now
	}
	return c
}

func (t *cursorTable) remove(id int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.open[id]
	if ok {
		t.deleteLocked(id, c)
	}
	return ok
}

func (t *cursorTable) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.open)
}

func (t *cursorTable) sweepLocked(now time.Time) {
	if now.Sub(t.lastSweep) < time.Minute {
		return
	}
	t.lastSweep = now
	for id, c := range t.open {
		if now.Sub(c.lastUsed) > cursorIdleTimeout {
			t.deleteLocked(id, c)
		}
	}
}

// cursorOption reads a command's cursor: {batchSize: n} option.
func cursorOption(cmd string, v bson.RawValue, batchSize *int) error {
	c, err := argDoc(cmd, "cursor", v)
	if err != nil {
		return err
	}
	bs, err := c.LookupErr("batchSize")
	if err != nil {
		return nil
	}
	n, err := argInt64(cmd, "cursor.batchSize", bs)
	if err != nil {
		return err
	}
	if n < 0 {
		return mongoerr.New(mongoerr.BadValue, "BatchSize value must be non-negative, but received: %d", n)
	}
	*batchSize = int(n)
	return nil
}

// cursorReply sends the first batch of src and registers the cursor if more
// remains: {cursor: {firstBatch, id, ns}, ok: 1}.
func (s *Server) cursorReply(ctx context.Context, req *Request, src batchSource, ns string, batchSize int, single bool) (bson.Raw, error) {
	docs, err := src.NextBatch(ctx, batchSize, maxBatchBytes)
	if err != nil {
		return nil, err
	}
	var id int64
	if !single && !src.Exhausted() {
		if id, err = s.cursors.add(req, src, ns); err != nil {
			return nil, err
		}
	}
	return appendCursorReply(req, "firstBatch", docs, id, ns)
}

func appendCursorReply(req *Request, batchName string, docs []bson.Raw, id int64, ns string) (bson.Raw, error) {
	idx, dst := req.beginReply()
	cidx, dst := bsoncore.AppendDocumentElementStart(dst, "cursor")
	aidx, dst := bsoncore.AppendArrayElementStart(dst, batchName)
	var key []byte
	for i, d := range docs {
		key = appendIndexKey(key[:0], i)
		dst = bsoncore.AppendDocumentElement(dst, string(key), d)
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
	dst = bsoncore.AppendInt64Element(dst, "id", id)
	dst = bsoncore.AppendStringElement(dst, "ns", ns)
	dst, _ = bsoncore.AppendDocumentEnd(dst, cidx)
	return req.endReply(idx, dst)
}

func appendIndexKey(dst []byte, i int) []byte { return strconv.AppendInt(dst, int64(i), 10) }

func (s *Server) cursorCommands() []command {
	return []command{
		{name: "getMore", handle: s.getMore},
		{name: "killCursors", handle: s.killCursors},
	}
}

func (s *Server) getMore(ctx context.Context, req *Request) (bson.Raw, error) {
	id, err := argInt64("getMore", "getMore", firstValue(req.Body))
	if err != nil {
		return nil, err
	}
	var coll string
	batchSize := 0
	for key, v := range cmdArgs(req.Body) {
		switch string(key) {
		case "collection":
			coll, err = argString("getMore", "collection", v)
		case "batchSize":
			var n int64
			n, err = argInt64("getMore", "batchSize", v)
			if n < 0 {
				err = mongoerr.New(mongoerr.BadValue, "BatchSize value must be non-negative, but received: %d", n)
			}
			batchSize = int(n)
		case "maxTimeMS", "term", "lastKnownCommittedOpTime":
		default:
			err = unknownField("getMore", key)
		}
		if err != nil {
			return nil, err
		}
	}
	if coll == "" {
		return nil, missingField("getMore", "collection")
	}
	c := s.cursors.get(id)
	if c == nil {
		return nil, mongoerr.New(mongoerr.CursorNotFound, "cursor id %d not found", id)
	}
	if c.ns != req.DB+"."+coll && !(coll == "$cmd.listCollections" && c.ns == req.DB+".$cmd.listCollections") {
		return nil, mongoerr.New(mongoerr.Unauthorized, "Requested getMore on namespace '%s.%s', but cursor belongs to a different namespace %s", req.DB, coll, c.ns)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	docs, err := c.src.NextBatch(ctx, batchSize, maxBatchBytes)
	if err != nil {
		s.cursors.remove(id)
		return nil, err
	}
	if c.src.Exhausted() {
		s.cursors.remove(id)
		id = 0
	}
	return appendCursorReply(req, "nextBatch", docs, id, c.ns)
}

func (s *Server) killCursors(ctx context.Context, req *Request) (bson.Raw, error) {
	var ids bson.RawArray
	var err error
	for key, v := range cmdArgs(req.Body) {
		switch string(key) {
		case "cursors":
			ids, err = argArray("killCursors", "cursors", v)
		default:
			err = unknownField("killCursors", key)
		}
		if err != nil {
			return nil, err
		}
	}
	var killed, notFound bson.A
	vals, _ := ids.Values()
	for _, v := range vals {
		id, ok := v.AsInt64OK()
		if !ok {
			return nil, wrongType("killCursors", "cursors", v.Type, "long")
		}
		if s.cursors.remove(id) {
			killed = append(killed, id)
		} else {
			notFound = append(notFound, id)
		}
	}
	return okReply(
		bson.E{Key: "cursorsKilled", Value: nonNil(killed)},
		bson.E{Key: "cursorsNotFound", Value: nonNil(notFound)},
		bson.E{Key: "cursorsAlive", Value: bson.A{}},
		bson.E{Key: "cursorsUnknown", Value: bson.A{}},
	)
}

func nonNil(a bson.A) bson.A {
	if a == nil {
		return bson.A{}
	}
	return a
}

// firstValue is the value of a command's first field (the command name's).
func firstValue(body bson.Raw) bson.RawValue {
	for _, v := range fields(body) {
		return v
	}
	return bson.RawValue{}
}
