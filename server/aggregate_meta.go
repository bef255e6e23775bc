package server

// The pipelines of a database ({aggregate: 1}): $currentOp and
// $listLocalSessions, whose documents describe the server, and $documents,
// which the engine runs. And what the metadata stages of a collection's
// pipeline need from the server: its host and port, and the latency of
// each command, which $collStats reports.

import (
	"context"
	"crypto/sha256"
	"math"
	"net"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/engine/pipeline"
)

// hostPort is "host:port" as $collStats, $indexStats and $currentOp
// report the server: the machine's name and the port it listens on.
func (s *Server) hostPort() string {
	host, _ := os.Hostname()
	if addr, ok := s.Addr().(*net.TCPAddr); ok {
		host = net.JoinHostPort(host, strconv.Itoa(addr.Port))
	}
	return host
}

// aggregateDB runs a pipeline of the database ({aggregate: 1}) whose
// namespace rules pipeline.CheckNamespace has passed.
func (s *Server) aggregateDB(ctx context.Context, req *Request, stages []bson.Raw, opts engine.AggregateOptions) ([]bson.Raw, error) {
	docs, err := s.databaseDocs(stages)
	if err != nil {
		return nil, err
	}
	return s.eng.AggregateDocs(ctx, req.DB, docs, stages, opts)
}

// currentOpDocs are the documents of $currentOp: the running commands
// and, when asked, idle connections and idle cursors. Without users
// allUsers changes nothing; Lethe keeps no sessions to list as idle.
func (s *Server) currentOpDocs(spec pipeline.CurrentOpSpec) []bson.Raw {
	host := s.hostPort()
	s.net.mu.Lock()
	conns := make([]*Conn, 0, len(s.net.conns))
	for c := range s.net.conns {
		conns = append(conns, c)
	}
	s.net.mu.Unlock()
	sort.Slice(conns, func(i, j int) bool { return conns[i].id < conns[j].id })
	now := time.Now()
	var out []bson.D
	for _, c := range conns {
		d, ok := c.opDoc(now, spec.IdleConnections)
		if !ok {
			if !spec.IdleConnections {
				continue
			}
			d = bson.D{
				{Key: "type", Value: "op"},
				{Key: "desc", Value: "conn" + strconv.FormatInt(c.id, 10)},
				{Key: "connectionId", Value: numberValue(c.id)},
				{Key: "client", Value: c.remote},
				{Key: "active", Value: false},
				{Key: "currentOpTime", Value: now.Format(time.RFC3339Nano)},
			}
		}
		// host follows type, as in MongoDB's documents.
		d = append(d[:1], append(bson.D{{Key: "host", Value: host}}, d[1:]...)...)
		out = append(out, d)
	}
	if spec.IdleCursors {
		out = append(out, s.cursors.idleDocs(host)...)
	}
	docs := make([]bson.Raw, 0, len(out))
	for _, d := range out {
		if raw, err := bson.Marshal(d); err == nil {
			docs = append(docs, raw)
		}
	}
	return docs
}

