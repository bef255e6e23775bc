package engine

import "context"

// modelSession is the session of the model's retryable writes.
var modelSession = [16]byte{'m', 'o', 'd', 'e', 'l'}

// retryable sets *t to a new retryable write of the model's session when
// op is one: the step repeats the write with it, which must change nothing
// (checkState compares the engine with the model, which the repeat leaves
// alone) and answer as the first run did.
func (r *modelRun) retryable(op *modelOp, t **Txn) error {
	if !op.Retry {
		return nil
	}
	r.txnNumber++
	*t = &Txn{Session: modelSession, Number: r.txnNumber}
	return r.e.CheckTxn(context.Background(), *t)
}
