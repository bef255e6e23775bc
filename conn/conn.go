package conn

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/tlsnet"
	"github.com/lethedb/lethe/wire"
)

const (
	// readBufferSize is the bufio size per connection: most requests arrive
	// whole in one read.
	readBufferSize = 8 << 10
	// codeMissingDB is MongoDB's code for an OP_MSG without $db.
	codeMissingDB mongoerr.Code = 40571
	// maxKeptBuffer bounds the buffers a connection keeps between requests,
	// so that one large message does not pin its memory for the life of an
	// idle connection.
	maxKeptBuffer = 1 << 20
	// growFrom is the declared message size above which the read buffer
	// grows as the bytes arrive rather than all at once, so that a header
	// declaring 48 MB and then nothing costs little.
	growFrom = 64 << 10
	// maxKeptSequences bounds the document sequence identifiers whose
	// slices a connection keeps: the commands send one. maxKeptDocs bounds
	// the length of each.
	maxKeptSequences = 4
	maxKeptDocs      = 1024
)

// What a connection waits for, which names the timeout that ends it.
const (
	waitFirst   = iota // the first message after connecting
	waitIdle           // the next message
	waitMessage        // the rest of a message
)

// errShuttingDown ends a connection's read when the server is shutting down.
var errShuttingDown = errors.New("server shutting down")

// Conn is one client connection, served by its own goroutine. Only that
// goroutine touches its fields, so the request path takes no locks, except
// the reader, which watchPeer borrows while a long command runs (see
// watch.go).
type Conn struct {
	id int64
	l  *Listener
	h  Handler
	nc net.Conn
	// vectored says nc writes net.Buffers with one system call (send).
	vectored bool
	remote   string
	rd       *bufio.Reader

	in    []byte // the frame being served; reused
	out   []byte // the reply frame; reused
	req   Request
	dec   wire.Message // the request, decoded; reused
	msg   wire.Msg     // the reply; reused
	seqs  map[string][]bson.Raw
	db    string // the last $db seen, kept to spare a string per request
	reqID int32  // the last requestID this side used

	// compressors are the ones the client offered in hello and this server
	// accepted, in the client's order of preference.
	compressors []wire.Compressor

	waiting      int       // waitFirst, waitIdle or waitMessage
	readDeadline time.Time // the one last set, to spare setting it again
	// writeFresh says that the write deadline leaves at least the
	// message timeout, until the freshen timer clears it (see write).
	writeFresh atomic.Bool
	freshen    *time.Timer

	// The peer watch (watch.go): watch starts watchPeer once a command
	// runs long; watchArmed says it is set or firing; watchState is the
	// running command's; cmdSeq counts the commands, and watchSeen is the
	// one the timer saw last; watchDone is watchPeer's end, one token per
	// start.
	watch      *time.Timer
	watchArmed atomic.Bool
	watchState atomic.Int32
	cmdSeq     atomic.Uint64
	watchSeen  atomic.Uint64
	watchDone  chan struct{}
}

func newConn(l *Listener, nc net.Conn, id int64) *Conn {
	// Over TCP, net.Buffers are one writev; other connections (TLS) would
	// write each buffer apart.
	_, vectored := nc.(*net.TCPConn)
	return &Conn{id: id, l: l, nc: nc, vectored: vectored, remote: nc.RemoteAddr().String(), rd: bufio.NewReaderSize(nc, readBufferSize)}
}

// ID is the connectionId that hello reports.
func (c *Conn) ID() int64 { return c.id }

// RemoteAddr is the client's address, host:port.
func (c *Conn) RemoteAddr() string { return c.remote }

// serve reads and answers requests until the client leaves, a frame cannot
// be read or decoded, or the server shuts down.
func (c *Conn) serve() {
	l := c.l
	reason := "client closed the connection"
	defer func() {
		// Handlers have their own recovery; this one catches a bug in
		// decoding or encoding, which costs only this connection.
		if p := recover(); p != nil {
			l.log.Error("connection panicked", zap.Int64("conn", c.id), zap.String("remote", c.remote),
				zap.Any("panic", p), zap.Stack("stack"))
			reason = "internal error"
		}
		c.stopWatch()
		if c.freshen != nil {
			c.freshen.Stop()
		}
		l.closeConn(c, reason)
	}()
	c.startWatch()
	c.h = l.d.Open(c)
	for !l.closing.Load() {
		frame, err := c.readFrame()
		if err != nil {
			reason = c.readFailed(err)
			return
		}
		c.in = frame
		if reason = c.serveFrame(frame); reason != "" {
			return
		}
		c.shrinkBuffers()
		c.h.Trim()
	}
	reason = "server shutting down"
}

