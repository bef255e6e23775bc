package server

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/transaction"
)

// A running command ends early when its client goes away (the transport
// watches for it, see conn/watch.go), killOp names it or its maxTimeMS
// passes. Each connection runs one command at a time under its own
// context, an opContext, which is canceled for any of these reasons and
// then replaced before the next command: requests pay no allocation for
// being cancelable, nor for a maxTimeMS, which drivers send with every
// command run under a deadline.

// codeClientDisconnect is MongoDB's ClientDisconnect, the cause of a command
// stopped because its client went away. No one receives it; it shows in
// the log.
const codeClientDisconnect mongoerr.Code = 279

var (
	errKilled = mongoerr.New(mongoerr.Interrupted, "operation was interrupted")
	errGone   = mongoerr.New(codeClientDisconnect, "operation was interrupted because a client disconnected")
)

// opIDs numbers operations for currentOp and killOp.
var opIDs atomic.Uint32

// runningOp is what a connection is running, as currentOp shows it.
type runningOp struct {
	mu    sync.Mutex // guards the fields and the swap of opState.ctx
	id    int32      // 0 when the connection is between commands
	name  string
	db    string
	start time.Time
	lsid  string // the command's session, packed, for killSessions
	// user is the connection's user (Conn.userKey) as of its last
	// command, for $ownOps; "" for none.
	user   string
	killed bool
	// awaiting marks a hello waiting for a topology change: a monitor's
	// idle wait, which currentOp lists only with $all (idle connections).
	awaiting bool
}

// opState is a connection's part in cancellation, set up by startOps.
type opState struct {
	op     runningOp
	ctx    *opContext      // the running command's; replaced once canceled
	parent context.Context // the server's handlers' context
}

func (c *Conn) startOps(parent context.Context) {
	c.ops.parent = parent
	c.ops.ctx = newOpContext(parent)
}

// stopOps releases the connection's context.
func (c *Conn) stopOps() {
	c.ops.ctx.cancel(context.Canceled, context.Canceled)
	c.ops.ctx.release()
}

// dispatch runs req as a numbered operation: listed by currentOp, stopped
// by killOp or by its client leaving.
func (c *Conn) dispatch(req *Request) bson.Raw {
	key := bsonvalue.FirstKeyBytes(req.Body)
	cmd := c.srv.commands[string(key)]
	name := "unknown"
	if cmd != nil {
		name = cmd.name
	}
	c.srv.foreground.begin()
	defer c.srv.foreground.end()
	op := &c.ops.op
	id := int32(opIDs.Add(1) & 0x7fffffff)
	req.generic.read(req.Body)
	req.lsid, req.lsidForeign = c.requestSession(req.generic.lsid)
	req.failed = nil
	start := time.Now()
	op.mu.Lock()
	op.id, op.name, op.db, op.start, op.killed, op.lsid, op.awaiting = id, name, req.DB, start, false, req.lsid, false
	op.user = c.userKey()
	ctx := c.ops.ctx
	op.mu.Unlock()

	reply := c.srv.dispatch(ctx, cmd, key, req, start)

	op.mu.Lock()
	op.id = 0
	if ctx.finish() {
		ctx.release()
		c.ops.ctx = newOpContext(c.ops.parent)
	}
	op.mu.Unlock()
	return reply
}

// PeerGone stops the running command, if any, because its client went
// away (conn.Handler; the transport noticed).
func (c *Conn) PeerGone(err error) {
	op := &c.ops.op
	op.mu.Lock()
	defer op.mu.Unlock()
	if op.id != 0 {
		c.srv.log.Info("client went away: stopping its command", zap.Int64("conn", c.id), zap.String("remote", c.remote),
			zap.Int32("opid", op.id), zap.String("command", op.name), zap.Duration("running", time.Since(op.start)), zap.Error(err))
		c.ops.ctx.cancel(context.Canceled, errGone)
	}
}

