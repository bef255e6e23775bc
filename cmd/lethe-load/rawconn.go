package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/xdg-go/scram"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/wire"
)

// A rawConn speaks the wire protocol over one TCP connection without the
// driver, for the workloads that time connection setup itself: the driver
// would add its server monitor's connections and its pool's bookkeeping to
// every measurement, and would pay the client's PBKDF2 cost where a load
// generator should not (see auth-failures).
type rawConn struct {
	conn  net.Conn
	buf   []byte
	reqID int32
}

// dialRaw connects to addr, from the loopback address local when it is set,
// with every exchange on the connection bounded by opTimeout.
func dialRaw(ctx context.Context, addr string, local net.IP) (*rawConn, error) {
	d := net.Dialer{Timeout: opTimeout}
	if local != nil {
		d.LocalAddr = &net.TCPAddr{IP: local}
	}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	if err := c.SetDeadline(time.Now().Add(opTimeout)); err != nil {
		c.Close()
		return nil, err
	}
	return &rawConn{conn: c}, nil
}

func (r *rawConn) close() error { return r.conn.Close() }

// commandError is a reply with ok: 0.
type commandError struct {
	code     int32
	codeName string
	msg      string
}

func (e *commandError) Error() string {
	return fmt.Sprintf("%s (%d): %s", e.codeName, e.code, e.msg)
}

// codeAuthenticationFailed is MongoDB's AuthenticationFailed.
const codeAuthenticationFailed = 18

// command sends body as an OP_MSG and returns the reply's body, or a
// *commandError when the reply says ok: 0. The reply aliases the
// connection's buffer: it is valid until the next command.
func (r *rawConn) command(body bsoncore.Document) (bsoncore.Document, error) {
	r.reqID++
	r.buf = wire.AppendMsg(r.buf[:0], r.reqID, 0, &wire.Msg{Body: body})
	if _, err := r.conn.Write(r.buf); err != nil {
		return nil, fmt.Errorf("send %s: %w", body.Index(0).Key(), err)
	}
	_, frame, err := wire.ReadFrame(r.conn, wire.MaxMessageSize, r.buf[:0])
	if err != nil {
		return nil, fmt.Errorf("reply to %s: %w", body.Index(0).Key(), err)
	}
	r.buf = frame
	m, err := wire.Decode(frame)
	if err != nil {
		return nil, fmt.Errorf("reply to %s: %w", body.Index(0).Key(), err)
	}
	if m.Msg == nil {
		return nil, fmt.Errorf("reply to %s is a %v, not an OP_MSG", body.Index(0).Key(), m.Header.OpCode)
	}
	reply := m.Msg.Body
	if ok, _ := reply.Lookup("ok").AsFloat64OK(); ok != 1 {
		e := &commandError{}
		e.code, _ = reply.Lookup("code").AsInt32OK()
		e.codeName, _ = reply.Lookup("codeName").StringValueOK()
		e.msg, _ = reply.Lookup("errmsg").StringValueOK()
		return nil, e
	}
	return reply, nil
}

// hello is the handshake without credentials.
func (r *rawConn) hello() error {
	_, err := r.command(bsoncore.NewDocumentBuilder().
		AppendInt32("hello", 1).
		AppendString("$db", "admin").
		Build())
	return err
}

// scramLogin authenticates as the user of client on admin with
// SCRAM-SHA-256 the way drivers do: the first step speculatively in hello
// (asking for the user's mechanisms too), then saslContinue with the proof,
// skipping the empty last exchange. A rejected proof is returned as the
// server's *commandError.
func (r *rawConn) scramLogin(client *scram.Client, user string) error {
	conv := client.NewConversation()
	first, err := conv.Step("")
	if err != nil {
		return fmt.Errorf("scram client-first: %w", err)
	}
	saslStart := bsoncore.NewDocumentBuilder().
		AppendInt32("saslStart", 1).
		AppendString("mechanism", "SCRAM-SHA-256").
		AppendBinary("payload", 0, []byte(first)).
		AppendString("db", "admin").
		AppendDocument("options", bsoncore.NewDocumentBuilder().AppendBoolean("skipEmptyExchange", true).Build()).
		Build()
	reply, err := r.command(bsoncore.NewDocumentBuilder().
		AppendInt32("hello", 1).
		AppendString("saslSupportedMechs", "admin."+user).
		AppendDocument("speculativeAuthenticate", saslStart).
		AppendString("$db", "admin").
		Build())
	if err != nil {
		return err
	}
	spec, ok := reply.Lookup("speculativeAuthenticate").DocumentOK()
	if !ok {
		return errors.New("hello answered without speculativeAuthenticate")
	}
	convID, _ := spec.Lookup("conversationId").AsInt32OK()
	_, serverFirst, ok := spec.Lookup("payload").BinaryOK()
	if !ok {
		return errors.New("speculativeAuthenticate has no payload")
	}
	final, err := conv.Step(string(serverFirst))
	if err != nil {
		return fmt.Errorf("scram client-final: %w", err)
	}
	reply, err = r.command(bsoncore.NewDocumentBuilder().
		AppendInt32("saslContinue", 1).
		AppendInt32("conversationId", convID).
		AppendBinary("payload", 0, []byte(final)).
		AppendString("$db", "admin").
		Build())
	if err != nil {
		return err
	}
	_, serverFinal, ok := reply.Lookup("payload").BinaryOK()
	if !ok {
		return errors.New("saslContinue answered without a payload")
	}
	if _, err := conv.Step(string(serverFinal)); err != nil {
		return fmt.Errorf("scram server-final: %w", err)
	}
	if done, _ := reply.Lookup("done").BooleanOK(); !done {
		return errors.New("saslContinue not done after the proof although skipEmptyExchange was asked for")
	}
	return nil
}