// readFrame waits for the next message and reads it, under the
// connection's timeouts: a new connection must send its first message
// within MessageTimeout, an idle one is closed after IdleTimeout unless it
// has open cursors, and a message must arrive whole within MessageTimeout
// of its first byte.
func (c *Conn) readFrame() ([]byte, error) {
	cfg := &c.l.cfg
	if c.rd.Buffered() == 0 {
		var deadline time.Time
		switch {
		case c.waiting == waitFirst:
			if cfg.MessageTimeout > 0 {
				deadline = time.Now().Add(cfg.MessageTimeout)
			}
		case cfg.IdleTimeout > 0 && !c.h.HoldsCursors():
			c.waiting = waitIdle
			deadline = time.Now().Add(cfg.IdleTimeout)
		default:
			c.waiting = waitIdle
		}
		if err := c.setReadDeadline(deadline); err != nil {
			return nil, err
		}
		if _, err := c.rd.Peek(1); err != nil {
			if errors.Is(err, io.EOF) {
				return nil, io.EOF
			}
			return nil, fmt.Errorf("server: waiting for a message: %w", err)
		}
		if c.waiting == waitFirst {
			c.logTLS()
		}
	}
	c.waiting = waitMessage
	if frame, ok := c.bufferedFrame(); ok {
		return frame, nil
	}
	var deadline time.Time
	if cfg.MessageTimeout > 0 {
		deadline = time.Now().Add(cfg.MessageTimeout)
	}
	if err := c.setReadDeadline(deadline); err != nil {
		return nil, err
	}
	if head, err := c.rd.Peek(4); err == nil {
		if n := int32(binary.LittleEndian.Uint32(head)); n > growFrom && int(n) > cap(c.in) && n <= wire.MaxMessageSize {
			return c.readGrowing(int(n))
		}
	}
	_, frame, err := wire.ReadFrame(c.rd, wire.MaxMessageSize, c.in)
	return frame, err
}

// bufferedFrame takes the next frame out of the read buffer when it is
// there whole, as most requests are after the read that brought their first
// byte: it needs no message deadline, whose setting costs a runtime timer
// update, and no further read. The frame is copied to c.in because the
// peer watch may refill the read buffer while the command runs.
func (c *Conn) bufferedFrame() ([]byte, bool) {
	n := c.rd.Buffered()
	if n < wire.HeaderLen {
		return nil, false
	}
	buf, _ := c.rd.Peek(n) // buffered bytes: no read
	size := int(int32(binary.LittleEndian.Uint32(buf)))
	if size < wire.HeaderLen || size > n {
		return nil, false // ReadFrame reads the rest, or refuses the header
	}
	c.in = append(c.in[:0], buf[:size]...)
	c.rd.Discard(size)
	return c.in, true
}

// readGrowing reads a frame of n bytes into c.in, growing it as the bytes
// arrive. The frame's header is checked when it is decoded.
func (c *Conn) readGrowing(n int) ([]byte, error) {
	buf := c.in[:0]
	for len(buf) < n {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(n, max(2*cap(buf), growFrom))-len(buf))
		}
		m, err := c.rd.Read(buf[len(buf):min(cap(buf), n)])
		buf = buf[:len(buf)+m]
		if err != nil && len(buf) < n {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			c.in = buf[:0]
			return nil, fmt.Errorf("server: reading a message of %d bytes, %d arrived: %w", n, len(buf), err)
		}
	}
	return buf, nil
}

// setReadDeadline sets the connection's read deadline, the zero time
// meaning none, unless the server is shutting down: Shutdown's own deadline
// then stays and the read ends.
func (c *Conn) setReadDeadline(t time.Time) error {
	if !t.Equal(c.readDeadline) {
		c.nc.SetReadDeadline(t)
		c.readDeadline = t
	}
	if c.l.closing.Load() {
		return errShuttingDown
	}
	return nil
}

