package server

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/mongoerr"
)

// Streaming (awaitable) hello, as MongoDB 4.4+ serves it to drivers'
// monitors: every hello reply carries a topologyVersion; a hello that sends
// back that topologyVersion with maxAwaitTimeMS waits until the topology
// changes or maxAwaitTimeMS passes, then answers. With exhaustAllowed the
// connection then streams replies (moreToCome) without further requests
// (conn.Reply.StreamNext). The wait holds no lock; it ends when the client
// goes away (the transport's peer watch stops the request) and when the
// server shuts down.

// topology is the server's topologyVersion: a process id and a counter
// that moves when the server's description changes. Lethe's only change is
// its shutdown.
type topology struct {
	processID bson.ObjectID

	mu       sync.Mutex
	counter  int64
	changed  chan struct{} // closed, and replaced, when counter moves
	shutdown bool

	// awaiting counts the hellos waiting for a change, serverStatus's
	// connections.awaitingTopologyChanges.
	awaiting atomic.Int64
}

func newTopology() *topology {
	return &topology{processID: bson.NewObjectID(), changed: make(chan struct{})}
}

// current returns the counter, a channel closed when it next moves, and
// whether the server is shutting down.
func (t *topology) current() (int64, <-chan struct{}, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.counter, t.changed, t.shutdown
}

// shuttingDown moves the topology, which wakes every waiting hello.
func (t *topology) shuttingDown() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.shutdown {
		return
	}
	t.shutdown = true
	t.counter++
	close(t.changed)
	t.changed = make(chan struct{})
}

func (t *topology) append(dst []byte, counter int64) []byte {
	idx, dst := bsoncore.AppendDocumentElementStart(dst, "topologyVersion")
	dst = bsoncore.AppendObjectIDElement(dst, "processId", t.processID)
	dst = bsoncore.AppendInt64Element(dst, "counter", counter)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// awaitArgs are a hello's awaitable arguments.
type awaitArgs struct {
	haveTV    bool
	processID bson.ObjectID
	counter   int64
	haveMax   bool
	maxAwait  time.Duration
	awaitable bool // the optional awaitable: true flag
}

// Error codes of the awaitable hello, which MongoDB gives separately for a
// standalone server and a replica-set member; a mongos gives the member's
// (cluster_hello_cmd.cpp, mongos_topology_coordinator.cpp).
func (s *Server) awaitCode(standalone, member mongoerr.Code) mongoerr.Code {
	if s.clustered() {
		return member
	}
	return standalone
}

func (s *Server) parseTopologyVersion(a *awaitArgs, cmd string, v bson.RawValue) error {
	doc, ok := v.DocumentOK()
	if !ok {
		return mongoerr.New(10065, "invalid parameter: expected an object (topologyVersion)")
	}
	var havePID, haveCounter bool
	for key, f := range command.Fields(doc) {
		switch string(key) {
		case "processId":
			oid, ok := f.ObjectIDOK()
			if !ok {
				return command.WrongType(cmd, "topologyVersion.processId", f.Type, "objectId")
			}
			a.processID, havePID = oid, true
		case "counter":
			if f.Type != bson.TypeInt64 {
				return command.WrongType(cmd, "topologyVersion.counter", f.Type, "long")
			}
			a.counter, haveCounter = f.Int64(), true
		default:
			return mongoerr.New(command.CodeUnknownField, "BSON field 'TopologyVersion.%s' is an unknown field.", key)
		}
	}
	if !havePID {
		return mongoerr.New(command.CodeMissingField, "BSON field 'TopologyVersion.processId' is missing but a required field")
	}
	if !haveCounter {
		return mongoerr.New(command.CodeMissingField, "BSON field 'TopologyVersion.counter' is missing but a required field")
	}
	if a.counter < 0 {
		return mongoerr.New(s.awaitCode(31372, 51758), "topologyVersion must have a non-negative counter")
	}
	a.haveTV = true
	return nil
}

func (s *Server) parseMaxAwait(a *awaitArgs, cmd string, v bson.RawValue) error {
	n, ok := v.AsInt64OK()
	if !ok {
		return command.WrongType(cmd, "maxAwaitTimeMS", v.Type, "long")
	}
	if n < 0 {
		return mongoerr.New(s.awaitCode(31373, 51759), "maxAwaitTimeMS must be a non-negative integer")
	}
	a.haveMax, a.maxAwait = true, time.Duration(n)*time.Millisecond
	return nil
}

// await checks a hello's awaitable arguments and waits as they ask. It
// returns the topology counter to report, and whether the hello was
// awaitable (and so may stream).
func (s *Server) await(ctx context.Context, c *Conn, a *awaitArgs) (int64, bool, error) {
	counter, changed, shutdown := s.topo.current()
	if a.awaitable && (!a.haveTV || !a.haveMax) {
		code := mongoerr.Code(5135800)
		if a.haveTV {
			code = 5135801
		}
		return 0, false, mongoerr.New(code, "A request with 'awaitable' must include both 'topologyVersion' and 'maxAwaitTimeMS'")
	}
	if a.haveTV != a.haveMax {
		return 0, false, mongoerr.New(s.awaitCode(31368, 51760), "A request with a 'topologyVersion' must include 'maxAwaitTimeMS'")
	}
	if !a.haveTV {
		return counter, false, nil
	}
	if a.processID != s.topo.processID || a.counter < counter {
		return counter, true, s.shutdownError(counter, shutdown) // the client's view is stale: answer now
	}
	if a.counter > counter {
		return 0, false, mongoerr.New(s.awaitCode(31382, 51761),
			"Received a topology version with counter: %d which is greater than the server topology version counter: %d", a.counter, counter)
	}
	if shutdown {
		return counter, true, s.shutdownError(counter, shutdown)
	}
	timer := time.NewTimer(a.maxAwait)
	defer timer.Stop()
	c.setAwaiting(true)
	s.topo.awaiting.Add(1)
	defer func() {
		s.topo.awaiting.Add(-1)
		c.setAwaiting(false)
	}()
	select {
	case <-timer.C:
		return counter, true, nil
	case <-changed:
		counter, _, shutdown = s.topo.current()
		return counter, true, s.shutdownError(counter, shutdown)
	case <-ctx.Done():
		return 0, false, ctx.Err()
	}
}

// shutdownError is what a hello answers while the server shuts down:
// ShutdownInProgress with the new topologyVersion, as a MongoDB in quiesce
// mode answers, so that a driver's monitor marks the server unknown at once.
func (s *Server) shutdownError(counter int64, shutdown bool) error {
	if !shutdown {
		return nil
	}
	e := mongoerr.New(mongoerr.ShutdownInProgress, "The server is in quiesce mode and will shut down")
	e.Extra = bson.D{{Key: "topologyVersion", Value: bson.D{
		{Key: "processId", Value: s.topo.processID}, {Key: "counter", Value: counter}}}}
	return e
}
