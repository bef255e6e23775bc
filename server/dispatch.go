package server

import (
	"context"
	"errors"
	"math"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/lethedb/lethe/apiversion"
	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/failpoint"
	"github.com/lethedb/lethe/mongoerr"
)

// dispatch runs the command in req.Body, whose first field, key, names it
// cmd (nil for none), and returns the reply document. It never fails:
// errors and panics of the handler become error replies. req.DB and
// req.generic must be set; start is when the command began.
func (s *Server) dispatch(ctx context.Context, cmd *commandDef, key []byte, req *Request, start time.Time) bson.Raw {
	if cmd == nil {
		req.Name = string(key)
		s.stats.Count("") // an unknown command counts as a command
		return req.ErrorReply(mongoerr.New(mongoerr.CommandNotFound, "no such command: '%s'", key))
	}
	req.Name = cmd.spelling(key)
	// Requests are reused: no transaction fields of the last command.
	req.hasTxnNumber, req.inTxn, req.startTxn, req.txnSess = false, false, false, nil
	s.stats.Count(cmd.name)
	if cmd.adminOnly && req.DB != "admin" {
		return req.ErrorReply(mongoerr.New(mongoerr.Unauthorized, "%s may only be run against the admin database.", req.Name))
	}

	debug := s.log.Core().Enabled(zapcore.DebugLevel)
	var reply bson.Raw
	// The API parameters are checked before authorization, as by MongoDB.
	err := apiversion.Check(cmd.name, req.Body)
	if err == nil && s.cfg.Auth {
		err = s.authorize(ctx, cmd, req)
	}
	if err == nil {
		err = s.useSession(ctx, cmd, req)
	}
	if err == nil {
		reply, err = s.run(ctx, cmd, req, start)
	}
	s.recordLatency(cmd.name, req, time.Since(start))
	s.noteAuthCatalogChange(cmd, req)
	if err != nil {
		e, internal := command.AsMongoError(err)
		if internal {
			s.log.Error("command failed", zap.String("command", req.Name), zap.Int64("conn", req.Conn.id), zap.Error(err))
		}
		reply = req.ErrorReply(s.labelError(cmd, req, e))
	} else {
		reply = s.failCommandAfter(cmd, req, reply)
	}
	if s.clustered() {
		reply = s.afterAsMember(cmd, req, reply, err == nil)
	}
	if debug {
		s.log.Debug("command", zap.String("command", req.Name), zap.String("db", req.DB),
			zap.Int64("conn", req.Conn.id), zap.Duration("duration", time.Since(start)), zap.Error(err))
	}
	return reply
}

// run calls the handler under the command's maxTimeMS, counted from start,
// turning a panic into an InternalError so that one bad request does not
// take the server down.
func (s *Server) run(ctx context.Context, cmd *commandDef, req *Request, start time.Time) (reply bson.Raw, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("command panicked", zap.String("command", req.Name), zap.Int64("conn", req.Conn.id),
				zap.Any("panic", p), zap.StackSkip("stack", 2))
			reply, err = nil, mongoerr.New(mongoerr.InternalError, "internal error running %s: %v", req.Name, p)
		}
	}()
	limit, err := maxTimeOf(cmd.name, req.generic.maxTimeMS)
	if err != nil {
		return nil, err
	}
	oc, _ := ctx.(*opContext)
	if limit > 0 {
		if oc != nil {
			oc.setDeadline(start.Add(limit)) // until the connection's finish
		} else {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, start.Add(limit))
			defer cancel()
		}
	}
	if s.clustered() {
		err = s.beforeAsMember(ctx, cmd, req)
	}
	// The session is checked out for the whole command, fail point
	// included: mongod's failCommand fails a statement inside its
	// transaction, which then aborts.
	var co *checkedOut
	finished := false
	if err == nil {
		ctx, co, err = s.checkOut(ctx, cmd, req)
	}
	if co != nil {
		defer func() {
			if !finished && co.began {
				co.sess.StatementFailed() // the handler panicked
			}
			co.sess.CheckIn()
		}()
	}
	if err == nil {
		err = s.failCommandBefore(ctx, cmd, req)
	}
	if err == nil {
		ctx, err = s.beginSnapshotRead(ctx, req)
	}
	if err == nil {
		reply, err = cmd.handle(ctx, req)
	}
	reply = s.endSnapshotRead(req, reply, err)
	if co != nil {
		reply, err = statementDone(co, cmd, reply, err)
	}
	finished = true
	if err != nil && errors.Is(err, context.Canceled) {
		// Canceled by killOp or the client leaving: say which.
		if e, ok := mongoerr.As(contextCause(ctx)); ok {
			err = e
		}
	}
	return reply, err
}

