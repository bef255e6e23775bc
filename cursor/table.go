package cursor

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"io"
	"slices"
	"sort"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/mongoerr"
)

// IdleTimeout: cursors idle longer than this are closed, as MongoDB's
// cursorTimeoutMillis default does.
const IdleTimeout = 10 * time.Minute

// MaxBatchBytes keeps a batch, with the reply around it, under the 16 MiB
// BSON limit.
const MaxBatchBytes = 16*1024*1024 - 64*1024

// Source is what a cursor reads from: an engine cursor or results
// already in memory (aggregate, listCollections).
type Source interface {
	NextBatch(ctx context.Context, n int, maxBytes int) ([]bson.Raw, error)
	Exhausted() bool
}

// memoryHolder is a Source that holds results in memory, counted
// against CursorLimits.Memory while its cursor is open.
type memoryHolder interface {
	HeldBytes() int64
}

// SliceSource serves documents already computed.
type SliceSource struct {
	docs []bson.Raw
	held int64 // bytes of docs; 0 until counted
	// source is the collection the documents stream from in MongoDB,
	// whose drop or rename kills the cursor; zero for none.
	source engine.Incarnation
}

// NewSlice is a source of docs; source is the collection they stream from
// in MongoDB, whose drop or rename kills the cursor, zero for none.
func NewSlice(docs []bson.Raw, source engine.Incarnation) *SliceSource {
	return &SliceSource{docs: docs, source: source}
}

