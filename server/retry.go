package server

// Retryable writes: insert, update, delete and findAndModify that carry an
// lsid and a txnNumber outside a transaction. The engine records each
// statement's result in the batch of its write and answers a statement
// already done from its record (engine/retry.go); here the txnNumber is
// checked, a session's retryable writes run one at a time, and the records
// of sessions that are gone are deleted.

import (
	"context"
	"strconv"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/session"
)

// retryLocks serialize the retryable writes of one session, as MongoDB's
// session checkout does, so that a retry never runs beside the attempt it
// repeats.
type retryLocks struct {
	mu   [64]sync.Mutex
	reap sync.Mutex
	last time.Time // last full reap of expired records, under reap
}

// checkTxnNumber checks a command's txnNumber as mongod does for every
// command, in its order: it needs an lsid, a replica-set member (drivers
// send one only to those) and a long that is not negative. Then come the
// fields of a transaction (checkTransaction).
func (s *Server) checkTxnNumber(cmd *commandDef, req *Request) error {
	v := req.generic.txnNumber
	if v.Type == 0 {
		return checkTransaction(cmd, req, false)
	}
	if req.lsid == "" {
		return mongoerr.New(mongoerr.InvalidOptions, "Transaction number requires a session ID to also be specified")
	}
	if !s.clustered() {
		return mongoerr.New(mongoerr.IllegalOperation, "Transaction numbers are only allowed on a replica set member or mongos")
	}
	n, ok := v.Int64OK()
	if !ok {
		return command.WrongType("OperationSessionInfo", "txnNumber", v.Type, "long")
	}
	if n < 0 {
		return mongoerr.New(mongoerr.InvalidOptions, "Transaction number cannot be negative")
	}
	req.hasTxnNumber, req.txnNumber = true, n
	return checkTransaction(cmd, req, true)
}

// retryTxn reads the retryable write a write command is, nil if none, and
// takes its session's lock, and on a store shared with other servers its
// checkout in the store (engine.CheckOutSession); the caller calls the
// returned unlock. A statement of a multi-document transaction is none:
// the engine never retries those.
func (s *Server) retryTxn(ctx context.Context, req *Request) (*engine.Txn, func(), error) {
	if !req.hasTxnNumber || req.inTxn {
		return nil, nil, nil
	}
	// checkTxnNumber has vetted the number and the lsid.
	k, _ := lsidOf(req.lsid)
	id := retrySession(k)
	t := &engine.Txn{Session: id, Number: req.txnNumber, Lsid: lsidDoc(k), ExpireBefore: s.clock.Now().Add(-s.sessions.Timeout())}
	mu := s.retry.lock(id)
	release, err := s.eng.CheckOutSession(ctx, id)
	if err != nil {
		mu.Unlock()
		return nil, nil, err
	}
	unlock := func() {
		release()
		mu.Unlock()
	}
	if err := s.eng.CheckTxn(ctx, t); err != nil {
		unlock()
		return nil, nil, err
	}
	return t, unlock, nil
}

// forgetRetries drops the records of sessions that are gone, and now and
// then of every session whose records outlived the timeout: those of
// sessions from before a restart that no client names again. A session
// started again since it went keeps its records: a write in it may have
// recorded statements already. Under the session's lock, a write that is
// yet to record sees its session live only after this has run.
//
// On a store shared with other servers, a session gone from this one may
// live on another, which drivers now send its writes to: only its records
// older than the timeout go, as the reaper's would, so that a retry of a
// write another server ran is still answered from its record.
func (s *Server) forgetRetries(keys []session.Key) {
	var before time.Time
	if s.eng.Member() != nil {
		before = s.clock.Now().Add(-s.sessions.Timeout())
	}
	for _, k := range keys {
		id := retrySession(k)
		mu := s.retry.lock(id)
		if !s.sessions.Live(k) {
			if err := s.eng.ForgetRetries(context.TODO(), [][16]byte{id}, before); err != nil {
				s.log.Warn("forgetting retryable write records failed", zap.Error(err))
			}
		}
		mu.Unlock()
	}
	s.reapRetries(false)
}

// lock takes the lock of the retryable writes recorded under id (see
// retrySession) and returns it.
func (r *retryLocks) lock(id [16]byte) *sync.Mutex {
	// Session ids are random UUIDs or digests: their last byte spreads them.
	mu := &r.mu[int(id[15])%len(r.mu)]
	mu.Lock()
	return mu
}

// reapRetries drops the records older than the session timeout, at most
// once per half timeout unless now.
func (s *Server) reapRetries(now bool) {
	r := &s.retry
	r.reap.Lock()
	defer r.reap.Unlock()
	t := s.clock.Now()
	timeout := s.sessions.Timeout()
	if !now && t.Sub(r.last) < timeout/2 {
		return
	}
	r.last = t
	cutoff := t.Add(-timeout)
	ids, err := s.eng.ExpiredRetries(context.TODO(), cutoff)
	if err != nil {
		s.log.Warn("reaping retryable write records failed", zap.Error(err))
		return
	}
	// Under each session's lock, and only if still expired: a write may
	// have recorded since the scan.
	for _, id := range ids {
		mu := s.retry.lock(id)
		err := s.eng.ForgetRetries(context.TODO(), [][16]byte{id}, cutoff)
		mu.Unlock()
		if err != nil {
			s.log.Warn("reaping retryable write records failed", zap.Error(err))
			return
		}
	}
}

// stmt makes t, if any, statement i of its command; t is shared by the
// statements, which run one after another.
func stmt(t *engine.Txn, i int) *engine.Txn {
	if t != nil {
		t.StmtID = int32(i)
	}
	return t
}

// retriedElements appends to elems mongod's retriedStmtIds, the statements
// of a retryable write answered from their records (write_commands.cpp's
// populateReply sets it when there are some), then more.
func retriedElements(elems []bson.E, t *engine.Txn, more ...bson.E) []bson.E {
	if t != nil && len(t.Retried) > 0 {
		elems = append(elems, bson.E{Key: "retriedStmtIds", Value: t.Retried})
	}
	return append(elems, more...)
}

// appendRetried is retriedElements for a reply built in place.
func appendRetried(dst []byte, t *engine.Txn) []byte {
	if t == nil || len(t.Retried) == 0 {
		return dst
	}
	idx, dst := bsoncore.AppendArrayElementStart(dst, "retriedStmtIds")
	for i, id := range t.Retried {
		dst = bsoncore.AppendInt32Element(dst, strconv.Itoa(i), id)
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, idx)
	return dst
}
