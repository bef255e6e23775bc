package server

// The pipelines of a database ({aggregate: 1}): $currentOp and
// $listLocalSessions, whose documents describe the server, and $documents,
// which the engine runs. And what the metadata stages of a collection's
// pipeline need from the server: its host and port, and the latency of
// each command, which $collStats reports.

import (
	"context"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/auth"
	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/session"
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
// namespace rules engine.CheckPipelineNamespace has passed.
func (s *Server) aggregateDB(ctx context.Context, req *Request, stages []bson.Raw, opts engine.AggregateOptions) ([]bson.Raw, error) {
	docs, err := s.databaseDocs(ctx, req, stages)
	if err != nil {
		return nil, err
	}
	return s.eng.AggregateDocs(ctx, req.DB, docs, stages, opts)
}

// currentOpDocs are the documents of $currentOp: the running commands
// and, when asked, idle connections and idle cursors, and the sessions
// whose open transactions wait (idleSessions, on by default). Without
// users allUsers changes nothing.
func (s *Server) currentOpDocs(req *Request, spec engine.CurrentOpSpec) []bson.Raw {
	host := s.hostPort()
	conns := s.visibleConns(req, !spec.AllUsers)
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
	out = s.withTransactions(req, !spec.AllUsers, spec.IdleSessions, host, conns, out)
	if spec.IdleCursors {
		out = append(out, s.cursors.IdleDocs(host)...)
	}
	docs := make([]bson.Raw, 0, len(out))
	for _, d := range out {
		if raw, err := bson.Marshal(d); err == nil {
			docs = append(docs, raw)
		}
	}
	return docs
}

// listLocalSessions returns the sessions $listLocalSessions shows: those
// of every user (allUsers), of the users listed, or else the caller's own,
// every session without access control. With access control, listing
// another user's sessions needs listSessions on the cluster, as in
// MongoDB; allUsers is checked with the command (auth.Required).
func (s *Server) listLocalSessions(ctx context.Context, req *Request, spec engine.LocalSessionsSpec) ([]bson.Raw, error) {
	var uids map[session.UID]bool
	switch {
	case spec.AllUsers:
	case len(spec.Users) > 0:
		uids = make(map[session.UID]bool, len(spec.Users))
		others := false
		for _, u := range spec.Users {
			uid := session.UserUID(u.User, u.DB)
			uids[uid] = true
			others = others || uid != req.Conn.uid()
		}
		if others && s.cfg.Auth {
			if err := s.mayListSessions(ctx, req); err != nil {
				return nil, err
			}
		}
	case s.cfg.Auth:
		uids = map[session.UID]bool{req.Conn.uid(): true}
	}
	live := s.sessions.List()
	docs := make([]bson.Raw, 0, len(live))
	for _, ls := range live {
		if uids != nil && !uids[ls.UID] {
			continue
		}
		d := bson.D{
			{Key: "_id", Value: bson.D{
				{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: ls.ID[:]}},
				{Key: "uid", Value: bson.Binary{Data: ls.UID[:]}},
			}},
			{Key: "lastUse", Value: bson.NewDateTimeFromTime(ls.LastUse)},
		}
		if ls.User != "" {
			d = append(d, bson.E{Key: "user", Value: bson.D{{Key: "name", Value: ls.User}}})
		}
		raw, err := bson.Marshal(d)
		if err != nil {
			return nil, fmt.Errorf("listing sessions: %w", err)
		}
		docs = append(docs, raw)
	}
	return docs, nil
}

// mayListSessions refuses, with Unauthorized, a client without
// listSessions on the cluster.
func (s *Server) mayListSessions(ctx context.Context, req *Request) error {
	u, err := s.currentUser(ctx, req.Conn)
	if err != nil {
		return err
	}
	if u == nil || !u.grants.Allows(auth.Resource{Cluster: true}, "listSessions") {
		return mongoerr.New(mongoerr.Unauthorized, "not authorized on %s to execute command %s: requires action listSessions on the cluster",
			req.DB, commandSummary(req))
	}
	return nil
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
	v := command.FirstValue(req.Body)
	if name == "getMore" {
		v = req.Body.Lookup("collection")
	}
	coll, ok := v.StringValueOK()
	if !ok || coll == "" {
		return
	}
	s.eng.RecordLatency(req.DB, coll, latencyKind(name), d)
}