func (s *SliceSource) NextBatch(_ context.Context, n int, maxBytes int) ([]bson.Raw, error) {
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

func (s *SliceSource) Exhausted() bool { return len(s.docs) == 0 }

func (s *SliceSource) HeldBytes() int64 {
	if s.held == 0 {
		for _, d := range s.docs {
			s.held += int64(len(d))
		}
	}
	return s.held
}

// Limits bound the cursors clients may keep open, so that no client can
// exhaust the server's memory with them, nor take all of it from the
// others. MongoDB has no such limits; the defaults are far above what
// applications keep open. A client is a user, or an address without
// access control (the server's principal.go): open cursors outlive the connections
// that opened them, so only a bound per client keeps one client that
// reconnects from taking them all.
type Limits struct {
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

// Defaults of Limits.
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

// SetDefaults gives the zero fields their defaults.
func (l *Limits) SetDefaults() {
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
	src  Source
	ns   string
	conn int64  // the connection that opened it
	lsid string // the session, packed (packKey); "" outside a session
	// inTxn says it was opened in transaction txn of its session: only
	// that transaction's getMores may read it (see Owner.InTxn).
	inTxn bool
	txn   int64
	// user is the authenticated user that opened it (Owner.User): with
	// access control, only that user may go on with it or kill it.
	user string
	// client is whom it is charged to (Owner.Client).
	client   string
	held     int64 // bytes of results it holds, as last counted
	lastUsed time.Time
	// noTimeout exempts the cursor from the idle sweep (find's
	// noCursorTimeout). Such a cursor closes with its session, as in
	// MongoDB, or, opened outside any session, with its connection.
	noTimeout bool
}

// Table holds open cursors by id. Idle cursors are swept lazily,
// whenever cursors are used, so no goroutine is needed. The zero Table
// has no limits and no access control; see Configure.
type Table struct {
	limits Limits
	// auth says access control is on: a cursor is then its user's.
	auth bool
	// formatLsid prints a packed session id in an error message.
	formatLsid func(lsid string) string
	mu         sync.Mutex
	open       map[int64]*openCursor
	byConn     map[int64]int // open cursors by the connection that opened them
	byClient   map[string]*clientCursors
	held       int64 // sum of the open cursors' held bytes
	lastSweep  time.Time
}

// Config is what the table needs of the server.
type Config struct {
	Limits Limits
	// Auth says access control is on: only the user that opened a cursor
	// may go on with it or kill it.
	Auth bool
	// FormatLsid prints a session id as Owner.Lsid packs it, for error
	// messages.
	FormatLsid func(lsid string) string
}

// Configure sets the table's limits and access control; call it before
// any cursor opens.
func (t *Table) Configure(cfg Config) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.limits, t.auth, t.formatLsid = cfg.Limits, cfg.Auth, cfg.FormatLsid
}

// Owner is whom a cursor belongs to.
type Owner struct {
	Conn int64 // the connection that opens it
	// Client is whom it is charged to: a user, or an address without
	// access control.
	Client string
	// Lsid is the session, packed; "" outside a session.
	Lsid string
	// User is the authenticated user, "" for none.
	User string
	// InTxn says the command runs in transaction Txn of its session.
	InTxn bool
	Txn   int64
}

// Opener is the command that opens or reads a cursor.
type Opener interface {
	CursorOwner() Owner
}

// Add registers a cursor over src opened by the command by, or refuses it
// with ExceededMemoryLimit when it would pass a limit. A noTimeout cursor
// counts against the limits like any other.
func (t *Table) Add(by Opener, src Source, ns string, noTimeout bool) (int64, error) {
	var held int64
	if m, ok := src.(memoryHolder); ok {
		held = m.HeldBytes()
	}
	owner := by.CursorOwner()
	conn, client := owner.Conn, owner.Client
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
			t.open[id] = &openCursor{src: src, ns: ns, conn: conn, lsid: owner.Lsid, inTxn: owner.InTxn, txn: owner.Txn, user: owner.User, client: client,
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
func (t *Table) recount(id int64, c *openCursor) {
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

// OpenBy is the number of open cursors the connection opened.
func (t *Table) OpenBy(conn int64) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byConn[conn]
}

// deleteLocked forgets an open cursor.
func (t *Table) deleteLocked(id int64, c *openCursor) {
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
func closeSource(src Source) {
	if c, ok := src.(io.Closer); ok {
		_ = c.Close()
	}
}

func (t *Table) get(id int64) *openCursor {
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

func (t *Table) remove(id int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.open[id]
	if ok {
		t.deleteLocked(id, c)
	}
	return ok
}

// Usage is the number of open cursors and the bytes of results they hold.
func (t *Table) Usage() (open int, held int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.open), t.held
}

// SweepIdle closes the cursors idle at now for longer than IdleTimeout,
// as the sweep does that runs, at most once a minute, whenever cursors
// are used.
func (t *Table) SweepIdle(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lastSweep = time.Time{}
	t.sweepLocked(now)
}

func (t *Table) sweepLocked(now time.Time) {
	if now.Sub(t.lastSweep) < time.Minute {
		return
	}
	t.lastSweep = now
	for id, c := range t.open {
		if !c.noTimeout && now.Sub(c.lastUsed) > IdleTimeout {
			t.deleteLocked(id, c)
		}
	}
}

// ConnClosed closes the noTimeout cursors connection conn opened outside
// any session, which no idle sweep or session end would. Its other cursors
// stay: another connection may go on reading them until they time out or
// their session ends, as in MongoDB.
func (t *Table) ConnClosed(conn int64) {
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

// KillSessions closes the cursors opened in the sessions match accepts (by
// their id bytes) and returns how many it closed. A getMore then finds no
// cursor (CursorNotFound), as in MongoDB.
func (t *Table) KillSessions(match func(lsid string) bool) int {
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

// KillTransaction closes the cursors opened in transaction txn of the
// session lsid (packed), which has ended: they read its snapshot, which is
// gone. A getMore then finds no cursor (CursorNotFound).
func (t *Table) KillTransaction(lsid string, txn int64) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for id, c := range t.open {
		if c.inTxn && c.txn == txn && c.lsid == lsid {
			t.deleteLocked(id, c)
			n++
		}
	}
	return n
}

// IdleDocs describes the open cursors no getMore is reading, as
// $currentOp's idleCursors shows them.
func (t *Table) IdleDocs(host string) []bson.D {
	t.mu.Lock()
	defer t.mu.Unlock()
	ids := make([]int64, 0, len(t.open))
	for id := range t.open {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var out []bson.D
	for _, id := range ids {
		c := t.open[id]
		if !c.mu.TryLock() {
			continue // a getMore is reading it: not idle
		}
		c.mu.Unlock()
		out = append(out, bson.D{
			{Key: "type", Value: "idleCursor"},
			{Key: "host", Value: host},
			{Key: "ns", Value: c.ns},
			{Key: "cursor", Value: bson.D{
				{Key: "cursorId", Value: id},
				{Key: "lastAccessDate", Value: bson.NewDateTimeFromTime(c.lastUsed)},
				{Key: "noCursorTimeout", Value: c.noTimeout},
				{Key: "tailable", Value: false},
				{Key: "awaitData", Value: false},
			}},
		})
	}
	return out
}
