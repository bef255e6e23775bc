package server

// Multi-document transactions, as drivers run them on a replica-set
// member: the first statement carries lsid, txnNumber, autocommit: false
// and startTransaction: true, the next ones the same without
// startTransaction, and commitTransaction or abortTransaction ends it.
// Package transaction keeps each session's transaction and decides
// whether a statement may start or continue one; here the command and its
// fields are checked first, as mongod's validateSessionOptions and
// CommandHelpers::canUseTransactions do (transaction_validation.cpp,
// commands.cpp), the session is checked out for the command, the
// statement runs in the engine's transaction (engine.WithTransaction),
// and a statement that fails aborts it, as in mongod, so that its commit
// finds NoSuchTransaction. A standalone server refuses any txnNumber
// (checkTxnNumber), as mongod does.

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/oplog"
	"github.com/lethedb/lethe/transaction"
)

func (s *Server) transactionCommands() []commandDef {
	return []commandDef{
		{name: "commitTransaction", handle: s.commitTransaction, adminOnly: true},
		{name: "abortTransaction", handle: s.abortTransaction, adminOnly: true},
	}
}

// allowedInTransaction are the commands a transaction may run, those whose
// allowedInTransactions() is true in mongod 7. create and createIndexes
// work on collections the transaction creates (MongoDB 4.4+; the engine
// refuses an index on an existing collection).
var allowedInTransaction = map[string]bool{
	"find": true, "getMore": true, "killCursors": true, "insert": true, "update": true, "delete": true,
	"findAndModify": true, "aggregate": true, "distinct": true, "create": true, "createIndexes": true,
	"commitTransaction": true, "abortTransaction": true,
}

// stagesNotInTransaction are the aggregation stages whose
// TransactionRequirement is kNotAllowed in mongod: Pipeline::validateCommon
// refuses them in a transaction.
var stagesNotInTransaction = map[string]bool{
	"$out": true, "$merge": true, "$changeStream": true, "$collStats": true, "$indexStats": true,
	"$currentOp": true, "$listLocalSessions": true, "$listSessions": true, "$planCacheStats": true,
	"$listCatalog": true, "$listSearchIndexes": true, "$shardedDataDistribution": true,
}

var writeCommandNames = map[string]bool{"insert": true, "update": true, "delete": true, "findAndModify": true}

// commitTransaction commits the session's transaction: again, with ok, if
// it did already; NoSuchTransaction if it aborted. Outside a transaction
// it fails as mongod's does (txn_cmds.cpp).
func (s *Server) commitTransaction(ctx context.Context, req *Request) (bson.Raw, error) {
	if req.txnSess == nil {
		return nil, mongoerr.New(mongoerr.CommandFailed, "commitTransaction must be run within a transaction")
	}
	if err := req.txnSess.Commit(ctx, s.txnStmt(req)); err != nil {
		return nil, err
	}
	return command.OK()
}

// abortTransaction aborts the session's transaction: TransactionCommitted
// if it committed, NoSuchTransaction if it aborted already.
func (s *Server) abortTransaction(ctx context.Context, req *Request) (bson.Raw, error) {
	if req.txnSess == nil {
		return nil, mongoerr.New(mongoerr.CommandFailed, "abortTransaction must be run within a transaction")
	}
	if err := req.txnSess.Abort(ctx, s.txnStmt(req)); err != nil {
		return nil, err
	}
	return command.OK()
}

// checkTransaction checks a command's autocommit and startTransaction as
// mongod's initializeOperationSessionInfo does, in its order, after the
// txnNumber (checkTxnNumber), and then, in a transaction, the command and
// its fields as validateSessionOptions does. It notes on req what it
// found.
func checkTransaction(cmd *commandDef, req *Request, haveTxnNumber bool) error {
	autocommit, haveAutocommit, err := sessionBool(req.generic.autocommit, "autocommit")
	if err != nil {
		return err
	}
	start, haveStart, err := sessionBool(req.generic.startTransaction, "startTransaction")
	if err != nil {
		return err
	}
	switch {
	case haveAutocommit && !haveTxnNumber:
		return mongoerr.New(mongoerr.InvalidOptions, "'autocommit' field requires a transaction number to also be specified")
	case haveAutocommit && autocommit:
		return mongoerr.New(mongoerr.InvalidOptions, "Specifying autocommit=true is not allowed.")
	case haveStart && !haveAutocommit:
		return mongoerr.New(mongoerr.InvalidOptions, "'startTransaction' field requires 'autocommit' field to also be specified")
	case haveStart && !start:
		return mongoerr.New(mongoerr.InvalidOptions, "Specifying startTransaction=false is not allowed.")
	case !haveAutocommit:
		return nil
	}
	req.inTxn, req.startTxn = true, start
	return checkInTransaction(cmd.name, req)
}

