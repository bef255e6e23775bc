package server

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/mongoerr"
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

// memoryHolder is a batchSource that holds results in memory, counted
// against CursorLimits.Memory while its cursor is open.
type memoryHolder interface {
	HeldBytes() int64
}

// sliceSource serves documents already computed.
type sliceSource struct {
	docs []bson.Raw
	held int64 // bytes of docs; 0 until counted
	// source is the collection the documents stream from in MongoDB,
	// whose drop or rename kills the cursor; zero for none.
	source engine.Incarnation
}

func (s *sliceSource) NextBatch(_ context.Context, n int, maxBytes int) ([]bson.Raw, error) {
	if err := s.source.Check(); err != nil {
		return nil, err
	}
	size, i := 0, 0
	// Like MongoDB's, a batch passes maxBytes only with its first document.
	for i < len(s.docs) && (n <= 0 || i < n) && (i == 0 || size+len(s.docs[i]) <= maxBytes) {
		size += len(s.docs[i])
		i++
	}
	// The batch gets its own slice so that the documents handed out are no
	// longer reachable from the cursor once the reply is sent.
	out := slices.Clone(s.docs[:i])
	clear(s.docs[:i])
	s.docs = s.docs[i:]
	s.held = max(s.held-int64(size), 0)
	return out, nil
}

func (s *sliceSource) Exhausted() bool { return len(s.docs) == 0 }

func (s *sliceSource) HeldBytes() int64 {
	if s.held == 0 {
		for _, d := range s.docs {
			s.held += int64(len(d))
		}
	}
	return s.held
}

// CursorLimits bound the cursors clients may keep open, so that no client can
// exhaust the server's memory with them, nor take all of it from the
// others. MongoDB has no such limits; the defaults are far above what
// applications keep open. A client is a user, or an address without
// access control (see principal.go): open cursors outlive the connections
// that opened them, so only a bound per client keeps one client that
// reconnects from taking them all.
type CursorLimits struct {
	Total   int   // open cursors in all; default DefaultMaxCursors
	PerConn int   // open cursors one connection opened; default DefaultMaxCursorsPerConn
	Memory  int64 // bytes of results open cursors hold in memory; default DefaultMaxCursorMemory
	// PerClient and MemoryPerClient bound what one client's open cursors
	// count and hold; by default a quarter of Total and half of Memory
	// (DefaultMaxCursorsPerClient and DefaultMaxCursorMemoryPerClient),
	// or those when the server's are unbounded.
	PerClient       int
	MemoryPerClient int64
}

// Defaults of CursorLimits.
const (
	DefaultMaxCursors        = 10_000
	DefaultMaxCursorsPerConn = 1_000
	// DefaultMaxCursorMemory is MongoDB's memory limit of a blocking
	// aggregation stage, applied to all the results cursors keep.
	DefaultMaxCursorMemory = 100 << 20
	// DefaultMaxCursorsPerClient leaves three quarters of the cursors to
	// the other clients when one leaves as many open as it may.
	DefaultMaxCursorsPerClient = DefaultMaxCursors / 4
	// DefaultMaxCursorMemoryPerClient is half the memory, so that one
	// client can still keep a large aggregation's results while another
	// keeps as much.
	DefaultMaxCursorMemoryPerClient = DefaultMaxCursorMemory / 2
)

func (l *CursorLimits) setDefaults() {
	if l.Total == 0 {
		l.Total = DefaultMaxCursors
	}
	if l.PerConn == 0 {
		l.PerConn = DefaultMaxCursorsPerConn
	}
	if l.Memory == 0 {
		l.Memory = DefaultMaxCursorMemory
	}
	// A client's shares follow the server's bounds, so that lowering
	// those alone still leaves room for the other clients.
	if l.PerClient == 0 {
		l.PerClient = DefaultMaxCursorsPerClient
		if l.Total > 0 {
			l.PerClient = max(l.Total/4, 1)
		}
	}
	if l.MemoryPerClient == 0 {
		l.MemoryPerClient = DefaultMaxCursorMemoryPerClient
		if l.Memory > 0 {
			l.MemoryPerClient = max(l.Memory/2, 1)
		}
	}
}

// clientCursors is what one client's open cursors count and hold.
type clientCursors struct {
	open int
	held int64
}

type openCursor struct {
	mu   sync.Mutex // one getMore at a time
	src  batchSource
	ns   string
	conn int64  // the connection that opened it
	lsid string // the session, packed (packKey); "" outside a session
	// user is the authenticated user that opened it (Conn.userKey): with
	// access control, only that user may go on with it or kill it.
	user string
	// client is whom it is charged to (Conn.principal).
	client   string
	held     int64 // bytes of results it holds, as last counted
	lastUsed time.Time
	// noTimeout exempts the cursor from the idle sweep (find's
	// noCursorTimeout). Such a cursor closes with its session, as in
	// MongoDB, or, opened outside any session, with its connection.
	noTimeout bool
}