// maxTime returns the command's maxTimeMS, 0 meaning no limit. The checks
// and their order are those of MongoDB 7's parser: any numeric type, its
// integer part within [0, MaxInt32], and no fraction for a double.
// aggregate and getMore declare maxTimeMS in their IDL as a safeInt64, so
// their own parser sees it first (idlMaxTime).
func maxTime(cmd string, body bson.Raw) (time.Duration, error) {
	return maxTimeOf(cmd, body.Lookup("maxTimeMS"))
}

// maxTimeOf is maxTime of the value of maxTimeMS, Type 0 for none.
func maxTimeOf(cmd string, raw bson.RawValue) (time.Duration, error) {
	if raw.Type == 0 {
		return 0, nil
	}
	if err := idlMaxTime(cmd, raw); err != nil {
		return 0, err
	}
	v := bsoncore.Value{Type: bsoncore.Type(raw.Type), Data: raw.Value}
	var ms float64
	switch v.Type {
	case bsoncore.TypeInt32:
		ms = float64(v.Int32())
	case bsoncore.TypeInt64:
		ms = float64(v.Int64())
	case bsoncore.TypeDouble:
		ms = v.Double()
	case bsoncore.TypeDecimal128:
		ms = command.DecimalToFloat(bson.NewDecimal128(v.Decimal128()))
	default:
		return 0, mongoerr.New(mongoerr.BadValue, "maxTimeMS must be a number")
	}
	n := command.SaturatingInt64(ms)
	if n < 0 || n > math.MaxInt32 {
		return 0, mongoerr.New(mongoerr.BadValue, "%d value for maxTimeMS is out of range", n)
	}
	if v.Type == bsoncore.TypeDouble && ms != math.Trunc(ms) {
		return 0, mongoerr.New(mongoerr.BadValue, "maxTimeMS has non-integral value")
	}
	return time.Duration(n) * time.Millisecond, nil
}

// idlMaxTime applies the checks of the commands whose IDL declares maxTimeMS
// as a safeInt64, which their own parser applies before the generic one: a
// wrong type is TypeMismatch rather than BadValue, and aggregate, whose
// field has the validator "gte: 0", refuses a negative value with the
// validator's code (src/mongo/db/pipeline/aggregate_command.idl,
// src/mongo/db/query/getmore_command.idl). find's IDL type for it,
// maxTimeMS, is deserialized by parseMaxTimeMS itself (find_command.idl),
// so find answers like any other command.
func idlMaxTime(cmd string, v bson.RawValue) error {
	switch cmd {
	case "aggregate":
		_, err := command.NonNegative(cmd, "maxTimeMS", v)
		return err
	case "getMore":
		_, err := command.Int64(cmd, "maxTimeMS", v)
		return err
	}
	return nil
}

// spelling returns the name the client used, key, as one of the command's
// own strings, which spares an allocation.
func (c *commandDef) spelling(key []byte) string {
	if string(key) == c.name {
		return c.name
	}
	for _, a := range c.aliases {
		if string(key) == a {
			return a
		}
	}
	return string(key)
}