// checkInTransaction refuses what a transaction may not run, with
// mongod's codes and messages: the commands and namespaces of
// canUseTransactions, the first statements of validateSessionOptions, the
// read and write concerns of service_entry_point_common.cpp and
// transaction_validation.cpp, and the aggregation stages of
// Pipeline::validateCommon.
func checkInTransaction(name string, req *Request) error {
	if name == "count" {
		return mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Cannot run 'count' in a multi-document transaction. Please see http://dochub.mongodb.org/core/transaction-count for a recommended alternative.")
	}
	if !allowedInTransaction[name] {
		return mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Cannot run '%s' in a multi-document transaction.", string(bsonvalue.FirstKeyBytes(req.Body)))
	}
	coll, _ := command.FirstValue(req.Body).StringValueOK()
	switch {
	case req.DB == "local":
		return mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Cannot run command against the 'local' database in a transaction.")
	case coll == "system.profile" || coll == "system.views":
		return mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Cannot run command against the '%s.%s' collection in a transaction.", req.DB, coll)
	case req.DB == "config":
		return mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Cannot run command against the config database in a transaction.")
	}
	if req.startTxn {
		switch name {
		case "killCursors":
			return mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Cannot run killCursors as the first operation in a multi-document transaction.")
		case "commitTransaction":
			return mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Cannot start a transaction with a commit")
		case "abortTransaction":
			return mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Cannot start a transaction with an abort")
		}
	}
	if v, err := req.Body.LookupErr("readConcern"); err == nil {
		if !req.startTxn {
			return mongoerr.New(mongoerr.InvalidOptions, "Only the first command in a transaction may specify a readConcern")
		}
		if d, ok := v.DocumentOK(); ok {
			if lv, err := d.LookupErr("level"); err == nil {
				switch lv.StringValue() {
				case "local", "majority", "snapshot":
				default:
					return mongoerr.New(mongoerr.InvalidOptions, "The readConcern level must be either 'local' (default), 'majority' or 'snapshot' in order to run in a transaction")
				}
			}
		}
	}
	if _, err := req.Body.LookupErr("writeConcern"); err == nil && name != "commitTransaction" && name != "abortTransaction" {
		return mongoerr.New(mongoerr.InvalidOptions, "writeConcern is not allowed within a multi-statement transaction")
	}
	if name == "aggregate" {
		return checkStagesInTransaction(req)
	}
	return nil
}

// checkStagesInTransaction refuses an aggregation stage a transaction may
// not run.
func checkStagesInTransaction(req *Request) error {
	v, err := req.Body.LookupErr("pipeline")
	if err != nil {
		return nil // the command's parser says what is wrong
	}
	arr, ok := v.ArrayOK()
	if !ok {
		return nil
	}
	vals, _ := arr.Values()
	for _, st := range vals {
		d, ok := st.DocumentOK()
		if !ok {
			continue
		}
		if name := string(bsonvalue.FirstKeyBytes(d)); stagesNotInTransaction[name] {
			return mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Stage not supported inside of a multi-document transaction: %s", name)
		}
	}
	return nil
}

// sessionBool reads a boolean field of a command's session information.
func sessionBool(v bson.RawValue, field string) (val, ok bool, err error) {
	if v.Type == 0 {
		return false, false, nil
	}
	b, isBool := v.BooleanOK()
	if !isBool {
		return false, false, command.WrongType("OperationSessionInfo", field, v.Type, "bool")
	}
	return b, true, nil
}