// cursorTable holds open cursors by id. Idle cursors are swept lazily,
// whenever cursors are used, so no goroutine is needed.
type cursorTable struct {
	limits    CursorLimits
	mu        sync.Mutex
	open      map[int64]*openCursor
	byConn    map[int64]int // open cursors by the connection that opened them
	byClient  map[string]*clientCursors
	held      int64 // sum of the open cursors' held bytes
	lastSweep time.Time
}

// add registers a cursor over src opened by req, or refuses it with
// ExceededMemoryLimit when it would pass a limit. A noTimeout cursor
// counts against the limits like any other.
func (t *cursorTable) add(req *Request, src batchSource, ns string, noTimeout bool) (int64, error) {
	var held int64
	if m, ok := src.(memoryHolder); ok {
		held = m.HeldBytes()
	}
	conn, client := req.Conn.id, req.Conn.principal()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.open == nil {
		t.open = make(map[int64]*openCursor)
		t.byConn = make(map[int64]int)
		t.byClient = make(map[string]*clientCursors)
	}
	now := time.Now()
	t.sweepLocked(now)
	mine := t.byClient[client]
	if mine == nil {
		mine = &clientCursors{}
	}
	// The client's own limits come first, so that a client at them learns
	// so even when the server is full.
	switch lim := &t.limits; {
	case lim.PerClient > 0 && mine.open >= lim.PerClient:
		return 0, mongoerr.New(mongoerr.ExceededMemoryLimit,
			"cannot open another cursor: %s has %d open, the most one client may (--max-cursors-per-client); exhaust or kill cursors to free them", client, mine.open)
	case lim.MemoryPerClient > 0 && held > 0 && mine.held+held > lim.MemoryPerClient:
		return 0, mongoerr.New(mongoerr.ExceededMemoryLimit,
			"cannot open a cursor over %d bytes of results: the open cursors of %s hold %d bytes, and one client may hold %d (--max-cursor-memory-per-client-mib); exhaust or kill cursors, or ask for fewer results",
			held, client, mine.held, lim.MemoryPerClient)
	case lim.Total > 0 && len(t.open) >= lim.Total:
		return 0, mongoerr.New(mongoerr.ExceededMemoryLimit,
			"cannot open another cursor: the server has %d open, its limit (--max-cursors); exhaust or kill cursors to free them", len(t.open))
	case lim.PerConn > 0 && t.byConn[conn] >= lim.PerConn:
		return 0, mongoerr.New(mongoerr.ExceededMemoryLimit,
			"cannot open another cursor: this connection has %d open, its limit (--max-cursors-per-conn); exhaust or kill cursors to free them", t.byConn[conn])
	case lim.Memory > 0 && held > 0 && t.held+held > lim.Memory:
		return 0, mongoerr.New(mongoerr.ExceededMemoryLimit,
			"cannot open a cursor over %d bytes of results: open cursors hold %d bytes, and the limit (--max-cursor-memory) is %d bytes; exhaust or kill cursors, or ask for fewer results",
			held, t.held, lim.Memory)
	}
	for {
		var b [8]byte
		_, _ = rand.Read(b[:])
		id := int64(binary.BigEndian.Uint64(b[:]) &^ (1 << 63))
		if id != 0 && t.open[id] == nil {
			t.open[id] = &openCursor{src: src, ns: ns, conn: conn, lsid: req.lsid, user: req.Conn.userKey(), client: client,
				held: held, lastUsed: now, noTimeout: noTimeout}
			t.byConn[conn]++
			t.byClient[client] = mine
			mine.open++
			mine.held += held
			t.held += held
			return id, nil
		}
	}
}

// recount updates what cursor id holds after a batch.
func (t *cursorTable) recount(id int64, c *openCursor) {
	m, ok := c.src.(memoryHolder)
	if !ok {
		return
	}
	held := m.HeldBytes()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.open[id] == c { // not killed meanwhile
		t.held += held - c.held
		t.byClient[c.client].held += held - c.held
		c.held = held
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
	t.held -= c.held
	mine := t.byClient[c.client]
	if mine.open--; mine.open <= 0 {
		delete(t.byClient, c.client)
	} else {
		mine.held -= c.held
	}
	c.held = 0
	if t.byConn[c.conn]--; t.byConn[c.conn] <= 0 {
		delete(t.byConn, c.conn)
	}
	// A getMore may be reading the cursor: it is closed once it is done.
	if c.mu.TryLock() {
		closeSource(c.src)
		c.mu.Unlock()
	} else {
		go func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			closeSource(c.src)
		}()
	}
}