// idleDocs describes the open cursors no getMore is reading, as
// $currentOp's idleCursors shows them.
func (t *cursorTable) idleDocs(host string) []bson.D {
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

// maxLocalSessions bounds the sessions sessionCache keeps: past it the
// least recently used one is forgotten. MongoDB's own bound
// (maxSessions) is a million; Lethe keeps no state per session beyond
// this entry, so listing is all it serves.
const maxLocalSessions = 10000

// sessionCache is the server's record of the sessions its clients use,
// what $listLocalSessions lists: every command with an lsid marks its
// session used, and a session unused for the session timeout is gone.
// Marking a known session is an atomic store, not a lock: every command
// of a driver carries an lsid.
type sessionCache struct {
	lastUse sync.Map     // session id bytes → *atomic.Int64, Unix nanoseconds
	n       atomic.Int64 // entries in lastUse
	sweep   sync.Mutex   // one sweeper at a time
}

// touch marks session id used at now.
func (sc *sessionCache) touch(id string, now time.Time) {
	if v, ok := sc.lastUse.Load(id); ok {
		v.(*atomic.Int64).Store(now.UnixNano())
		return
	}
	if sc.n.Load() >= maxLocalSessions {
		sc.makeRoom(now)
	}
	t := new(atomic.Int64)
	t.Store(now.UnixNano())
	if _, loaded := sc.lastUse.LoadOrStore(id, t); !loaded {
		sc.n.Add(1)
	}
}

// makeRoom forgets the expired sessions, or else the least recently used.
func (sc *sessionCache) makeRoom(now time.Time) {
	sc.sweep.Lock()
	defer sc.sweep.Unlock()
	sc.expire(now)
	if sc.n.Load() < maxLocalSessions {
		return
	}
	var oldest any
	at := int64(math.MaxInt64)
	sc.lastUse.Range(func(k, v any) bool {
		if t := v.(*atomic.Int64).Load(); t < at {
			oldest, at = k, t
		}
		return true
	})
	if oldest != nil {
		sc.forget(oldest)
	}
}

func (sc *sessionCache) forget(id any) {
	if _, ok := sc.lastUse.LoadAndDelete(id); ok {
		sc.n.Add(-1)
	}
}

// end forgets sessions, as endSessions does.
func (sc *sessionCache) end(ids []string) {
	for _, id := range ids {
		sc.forget(id)
	}
}

func (sc *sessionCache) expire(now time.Time) {
	cutoff := now.Add(-sessionTimeoutMinutes * time.Minute).UnixNano()
	sc.lastUse.Range(func(k, v any) bool {
		if v.(*atomic.Int64).Load() < cutoff {
			sc.forget(k)
		}
		return true
	})
}

// noAuthDigest is the uid of every session: the SHA-256 of no user name,
// as MongoDB computes it when no one is authenticated.
var noAuthDigest = sha256.Sum256(nil)

// list returns the sessions $listLocalSessions shows: without users every
// session belongs to the unauthenticated user, so a spec naming only
// other users lists none.
func (sc *sessionCache) list(spec pipeline.SessionsSpec, now time.Time) []bson.Raw {
	mine := spec.AllUsers || len(spec.Users) == 0
	for _, u := range spec.Users {
		if u.User == "" && u.DB == "" {
			mine = true
		}
	}
	if !mine {
		return nil
	}
	sc.expire(now)
	type entry struct {
		id  string
		use int64
	}
	var all []entry
	sc.lastUse.Range(func(k, v any) bool {
		all = append(all, entry{k.(string), v.(*atomic.Int64).Load()})
		return true
	})
	sort.Slice(all, func(i, j int) bool { return all[i].id < all[j].id })
	docs := make([]bson.Raw, 0, len(all))
	for _, en := range all {
		raw, err := bson.Marshal(bson.D{
			{Key: "_id", Value: bson.D{
				{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: []byte(en.id)}},
				{Key: "uid", Value: bson.Binary{Data: noAuthDigest[:]}},
			}},
			{Key: "lastUse", Value: bson.NewDateTimeFromTime(time.Unix(0, en.use))},
		})
		if err == nil {
			docs = append(docs, raw)
		}
	}
	return docs
}

// endSessions ends the sessions it lists, which $listLocalSessions then
// no longer shows.
func (s *Server) endSessions(ctx context.Context, req *Request) (bson.Raw, error) {
	reply, err := sessionList(ctx, req)
	if err != nil {
		return nil, err
	}
	arr, _ := req.Body.Index(0).Value().ArrayOK()
	vals, _ := arr.Values()
	ids := make([]string, 0, len(vals))
	for _, v := range vals {
		if d, ok := v.DocumentOK(); ok {
			if _, data, ok := d.Lookup("id").BinaryOK(); ok {
				ids = append(ids, string(data))
			}
		}
	}
	s.sessions.end(ids)
	return reply, nil
}

// latencyKind is how latencyStats files a command, as MongoDB's commands
// declare their kind.
func latencyKind(name string) engine.LatencyKind {
	switch name {
	case "find", "getMore", "aggregate", "count", "distinct":
		return engine.LatencyReads
	case "insert", "update", "delete", "findAndModify":
		return engine.LatencyWrites
	}
	return engine.LatencyCommands
}

// recordLatency files a command's latency under the collection it ran on,
// if any: the string its first field names, or getMore's collection.
func (s *Server) recordLatency(name string, req *Request, d time.Duration) {
	v := firstValue(req.Body)
	if name == "getMore" {
		v = req.Body.Lookup("collection")
	}
	coll, ok := v.StringValueOK()
	if !ok || coll == "" {
		return
	}
	s.eng.RecordLatency(req.DB, coll, latencyKind(name), d)
}

// pipelineNamespace applies MongoDB's rules on where the metadata stages
// run. (read.go names its pipeline "pipeline", hiding the package.)
func pipelineNamespace(db string, stages []bson.Raw, collectionless bool) error {
	return pipeline.CheckNamespace(stages, db, collectionless)
}