// kill cancels operation id if this connection is running it.
func (c *Conn) kill(id int32) bool {
	op := &c.ops.op
	op.mu.Lock()
	defer op.mu.Unlock()
	if op.id != id {
		return false
	}
	op.killed = true
	c.ops.ctx.cancel(context.Canceled, errKilled)
	return true
}

// killSession cancels the running command if its session is one match
// accepts, as killSessions does.
func (c *Conn) killSession(match func(lsid string) bool) bool {
	op := &c.ops.op
	op.mu.Lock()
	defer op.mu.Unlock()
	if op.id == 0 || !match(op.lsid) {
		return false
	}
	op.killed = true
	c.ops.ctx.cancel(context.Canceled, errKilled)
	return true
}

// setAwaiting marks the running command as a hello waiting for a topology
// change, or no longer.
func (c *Conn) setAwaiting(b bool) {
	op := &c.ops.op
	op.mu.Lock()
	op.awaiting = b
	op.mu.Unlock()
	c.srv.foreground.awaiting(b)
}

// opDoc describes the connection's running command, if any, as currentOp
// does: only the command's name and database are kept, not its arguments.
// A hello waiting for a topology change counts only when idle is set, and
// as inactive: a monitor's wait is no work.
func (c *Conn) opDoc(now time.Time, idle bool) (bson.D, bool) {
	op := &c.ops.op
	op.mu.Lock()
	defer op.mu.Unlock()
	if op.id == 0 || op.awaiting && !idle {
		return nil, false
	}
	running := now.Sub(op.start)
	d := bson.D{
		{Key: "type", Value: "op"},
		{Key: "desc", Value: "conn" + strconv.FormatInt(c.id, 10)},
		{Key: "connectionId", Value: numberValue(c.id)},
		{Key: "client", Value: c.remote},
		{Key: "active", Value: !op.awaiting},
		{Key: "currentOpTime", Value: now.Format(time.RFC3339Nano)},
		{Key: "opid", Value: op.id},
		{Key: "secs_running", Value: int64(running / time.Second)},
		{Key: "microsecs_running", Value: int64(running / time.Microsecond)},
		{Key: "op", Value: "command"},
		{Key: "ns", Value: op.db + ".$cmd"},
		{Key: "command", Value: bson.D{{Key: op.name, Value: 1}, {Key: "$db", Value: op.db}}},
		{Key: "killPending", Value: op.killed},
	}
	if op.lsid != "" {
		// After command, where MongoDB puts the session: its id and user.
		k, _ := lsidOf(op.lsid)
		d = append(d[:len(d)-1], bson.E{Key: "lsid", Value: bson.D{
			{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: k.ID[:]}},
			{Key: "uid", Value: bson.Binary{Data: k.UID[:]}},
		}}, d[len(d)-1])
	}
	if db, name, ok := strings.Cut(op.user, "\x00"); ok {
		d = append(d, bson.E{Key: "effectiveUsers", Value: bson.A{bson.D{{Key: "user", Value: name}, {Key: "db", Value: db}}}})
	}
	return d, true
}

// currentOps describes every running command; idle adds hellos waiting
// for a topology change. Open transactions come too, as the $currentOp of
// the currentOp command shows them (idleSessions is on by default).
func (s *Server) currentOps(req *Request, own, idle bool, conns []*Conn) []bson.Raw {
	now := time.Now()
	host := s.hostPort()
	var out []bson.D
	for _, c := range conns {
		if d, ok := c.opDoc(now, idle); ok {
			if s.router != nil {
				// Among several servers, each names itself in its
				// operations, as a mongos does (after type, as in
				// $currentOp's): killOp takes them on that server only.
				d = append(d[:1], append(bson.D{{Key: "host", Value: host}}, d[1:]...)...)
			}
			out = append(out, d)
		}
	}
	out = s.withTransactions(req, own, true, host, conns, out)
	docs := make([]bson.Raw, 0, len(out))
	for _, d := range out {
		if raw, err := bson.Marshal(d); err == nil {
			docs = append(docs, raw)
		}
	}
	return docs
}