// readFailed logs why no frame could be read and returns the reason the
// connection ends.
func (c *Conn) readFailed(err error) string {
	timeout := errors.Is(err, os.ErrDeadlineExceeded)
	switch {
	case errors.Is(err, io.EOF):
		return "client closed the connection"
	case errors.Is(err, tlsnet.ErrPlainRefused):
		return "plain connection while TLS is required" // tlsnet logged it
	case errors.Is(err, errShuttingDown),
		c.l.closing.Load() && (timeout || errors.Is(err, net.ErrClosed)):
		return "server shutting down"
	case timeout && c.waiting == waitFirst:
		c.warn("closing connection: no message within the message timeout of connecting", err)
		return "no first message"
	case timeout && c.waiting == waitIdle:
		c.l.log.Info("closing idle connection", zap.Int64("conn", c.id), zap.String("remote", c.remote),
			zap.Duration("idleTimeout", c.l.cfg.IdleTimeout))
		return "idle"
	case timeout:
		c.warn("closing connection: message incomplete after the message timeout", err)
		return "message timed out"
	case errors.Is(err, io.ErrUnexpectedEOF):
		c.warn("closing connection: message truncated", err)
		return "truncated message"
	case errors.Is(err, wire.ErrMessageTooLarge), errors.Is(err, wire.ErrMalformed):
		c.warn("closing connection: bad message header", err)
		return "bad message header"
	}
	c.warn("closing connection: read failed", err)
	return "read failed"
}

// serveFrame answers one frame. It returns why the connection must close, or
// "" to go on.
func (c *Conn) serveFrame(frame []byte) string {
	st := c.l.traffic
	st.BytesIn.Add(int64(len(frame)))
	st.Requests.Add(1)
	m := &c.dec
	if err := wire.DecodeInto(m, frame); err != nil {
		if !errors.Is(err, wire.ErrInvalidBSON) {
			c.warn("closing connection: bad message", err)
			return "bad message"
		}
		// The frame boundaries are sound, so the connection can go on after
		// an error reply.
		c.warn("invalid BSON in request", err)
		return c.replyInvalidBSON(frame, err)
	}
	if m.Compressor != wire.CompressorNoop {
		// An OP_COMPRESSED holds the uncompressed size of the message after
		// its own header and the original opcode.
		size := int64(wire.HeaderLen) + int64(binary.LittleEndian.Uint32(frame[wire.HeaderLen+4:]))
		st.decompressed(m.Compressor, int64(len(frame)), size)
	}
	switch {
	case m.Msg != nil:
		return c.serveMsg(m)
	case m.Query != nil:
		return c.serveQuery(m)
	}
	c.warn("closing connection: unexpected message", errors.New("clients do not send "+m.Header.OpCode.String()))
	return "unexpected message"
}

func (c *Conn) serveMsg(m *wire.Message) string {
	msg := m.Msg
	req := &c.req
	req.Body = bson.Raw(msg.Body)
	req.Sequences = nil
	if len(msg.Sequences) > 0 {
		c.setSequences(msg.Sequences)
		req.Sequences = c.seqs
	}

	req.ExhaustAllowed = msg.Flags&wire.FlagExhaustAllowed != 0 && msg.Flags&wire.FlagMoreToCome == 0
	req.StreamFrom = -1
	responseTo := m.Header.RequestID
	for {
		var reply Reply
		if err := c.setDB(msg.Body); err != nil {
			reply = Reply{Doc: c.h.ErrorReply(err), StreamNext: -1}
		} else {
			reply = c.dispatch(req)
		}
		if reply.Close {
			return closedByHandler
		}
		if msg.Flags&wire.FlagMoreToCome != 0 {
			return "" // the client asked for no reply
		}
		// An awaitable hello with exhaustAllowed streams: each reply says
		// moreToCome, answers the one before it, and the next is the same
		// request waiting from the topology the last reply reported.
		more := reply.StreamNext >= 0 && !c.l.closing.Load()
		if reason := c.replyMsg(m, responseTo, reply.Doc, more); reason != "" || !more {
			return reason
		}
		responseTo = c.reqID
		req.StreamFrom = reply.StreamNext
	}
}

// setSequences fills c.seqs with seqs. Its slices are kept from one request
// to the next, emptied by shrinkBuffers rather than dropped, so that the
// next insert's documents go into the last one's slice; an identifier
// absent from seqs reads as an empty list, as a missing key does. A client
// sending many identifiers only makes the map start again.
func (c *Conn) setSequences(seqs []wire.Sequence) {
	if c.seqs == nil || len(c.seqs) > maxKeptSequences {
		c.seqs = make(map[string][]bson.Raw, len(seqs))
	}
	for _, seq := range seqs {
		docs := c.seqs[seq.Identifier]
		for _, d := range seq.Documents {
			docs = append(docs, bson.Raw(d))
		}
		c.seqs[seq.Identifier] = docs
	}
}