// closeSource releases what src holds beyond memory, such as the
// temporary files of a sort that spilled to disk.
func closeSource(src batchSource) {
	if c, ok := src.(io.Closer); ok {
		_ = c.Close()
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

// usage is the number of open cursors and the bytes of results they hold.
func (t *cursorTable) usage() (open int, held int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.open), t.held
}

func (t *cursorTable) sweepLocked(now time.Time) {
	if now.Sub(t.lastSweep) < time.Minute {
		return
	}
	t.lastSweep = now
	for id, c := range t.open {
		if !c.noTimeout && now.Sub(c.lastUsed) > cursorIdleTimeout {
			t.deleteLocked(id, c)
		}
	}
}

// connClosed closes the noTimeout cursors connection conn opened outside
// any session, which no idle sweep or session end would. Its other cursors
// stay: another connection may go on reading them until they time out or
// their session ends, as in MongoDB.
func (t *cursorTable) connClosed(conn int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byConn[conn] == 0 {
		return
	}
	for id, c := range t.open {
		if c.noTimeout && c.conn == conn && c.lsid == "" {
			t.deleteLocked(id, c)
		}
	}
}

// killSessions closes the cursors opened in the sessions match accepts (by
// their id bytes) and returns how many it closed. A getMore then finds no
// cursor (CursorNotFound), as in MongoDB.
func (t *cursorTable) killSessions(match func(lsid string) bool) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for id, c := range t.open {
		if c.lsid != "" && match(c.lsid) {
			t.deleteLocked(id, c)
			n++
		}
	}
	return n
}

// cursorOption reads a command's cursor: {batchSize: n} option.
func cursorOption(cmd string, v bson.RawValue, batchSize *int) error {
	c, err := command.Doc(cmd, "cursor", v)
	if err != nil {
		return err
	}
	// The cursor document is a strict IDL struct (SimpleCursorOptions in
	// src/mongo/db/query/cursor_response.idl): batchSize is its only field.
	// aggregate parses it on its own, so its errors name it "cursor"
	// (parseAggregateCursorFromBSON in aggregation_request_helper.cpp).
	context := cmd + ".cursor"
	if cmd == "aggregate" {
		context = "cursor"
	}
	for key := range command.Fields(c) {
		if string(key) != "batchSize" {
			return command.UnknownField(context, key)
		}
	}
	bs, err := c.LookupErr("batchSize")
	if err != nil {
		return nil
	}
	n, err := command.Int64(cmd, "cursor.batchSize", bs)
	if err != nil {
		return err
	}
	if n < 0 {
		return mongoerr.New(mongoerr.BadValue, "BatchSize value must be non-negative, but received: %d", n)
	}
	*batchSize = int(n)
	return nil
}

// cursorOptions are how a command asked for its cursor.
type cursorOptions struct {
	single    bool // singleBatch: no cursor stays open
	noTimeout bool // noCursorTimeout: exempt from the idle sweep
}

// cursorReply sends the first batch of src and registers the cursor if more
// remains: {cursor: {firstBatch, id, ns}, ok: 1}.
func (s *Server) cursorReply(ctx context.Context, req *Request, src batchSource, ns string, batchSize int, opts cursorOptions) (bson.Raw, error) {
	docs, err := src.NextBatch(ctx, batchSize, maxBatchBytes)
	if err != nil {
		closeSource(src)
		return nil, err
	}
	var id int64
	if opts.single || src.Exhausted() {
		closeSource(src)
	} else if id, err = s.cursors.add(req, src, ns, opts.noTimeout); err != nil {
		closeSource(src)
		return nil, err
	}
	return appendCursorReply(req, "firstBatch", docs, id, ns)
}

func appendCursorReply(req *Request, batchName string, docs []bson.Raw, id int64, ns string) (bson.Raw, error) {
	idx, dst := req.BeginReply()
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
	return req.EndReply(idx, dst)
}

func appendIndexKey(dst []byte, i int) []byte { return strconv.AppendInt(dst, int64(i), 10) }

func (s *Server) cursorCommands() []commandDef {
	return []commandDef{
		{name: "getMore", handle: s.getMore},
		{name: "killCursors", handle: s.killCursors},
	}
}