// withTransactions adds to docs, the documents of conns' running
// commands, the transaction each runs in, and with idleSessions a document
// for each session whose open transaction waits for its next command
// (type idleSession), as mongod's $currentOp does; with access control and
// own, only the caller's sessions'.
func (s *Server) withTransactions(req *Request, own, idleSessions bool, host string, conns []*Conn, docs []bson.D) []bson.D {
	open := s.txns.Open()
	if len(open) == 0 {
		return docs
	}
	byKey := make(map[string]transaction.Info, len(open))
	for _, in := range open {
		byKey[in.Key] = in
	}
	running := make(map[string]transaction.Info) // by desc, "conn<id>"
	for _, c := range conns {
		if lsid, ok := c.opLsid(); ok {
			if in, ok := byKey[lsid]; ok && in.Active {
				running["conn"+strconv.FormatInt(c.id, 10)] = in
			}
		}
	}
	for i, d := range docs {
		for _, e := range d {
			if e.Key != "desc" {
				continue
			}
			if desc, _ := e.Value.(string); desc != "" {
				if in, ok := running[desc]; ok {
					docs[i] = append(d, bson.E{Key: "transaction", Value: transactionDoc(in)})
				}
			}
			break
		}
	}
	if !idleSessions {
		return docs
	}
	for _, in := range open {
		k, _ := lsidOf(in.Key)
		if in.Active || own && s.cfg.Auth && k.UID != req.Conn.uid() {
			continue
		}
		docs = append(docs, bson.D{
			{Key: "type", Value: "idleSession"},
			{Key: "host", Value: host},
			{Key: "desc", Value: "inactive transaction"},
			{Key: "lsid", Value: bson.D{
				{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: k.ID[:]}},
				{Key: "uid", Value: bson.Binary{Data: k.UID[:]}},
			}},
			{Key: "transaction", Value: transactionDoc(in)},
			{Key: "active", Value: false},
			{Key: "waitingForLock", Value: false},
		})
	}
	return docs
}

// transactionDoc is currentOp's transaction sub-document: mongod's
// parameters, times and expiry (TransactionParticipant::reportState).
func transactionDoc(in transaction.Info) bson.D {
	const iso = "2006-01-02T15:04:05.000Z07:00"
	return bson.D{
		{Key: "parameters", Value: bson.D{{Key: "txnNumber", Value: in.Number}, {Key: "autocommit", Value: false}}},
		{Key: "startWallClockTime", Value: in.Started.Format(iso)},
		{Key: "timeOpenMicros", Value: int64(in.Open / time.Microsecond)},
		{Key: "timeActiveMicros", Value: int64(in.ActiveFor / time.Microsecond)},
		{Key: "timeInactiveMicros", Value: int64((in.Open - in.ActiveFor) / time.Microsecond)},
		{Key: "expiryTime", Value: in.Expires.Format(iso)},
	}
}

// opLsid is the session of the connection's running command, packed, and
// whether one runs.
func (c *Conn) opLsid() (string, bool) {
	op := &c.ops.op
	op.mu.Lock()
	defer op.mu.Unlock()
	return op.lsid, op.id != 0
}

// visibleConns are the connections whose operations req may see: every
// one, or with access control and only its own asked for (currentOp's
// $ownOps, $currentOp without allUsers), those of the same user.
func (s *Server) visibleConns(req *Request, own bool) []*Conn {
	conns := s.connections()
	if !own || !s.cfg.Auth {
		return conns
	}
	me := req.Conn.userKey()
	mine := conns[:0]
	for _, c := range conns {
		if c.opUser() == me {
			mine = append(mine, c)
		}
	}
	return mine
}

// opUser is the connection's user as of its last command.
func (c *Conn) opUser() string {
	c.ops.op.mu.Lock()
	defer c.ops.op.mu.Unlock()
	return c.ops.op.user
}

