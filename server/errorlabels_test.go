package server

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/failpoint"
	"github.com/lethedb/lethe/mongoerr"
)

func mustRaw(t *testing.T, d bson.D) bson.Raw {
	t.Helper()
	raw, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// RetryableWriteError goes on retryable codes of write commands with a
// txnNumber outside transactions, and a fail point's labels replace it.
func TestErrorLabels(t *testing.T) {
	s := &Server{}
	s.commands = map[string]*commandDef{}
	insert := &commandDef{name: "insert"}
	find := &commandDef{name: "find"}
	req := func(d bson.D) *Request { return &Request{Request: command.Request{Body: mustRaw(t, d)}} }
	withTxn := bson.D{{Key: "insert", Value: "c"}, {Key: "txnNumber", Value: int64(1)}}
	if l := s.errorLabels(insert, req(withTxn), 91); len(l) != 1 || l[0] != labelRetryableWriteError {
		t.Errorf("retryable write, code 91: %v", l)
	}
	if l := s.errorLabels(insert, req(withTxn), 11000); l != nil {
		t.Errorf("code 11000: %v", l)
	}
	if l := s.errorLabels(insert, req(bson.D{{Key: "insert", Value: "c"}}), 91); l != nil {
		t.Errorf("without txnNumber: %v", l)
	}
	if l := s.errorLabels(find, req(bson.D{{Key: "find", Value: "c"}, {Key: "txnNumber", Value: int64(1)}}), 91); l != nil {
		t.Errorf("find: %v", l)
	}
	// In a transaction a retryable code is transient, never a retryable
	// write's (error_labels.cpp, isTransientTransactionError); a commit's
	// retryable code is RetryableWriteError, its NoSuchTransaction
	// transient unless a writeConcernError came with it.
	inTxn := append(withTxn, bson.E{Key: "autocommit", Value: false})
	if l := s.errorLabels(insert, req(inTxn), 91); len(l) != 1 || l[0] != labelTransientTransactionError {
		t.Errorf("in a transaction: %v", l)
	}
	if l := s.errorLabels(insert, req(inTxn), 11000); l != nil {
		t.Errorf("DuplicateKey in a transaction: %v", l)
	}
	commit := &commandDef{name: "commitTransaction"}
	commitReq := req(bson.D{{Key: "commitTransaction", Value: 1}, {Key: "txnNumber", Value: int64(1)}, {Key: "autocommit", Value: false}})
	if l := s.errorLabels(commit, commitReq, 91); len(l) != 1 || l[0] != labelRetryableWriteError {
		t.Errorf("commit, code 91: %v", l)
	}
	if l := s.errorLabels(commit, commitReq, mongoerr.NoSuchTransaction); len(l) != 1 || l[0] != labelTransientTransactionError {
		t.Errorf("commit, NoSuchTransaction: %v", l)
	}
	if l := s.labelsOf(commit, commitReq, mongoerr.NoSuchTransaction, true); l != nil {
		t.Errorf("commit, NoSuchTransaction as a writeConcernError: %v", l)
	}
	r := req(withTxn)
	d := failpoint.ParseData(mustRaw(t, bson.D{{Key: "errorLabels", Value: bson.A{"X"}}}))
	r.failed = &d
	if l := s.errorLabels(insert, r, 91); len(l) != 1 || l[0] != "X" {
		t.Errorf("fail point labels: %v", l)
	}
	e := s.labelError(insert, req(withTxn), mongoerr.New(91, "shutting down"))
	reply := bson.Raw(command.AppendError(nil, e))
	if arr, ok := reply.Lookup("errorLabels").ArrayOK(); !ok || arr.Index(0).StringValue() != labelRetryableWriteError {
		t.Errorf("error reply %v", reply)
	}
}