// replyMsg sends reply to the OP_MSG m as the answer to message
// responseTo, with moreToCome when more replies follow without a request.
func (c *Conn) replyMsg(m *wire.Message, responseTo int32, reply bson.Raw, more bool) string {
	c.msg.Flags = m.Msg.Flags & wire.FlagChecksumPresent
	if more {
		c.msg.Flags |= wire.FlagMoreToCome
	}
	c.msg.Body = bsoncore.Document(reply)
	if c.vectored && len(reply) >= minVectoredReply && c.msg.Flags&wire.FlagChecksumPresent == 0 && !c.compresses(m.Compressor) {
		// A large reply, a batch of documents, goes out from where it was
		// built, behind its prefix, in one writev: copying it into the
		// frame cost a twentieth of a scan's CPU (YCSB E).
		c.out = wire.AppendMsgPrefix(c.out[:0], c.nextRequestID(), responseTo, c.msg.Flags, len(reply))
		return c.send(c.out, reply)
	}
	c.out = wire.AppendMsg(c.out[:0], c.nextRequestID(), responseTo, &c.msg)
	return c.write(m.Compressor)
}

// minVectoredReply is the size from which a reply is sent from its own
// buffer (replyMsg): below it, a copy costs less than a second buffer in
// the system call.
const minVectoredReply = 16 << 10

// setDB sets the request's database from the body's $db field, which
// OP_MSG requires.
func (c *Conn) setDB(body bsoncore.Document) *mongoerr.Error {
	v, err := body.LookupErr("$db")
	if err != nil {
		return mongoerr.New(codeMissingDB, "OP_MSG requests require a $db argument")
	}
	if v.Type != bsoncore.TypeString {
		return mongoerr.New(mongoerr.TypeMismatch, "BSON field '$db' is the wrong type '%s', expected type 'string'", bsonvalue.TypeName(v.Type))
	}
	// A string value is its length, its bytes and a NUL, validated by the
	// wire layer. Comparing the bytes first spares StringValue's allocation
	// when the database is the same as last time, as it nearly always is.
	if db := v.Data[4 : len(v.Data)-1]; string(db) != c.db {
		c.db = string(db)
	}
	c.req.DB = c.db
	return nil
}

// serveQuery answers an OP_QUERY. MongoDB keeps it only for the first hello
// of drivers that do not yet know the server speaks OP_MSG.
func (c *Conn) serveQuery(m *wire.Message) string {
	q := m.Query
	req := &c.req
	req.Sequences = nil
	req.ExhaustAllowed, req.StreamFrom = false, -1
	body := bson.Raw(q.Query)
	// Some drivers wrap the command as {$query: {...}, $readPreference: ...}.
	if first, err := body.IndexErr(0); err == nil && first.Key() == "$query" {
		if inner, ok := first.Value().DocumentOK(); ok {
			body = inner
		}
	}
	req.Body = body

	var reply bson.Raw
	db, isCmd := strings.CutSuffix(q.FullCollectionName, ".$cmd")
	name := string(bsonvalue.FirstKeyBytes(body))
	switch {
	case !isCmd:
		reply = c.h.ErrorReply(mongoerr.New(mongoerr.UnsupportedOpQueryCommand, "OP_QUERY on %s: only commands on <db>.$cmd are supported", q.FullCollectionName))
	case !handshakeOverQuery(name):
		reply = c.h.ErrorReply(mongoerr.New(mongoerr.UnsupportedOpQueryCommand, "Unsupported OP_QUERY command: %s. The client driver may require an upgrade.", name))
	default:
		req.DB = db
		r := c.dispatch(req)
		if r.Close {
			return closedByHandler
		}
		reply = r.Doc
	}
	c.out = wire.AppendReply(c.out[:0], c.nextRequestID(), m.Header.RequestID,
		&wire.Reply{Documents: []bsoncore.Document{bsoncore.Document(reply)}})
	return c.write(m.Compressor)
}