// failCommandBefore applies the failCommand fail point before the
// command runs (package failpoint); its data stays on the request for
// the reply's labels and writeConcernError.
func (s *Server) failCommandBefore(ctx context.Context, cmd *commandDef, req *Request) error {
	req.failed = nil
	if !s.failCommand.On() {
		return nil
	}
	d, closeConn, err := s.failCommand.Before(ctx, &req.Request, failpoint.Target{Name: cmd.name,
		Names: func(name string) bool { return s.commands[name] == cmd }, AppName: req.Conn.appName, ConnID: req.Conn.id})
	req.failed = d
	if closeConn {
		req.closeConn = true
	}
	return err
}

// failCommandAfter adds failCommand's writeConcernError to a command's
// successful reply, with the labels MongoDB gives it.
func (s *Server) failCommandAfter(cmd *commandDef, req *Request, reply bson.Raw) bson.Raw {
	return req.failed.AddWriteConcernError(reply, func(code mongoerr.Code) []string { return s.labelsOf(cmd, req, code, true) })
}

// labelRetryableWriteError is the label of an error after which a
// retryable write may be retried.
const labelRetryableWriteError = "RetryableWriteError"

// retryableCodes are the codes a retryable write may be retried after, as
// the retryable writes specification lists them.
var retryableCodes = map[mongoerr.Code]bool{
	6: true, 7: true, 89: true, 91: true, 189: true, 262: true, 9001: true,
	10107: true, 11600: true, 11602: true, 13435: true, 13436: true,
}

// nonResumableCodes are the codes of MongoDB's NonResumableChangeStreamError
// category (src/mongo/base/error_codes.yml): mongod labels any reply with
// them so (ErrorLabelBuilder::build in error_labels.cpp), and drivers do
// not resume a change stream after them.
var nonResumableCodes = map[mongoerr.Code]bool{
	mongoerr.ChangeStreamFatalError: true, mongoerr.ChangeStreamHistoryLost: true,
}

const labelNonResumableChangeStream = "NonResumableChangeStreamError"

// errorLabels are the labels of a command's error with code: failCommand's,
// when it set some, else mongod's (ErrorLabelBuilder in error_labels.cpp):
// TransientTransactionError for a transaction's statement, commit or abort
// that may be run again whole, else RetryableWriteError for a retryable
// code of a retryable write, or of a transaction's commit or abort, and
// NonResumableChangeStreamError for its codes.
func (s *Server) errorLabels(cmd *commandDef, req *Request, code mongoerr.Code) []string {
	return s.labelsOf(cmd, req, code, false)
}

// labelsOf is errorLabels of a command's error, or (wc) of the
// writeConcernError of a command that succeeded.
func (s *Server) labelsOf(cmd *commandDef, req *Request, code mongoerr.Code, wc bool) []string {
	if d := req.failed; d != nil {
		if labels, ok := d.Labels(); ok {
			return labels
		}
	}
	_, txnErr := req.Body.LookupErr("txnNumber")
	_, autoErr := req.Body.LookupErr("autocommit")
	hasTxnNumber, inTxn := txnErr == nil, txnErr == nil && autoErr == nil
	commitOrAbort := cmd.name == "commitTransaction" || cmd.name == "abortTransaction"
	// A writeConcernError comes with no error of the command: mongod's
	// transient check needs one.
	if inTxn && !wc && isTransientTransactionError(code, false, commitOrAbort) {
		return []string{labelTransientTransactionError}
	}
	retryableWrite := hasTxnNumber && !inTxn && writeCommandNames[cmd.name]
	if (retryableWrite || inTxn && commitOrAbort) && retryableCodes[code] {
		return []string{labelRetryableWriteError}
	}
	if nonResumableCodes[code] {
		return []string{labelNonResumableChangeStream}
	}
	return nil
}

// labelTransientTransactionError marks an error after which a driver runs
// the whole transaction again.
const labelTransientTransactionError = "TransientTransactionError"

// labelError gives e the labels errorLabels decides.
func (s *Server) labelError(cmd *commandDef, req *Request, e *mongoerr.Error) *mongoerr.Error {
	labels := s.errorLabels(cmd, req, e.Code)
	if len(labels) == 0 {
		return e
	}
	labelled := *e
	labelled.Labels = labels
	return &labelled
}
