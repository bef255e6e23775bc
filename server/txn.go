package server

// Multi-document transactions are not implemented yet. Until they are, a
// statement of one (autocommit: false) is refused before it runs, so that a
// client's abortTransaction never leaves behind what its transaction wrote,
// and commitTransaction and abortTransaction exist, so that no driver takes
// them for a server that merely lacks the command (CommandNotFound, which
// drivers ignore on abort) and reports a commit that never happened.
//
// The refusal is OperationNotSupportedInTransaction, mongod's code for a
// command a transaction may not run. It is neither retryable nor labelled
// TransientTransactionError, so a driver's withTransaction gives up at once
// instead of running its callback again until its time runs out. (A
// standalone server still answers IllegalOperation for the txnNumber, as
// mongod does; in replica-set mode that code would not do: the Node.js
// driver turns IllegalOperation on any write into "This MongoDB deployment
// does not support retryable writes", hiding the cause.)

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/mongoerr"
)

// errNoTransactions refuses a statement of a multi-document transaction.
func errNoTransactions(cmd string) error {
	return mongoerr.New(mongoerr.OperationNotSupportedInTransaction,
		"Multi-document transactions are not supported by this server yet: %s was not run", cmd)
}

func (s *Server) transactionCommands() []commandDef {
	return []commandDef{
		{name: "commitTransaction", handle: notInTransaction("commitTransaction"), adminOnly: true},
		{name: "abortTransaction", handle: notInTransaction("abortTransaction"), adminOnly: true},
	}
}

// notInTransaction answers commitTransaction or abortTransaction sent
// outside a transaction, as mongod does (txn_cmds.cpp): those sent in one
// were refused by checkTransaction.
func notInTransaction(name string) handlerFunc {
	return func(context.Context, *Request) (bson.Raw, error) {
		return nil, mongoerr.New(mongoerr.CommandFailed, "%s must be run within a transaction", name)
	}
}

// checkTransaction checks a command's autocommit and startTransaction as
// mongod's initializeOperationSessionInfo does, in its order, after the
// txnNumber (checkTxnNumber), and then refuses a transaction's statement.
func checkTransaction(body bson.Raw, haveTxnNumber bool) error {
	autocommit, haveAutocommit, err := sessionBool(body, "autocommit")
	if err != nil {
		return err
	}
	start, haveStart, err := sessionBool(body, "startTransaction")
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
	case haveAutocommit:
		return errNoTransactions(string(bsonvalue.FirstKeyBytes(body)))
	}
	return nil
}

// sessionBool reads a boolean field of a command's session information.
func sessionBool(body bson.Raw, field string) (val, ok bool, err error) {
	v, lookupErr := body.LookupErr(field)
	if lookupErr != nil {
		return false, false, nil
	}
	b, isBool := v.BooleanOK()
	if !isBool {
		return false, false, command.WrongType("OperationSessionInfo", field, v.Type, "bool")
	}
	return b, true, nil
}