func (s *Server) opCommands() []commandDef {
	return []commandDef{
		{name: "currentOp", handle: s.currentOp, adminOnly: true},
		{name: "killOp", handle: s.killOp, adminOnly: true},
	}
}

// currentOp lists the running commands; its other fields ($all, $ownOps
// aside) filter them as a query would.
func (s *Server) currentOp(ctx context.Context, req *Request) (bson.Raw, error) {
	var filter bson.D
	var all, ownOps bool
	for key, v := range command.Args(req.Body) {
		switch string(key) {
		case "$all":
			all = v.Type == bson.TypeBoolean && v.Boolean()
		case "$ownOps":
			ownOps = v.Type == bson.TypeBoolean && v.Boolean()
		default:
			filter = append(filter, bson.E{Key: string(key), Value: v})
		}
	}
	docs := s.currentOps(req, ownOps, all, s.visibleConns(req, ownOps))
	if len(filter) > 0 {
		match, err := bson.Marshal(bson.D{{Key: "$match", Value: filter}})
		if err != nil {
			return nil, err
		}
		if docs, err = s.eng.ApplyStages(ctx, docs, []bson.Raw{match}); err != nil {
			return nil, err
		}
	}
	return command.OK(bson.E{Key: "inprog", Value: nonNil(toA(docs))})
}

// killOp cancels the operation {op: N}: it ends with Interrupted. As in
// MongoDB, killing an operation that has already finished is not an error.
func (s *Server) killOp(_ context.Context, req *Request) (bson.Raw, error) {
	var id int64
	var have bool
	for key, v := range command.Args(req.Body) {
		if string(key) != "op" {
			continue
		}
		n, err := command.Int64("killOp", "op", v)
		if err != nil {
			return nil, err
		}
		id, have = n, true
	}
	if !have {
		return nil, command.MissingField("killOp", "op")
	}
	if id < 0 || id > 0x7fffffff {
		return nil, mongoerr.New(mongoerr.BadValue, "invalid op id %d", id)
	}
	killed := false
	for _, c := range s.connections() {
		if c.kill(int32(id)) {
			killed = true
			s.log.Info("killing operation", zap.Int64("opid", id), zap.Int64("conn", c.id), zap.Int64("by", req.Conn.id))
			break
		}
	}
	if !killed {
		s.log.Info("killOp: no such operation running", zap.Int64("opid", id), zap.Int64("by", req.Conn.id))
	}
	return command.OK(bson.E{Key: "info", Value: "attempting to kill op"})
}

func toA(docs []bson.Raw) bson.A {
	a := make(bson.A, len(docs))
	for i, d := range docs {
		a[i] = d
	}
	return a
}

func nonNil(a bson.A) bson.A {
	if a == nil {
		return bson.A{}
	}
	return a
}

// opContext is a connection's command context: canceled by killOp or the
// client leaving (cancel), and when the running command's maxTimeMS
// passes (setDeadline), with DeadlineExceeded as a context.WithDeadline
// is. It is the connection's from one command to the next until canceled;
// the deadline is each command's. Its timer is set only once the command
// asks for Done or Err, which most commands never do: a deadline costs
// them nothing.
//
// context.Cause cannot see its cause: contextCause does. Its children (as
// context.WithCancel makes them) are told through AfterFunc, and get its
// error as their cause.
type opContext struct {
	mu       sync.Mutex
	done     chan struct{} // made when asked for; closed once canceled
	err      error
	cause    error
	deadline time.Time // the running command's, zero for none
	timer    *time.Timer
	timerSet bool
	afters   map[*func()]struct{}
	// stopParent ends the watch of the server's handlers' context, whose
	// end cancels this one.
	stopParent func() bool
}

func newOpContext(parent context.Context) *opContext {
	c := &opContext{}
	c.stopParent = context.AfterFunc(parent, func() { c.cancel(parent.Err(), context.Cause(parent)) })
	return c
}