// txnStmt describes req's transaction fields for package transaction.
func (s *Server) txnStmt(req *Request) transaction.Stmt {
	k, _ := lsidOf(req.lsid)
	st := transaction.Stmt{Number: req.txnNumber, Start: req.startTxn, Command: req.Name,
		ID: retrySession(k), Lsid: lsidDoc(k), Format: func() string { return formatLsid(req.lsid) }}
	if req.startTxn {
		// The concern checks have refused an atClusterTime that is not
		// level snapshot's.
		if t, i, ok := req.Body.Lookup("readConcern", "atClusterTime").TimestampOK(); ok {
			st.At = oplog.Timestamp{T: t, I: i}
		}
	}
	return st
}

// checkedOut is a command's hold on its session; began says it runs as
// a statement of the session's transaction.
type checkedOut struct {
	sess  *transaction.Session
	began bool
}

// checkOut checks out the session of a command that runs in a
// transaction, or is a retryable write, waiting while another command has
// it, and for a statement of a transaction returns the context it runs
// under. Other commands need no checkout: nil.
func (s *Server) checkOut(ctx context.Context, cmd *commandDef, req *Request) (context.Context, *checkedOut, error) {
	retryable := !req.inTxn && req.hasTxnNumber && writeCommandNames[cmd.name]
	if !req.inTxn && !retryable {
		return ctx, nil, nil
	}
	sess, err := s.txns.CheckOut(ctx, req.lsid)
	if err != nil {
		return ctx, nil, err
	}
	co := &checkedOut{sess: sess}
	st := s.txnStmt(req)
	switch {
	case retryable:
		return ctx, co, sess.RetryableWrite(st)
	case cmd.name == "commitTransaction" || cmd.name == "abortTransaction":
		req.txnSess = sess
		return ctx, co, nil
	}
	t, err := sess.Begin(ctx, st)
	if err != nil {
		return ctx, co, err
	}
	co.began = true
	if coll, _ := command.FirstValue(req.Body).StringValueOK(); writeCommandNames[cmd.name] && strings.HasPrefix(coll, "system.") {
		return ctx, co, mongoerr.New(50791, "Cannot write to system collection %s.%s within a transaction.", req.DB, coll)
	}
	return engine.WithTransaction(ctx, t), co, nil
}

// statementDone ends a statement of a transaction: one that failed aborts
// it, and so does a write error, which a write command reports among its
// writeErrors, except a TransientTransactionError, which fails the whole
// command so that drivers see its label and retry the transaction
// (write_ops_exec.cpp's handleError; jstests/core/txns/
// transactions_write_errors.js).
func statementDone(co *checkedOut, cmd *commandDef, reply bson.Raw, err error) (bson.Raw, error) {
	if !co.began {
		return reply, err
	}
	if err != nil {
		co.sess.StatementFailed()
		return reply, err
	}
	if cmd.name == "findAndModify" || !writeCommandNames[cmd.name] {
		return reply, nil
	}
	v, lookupErr := reply.LookupErr("writeErrors")
	if lookupErr != nil {
		return reply, nil
	}
	co.sess.StatementFailed()
	arr, ok := v.ArrayOK()
	if !ok {
		return reply, nil
	}
	first, idxErr := arr.IndexErr(0)
	if idxErr != nil {
		return reply, nil
	}
	we, ok := first.DocumentOK()
	if !ok {
		return reply, nil
	}
	code, _ := we.Lookup("code").AsInt64OK()
	if isTransientTransactionError(mongoerr.Code(code), false, false) {
		return nil, mongoerr.New(mongoerr.Code(code), "%s", we.Lookup("errmsg").StringValue())
	}
	return reply, nil
}

// isTransientTransactionError is mongod's (error_labels.cpp): whether a
// transaction that failed with code may be run again whole.
func isTransientTransactionError(code mongoerr.Code, hasWriteConcernError, commitOrAbort bool) bool {
	switch code {
	case mongoerr.WriteConflict, mongoerr.LockTimeout, mongoerr.PreparedTransactionInProgress,
		mongoerr.SnapshotTooOld, mongoerr.SnapshotUnavailable, mongoerr.StaleChunkHistory:
		return true
	case mongoerr.NoSuchTransaction:
		return !commitOrAbort || !hasWriteConcernError
	}
	return !commitOrAbort && retryableCodes[code]
}

// transactionEnded closes the cursors opened in a transaction that ended:
// they read its snapshot, which is gone.
func (s *Server) transactionEnded(lsid string, number int64) {
	s.cursors.KillTransaction(lsid, number)
}