func (s *Server) getMore(ctx context.Context, req *Request) (bson.Raw, error) {
	first := command.FirstValue(req.Body)
	id, ok := first.Int64OK()
	if !ok {
		return nil, command.WrongType("getMore", "getMore", first.Type, "long")
	}
	var coll string
	haveColl := false
	var err error
	batchSize := 0
	for key, v := range command.Args(req.Body) {
		switch string(key) {
		case "collection":
			coll, err = command.String("getMore", "collection", v)
			haveColl = true
		case "batchSize":
			var n int64
			n, err = command.Int64("getMore", "batchSize", v)
			if n < 0 {
				err = mongoerr.New(mongoerr.BadValue, "BatchSize value must be non-negative, but received: %d", n)
			}
			batchSize = int(n)
		case "maxTimeMS", "term", "lastKnownCommittedOpTime":
		default:
			err = command.UnknownField("getMore", key)
		}
		if err != nil {
			return nil, err
		}
	}
	switch {
	case !haveColl:
		return nil, command.MissingField("getMore", "collection")
	case coll == "":
		// Present but empty: MongoDB's getMore checks the namespace it
		// makes of it (getmore_cmd.cpp).
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "Invalid namespace for getMore: %s.", req.DB)
	}
	c := s.cursors.get(id)
	if c == nil {
		return nil, mongoerr.New(mongoerr.CursorNotFound, "cursor id %d not found", id)
	}
	if c.ns != req.DB+"."+coll && !(coll == "$cmd.listCollections" && c.ns == req.DB+".$cmd.listCollections") {
		return nil, mongoerr.New(mongoerr.Unauthorized, "Requested getMore on namespace '%s.%s', but cursor belongs to a different namespace %s", req.DB, coll, c.ns)
	}
	if s.cfg.Auth && c.user != req.Conn.userKey() {
		return nil, mongoerr.New(mongoerr.Unauthorized, "cursor id %d was not created by the authenticated user", id)
	}
	if err := checkCursorSession(id, c.lsid, req.lsid); err != nil {
		return nil, err
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
	} else {
		s.cursors.recount(id, c)
	}
	return appendCursorReplyFrom(req, "nextBatch", docs, id, c.ns, c.src)
}

func (s *Server) killCursors(ctx context.Context, req *Request) (bson.Raw, error) {
	var ids bson.RawArray
	var err error
	haveIDs := false
	for key, v := range command.Args(req.Body) {
		switch string(key) {
		case "cursors":
			ids, err = command.Array("killCursors", "cursors", v)
			haveIDs = true
		default:
			err = command.UnknownField("killCursors", key)
		}
		if err != nil {
			return nil, err
		}
	}
	if !haveIDs {
		return nil, command.MissingField("killCursors", "cursors")
	}
	// MongoDB's parser checks the namespace like this, and a cursor's
	// namespace may be a collection's or "$cmd.listCollections".
	coll := command.FirstValue(req.Body)
	switch name, ok := coll.StringValueOK(); {
	case !ok:
		return nil, mongoerr.New(mongoerr.BadValue, "collection name has invalid type %s", command.TypeName(coll.Type))
	case name == "":
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "Invalid namespace specified '%s.'", req.DB)
	}
	// Every id is checked before any cursor is killed.
	vals, err := ids.Values()
	if err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "invalid cursors array: %v", err)
	}
	for i, v := range vals {
		if v.Type != bson.TypeInt64 {
			return nil, command.WrongType("killCursors", "cursors."+strconv.Itoa(i), v.Type, "long")
		}
		if c := s.cursors.get(v.Int64()); c != nil && s.cfg.Auth && c.user != req.Conn.userKey() {
			return nil, mongoerr.New(mongoerr.Unauthorized, "not authorized to kill cursor %d, which another user opened", v.Int64())
		}
	}
	var killed, notFound bson.A
	for _, v := range vals {
		id := v.Int64()
		if s.cursors.remove(id) {
			killed = append(killed, id)
		} else {
			notFound = append(notFound, id)
		}
	}
	return command.OK(
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

// Codes of getMore in a session other than the cursor's.
const (
	codeGetMoreOutsideSession mongoerr.Code = 50736 // the cursor has none, the getMore has one
	codeGetMoreWithoutSession mongoerr.Code = 50737 // the cursor has one, the getMore has none
	codeGetMoreInOtherSession mongoerr.Code = 50738 // both have one, not the same
)

// checkCursorSession refuses a getMore whose session (packed, "" for
// none) is not the one the cursor was opened in, as MongoDB does even
// without authentication: a session's cursors are its own.
func checkCursorSession(id int64, cursorLsid, lsid string) error {
	switch {
	case cursorLsid == lsid:
		return nil
	case cursorLsid == "":
		return mongoerr.New(codeGetMoreOutsideSession, "Cannot run getMore on cursor %d, which was not created in a session, in session %s", id, formatLsid(lsid))
	case lsid == "":
		return mongoerr.New(codeGetMoreWithoutSession, "Cannot run getMore on cursor %d, which was created in session %s, without an lsid", id, formatLsid(cursorLsid))
	}
	return mongoerr.New(codeGetMoreInOtherSession, "Cannot run getMore on cursor %d, which was created in session %s, in session %s", id, formatLsid(cursorLsid), formatLsid(lsid))
}