// replyInvalidBSON answers a request whose documents are not valid BSON with
// InvalidBSON, unless the client asked for no reply.
func (c *Conn) replyInvalidBSON(frame []byte, cause error) string {
	op := wire.OpCode(binary.LittleEndian.Uint32(frame[12:]))
	if op == wire.OpCompressed && len(frame) >= wire.HeaderLen+4 {
		op = wire.OpCode(binary.LittleEndian.Uint32(frame[wire.HeaderLen:]))
	} else if op == wire.OpMsg && len(frame) >= wire.HeaderLen+4 &&
		wire.MsgFlags(binary.LittleEndian.Uint32(frame[wire.HeaderLen:]))&wire.FlagMoreToCome != 0 {
		return ""
	}
	requestID := int32(binary.LittleEndian.Uint32(frame[4:]))
	reply := c.h.ErrorReply(&mongoerr.Error{Code: mongoerr.InvalidBSON, Msg: cause.Error()})
	if op == wire.OpQuery {
		c.out = wire.AppendReply(c.out[:0], c.nextRequestID(), requestID,
			&wire.Reply{Documents: []bsoncore.Document{bsoncore.Document(reply)}})
	} else {
		c.msg.Flags = 0
		c.msg.Body = bsoncore.Document(reply)
		c.out = wire.AppendMsg(c.out[:0], c.nextRequestID(), requestID, &c.msg)
	}
	return c.write(wire.CompressorNoop)
}

// write sends the reply frame in c.out, compressed with comp when the
// request came compressed with it and hello negotiated it.
func (c *Conn) write(comp wire.Compressor) string {
	frame := c.out
	if c.compresses(comp) {
		compressed, err := wire.Compress(frame, comp)
		if err != nil {
			c.warn("closing connection: compress reply", err)
			return "compression failed"
		}
		c.l.traffic.compressed(comp, int64(len(frame)), int64(len(compressed)))
		frame = compressed
	}
	return c.send(frame, nil)
}

// compresses reports whether a reply to a request that came with comp is
// compressed.
func (c *Conn) compresses(comp wire.Compressor) bool {
	return comp != wire.CompressorNoop && c.negotiated(comp)
}

// send writes frame and then rest, if any, as one message: with one writev
// on a connection that has it (vectored).
func (c *Conn) send(frame, rest []byte) string {
	if limit := c.l.cfg.MessageTimeout; limit > 0 && !c.writeFresh.Load() {
		// Setting a deadline costs a runtime timer update and reading
		// the clock, which is slow on some virtual machines. It is set
		// to the limit and an eighth, and again only once an eighth has
		// passed, when writeFresh says so: a reply the client does not
		// take is cut off between the limit and 9/8 of it.
		c.nc.SetWriteDeadline(time.Now().Add(limit + limit/8))
		c.writeFresh.Store(true)
		if c.freshen == nil {
			c.freshen = time.AfterFunc(limit/8, func() { c.writeFresh.Store(false) })
		} else {
			c.freshen.Reset(limit / 8)
		}
	}
	var err error
	if rest == nil {
		_, err = c.nc.Write(frame)
	} else {
		bufs := net.Buffers{frame, rest}
		_, err = bufs.WriteTo(c.nc)
	}
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			c.warn("closing connection: reply not taken within the message timeout", err)
			return "reply timed out"
		}
		c.l.log.Debug("write failed", zap.Int64("conn", c.id), zap.String("remote", c.remote), zap.Error(err))
		return "write failed"
	}
	c.l.traffic.BytesOut.Add(int64(len(frame) + len(rest)))
	return ""
}

func (c *Conn) nextRequestID() int32 {
	c.reqID++
	return c.reqID
}

// shrinkBuffers drops buffers grown by an unusually large message, and
// lets go of what the last request pointed into.
func (c *Conn) shrinkBuffers() {
	if cap(c.in) > maxKeptBuffer {
		c.in = nil
	}
	// The slices of the last request's sequences, kept for the next one,
	// must not keep its frame from the collector (it may have been
	// decompressed into a buffer of its own).
	if msg := c.dec.Msg; msg != nil {
		for i := range msg.Sequences {
			msg.Sequences[i].Documents = keptDocs(msg.Sequences[i].Documents)
		}
	}
	for id, docs := range c.seqs {
		c.seqs[id] = keptDocs(docs)
	}
	if cap(c.out) > maxKeptBuffer {
		c.out = nil
	}
}

// keptDocs is docs emptied, to be refilled by the next request, or nil when
// a large batch grew it.
func keptDocs[D ~[]byte](docs []D) []D {
	if cap(docs) > maxKeptDocs {
		return nil
	}
	clear(docs)
	return docs[:0]
}

func (c *Conn) warn(msg string, err error) {
	c.l.log.Warn(msg, zap.Int64("conn", c.id), zap.String("remote", c.remote), zap.Error(err))
}

// handshakeOverQuery reports whether the command may come as OP_QUERY.
func handshakeOverQuery(name string) bool {
	return name == "hello" || name == "isMaster" || name == "ismaster"
}

// closedByHandler is why a connection ends when its handler asks to close
// it rather than reply: the failCommand fail point's closeConnection.
const closedByHandler = "closed by the failCommand fail point"