// setDeadline sets the running command's deadline (its maxTimeMS).
func (c *opContext) setDeadline(t time.Time) {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
}

// finish ends the running command: its deadline goes, and it reports
// whether the context was canceled, which the connection then replaces.
func (c *opContext) finish() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline = time.Time{}
	if c.timerSet {
		c.timer.Stop()
		c.timerSet = false
	}
	return c.err != nil
}

// release lets go of the context's timer and its watch of the server's.
func (c *opContext) release() {
	c.stopParent()
	c.mu.Lock()
	if c.timer != nil {
		c.timer.Stop()
	}
	c.mu.Unlock()
}

// cancel cancels the context with err (Canceled or DeadlineExceeded) and
// cause, unless it already is, and tells its children.
func (c *opContext) cancel(err, cause error) {
	c.mu.Lock()
	afters := c.cancelLocked(err, cause)
	c.mu.Unlock()
	for f := range afters {
		(*f)()
	}
}

// cancelLocked is cancel under c.mu; the caller calls the children's
// functions it returns once it has let go of c.mu.
func (c *opContext) cancelLocked(err, cause error) map[*func()]struct{} {
	if c.err != nil {
		return nil
	}
	c.err, c.cause = err, cause
	if c.done != nil {
		close(c.done)
	}
	afters := c.afters
	c.afters = nil
	return afters
}

// armLocked sets the timer for the deadline, if the command has one and
// it is not yet set.
func (c *opContext) armLocked() {
	if c.timerSet || c.err != nil || c.deadline.IsZero() {
		return
	}
	d := time.Until(c.deadline)
	if c.timer == nil {
		c.timer = time.AfterFunc(d, c.expire)
	} else {
		c.timer.Reset(d)
	}
	c.timerSet = true
}

// expire cancels the context when the deadline has passed. A timer that
// finish could not stop in time may fire for an earlier command, whose
// deadline is gone: the check and the cancellation are one step under
// c.mu, lest the next command be canceled for it.
func (c *opContext) expire() {
	c.mu.Lock()
	var afters map[*func()]struct{}
	if !c.deadline.IsZero() && !time.Now().Before(c.deadline) {
		afters = c.cancelLocked(context.DeadlineExceeded, context.DeadlineExceeded)
	}
	c.mu.Unlock()
	for f := range afters {
		(*f)()
	}
}

// Deadline is the running command's deadline (context.Context).
func (c *opContext) Deadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deadline, !c.deadline.IsZero()
}

// Done is closed once the context is canceled (context.Context).
func (c *opContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.err != nil {
			close(c.done)
		}
	}
	c.armLocked()
	return c.done
}

// Err is nil until the context is canceled, then Canceled or
// DeadlineExceeded (context.Context).
func (c *opContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armLocked()
	return c.err
}

// Value is the context itself for opContextKey, and nil for any other key:
// the server's context carries no values (context.Context).
func (c *opContext) Value(key any) any {
	if key == (opContextKey{}) {
		return c
	}
	return nil
}

// opContextKey finds a command's opContext under the contexts made from it.
type opContextKey struct{}

// contextCause is context.Cause, which cannot see an opContext's cause:
// why ctx was canceled, killOp's or the client's leaving error, or its
// error.
func contextCause(ctx context.Context) error {
	if c, ok := ctx.Value(opContextKey{}).(*opContext); ok {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.cause != nil {
			return c.cause
		}
	}
	return context.Cause(ctx)
}

// AfterFunc calls f once the context is canceled; stop undoes that if f
// has not run. Package context finds it to tell a child context made
// with context.WithCancel and the like.
func (c *opContext) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		go f()
		return func() bool { return false }
	}
	c.armLocked()
	if c.afters == nil {
		c.afters = make(map[*func()]struct{})
	}
	key := &f
	c.afters[key] = struct{}{}
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.afters[key]
		delete(c.afters, key)
		return ok
	}
}
