package changestream

// The events of a committed transaction: one applyOps entry, many events.

import (
	"bytes"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/oplog"
)

// txnNS is the namespace of the applyOps entry of a transaction, as
// MongoDB logs it (and as oplog.ApplyOps writes it).
const txnNS = "admin.$cmd"

// isTxn reports whether the command entry o in ns is a committed
// transaction's applyOps.
func isTxn(ns string, o bsoncore.Document) bool {
	first, err := o.IndexErr(0)
	return err == nil && ns == txnNS && first.Key() == "applyOps"
}

// txnEvents appends the events of the operations of a transaction's
// applyOps entry: one per operation on a watched namespace, in the
// order of the array. Each shares the entry's clusterTime and wallTime;
// its token's index is the operation's place in the whole array
// (MongoDB's txnOpIndex), not among the ones this stream watches, so that
// a token names the same operation in every stream and a stream resumes
// after the k-th operation with the next one it watches. ev carries the
// entry's timestamp and wall time.
func (s *Spec) txnEvents(dst []event, ev event, entry, o bsoncore.Document) ([]event, error) {
	ops, ok := o.Lookup("applyOps").ArrayOK()
	if !ok {
		return dst, fmt.Errorf("changestream: applyOps entry at %v without an array", ev.tok.TS)
	}
	vals, err := ops.Values()
	if err != nil {
		return dst, fmt.Errorf("changestream: applyOps entry at %v: %w", ev.tok.TS, err)
	}
	// Session fields are copied only when the entry has them, as
	// MongoDB's addTransactionIdFieldsIfPresent: a transaction run
	// without a session logs none.
	ev.inTxn = true
	if lsid, ok := entry.Lookup("lsid").DocumentOK(); ok {
		ev.lsid = bytes.Clone(lsid) // events outlive the read's raw entry
	}
	ev.txnNumber, ev.hasTxnNumber = entry.Lookup("txnNumber").Int64OK()
	for i, v := range vals {
		op, ok := v.DocumentOK()
		if !ok {
			return dst, fmt.Errorf("changestream: applyOps entry at %v: operation %d is not a document", ev.tok.TS, i)
		}
		kind, _ := op.Lookup("op").StringValueOK()
		ns, _ := op.Lookup("ns").StringValueOK()
		if len(kind) != 1 {
			return dst, fmt.Errorf("changestream: applyOps entry at %v: operation %d without op", ev.tok.TS, i)
		}
		switch k := oplog.Op(kind[0]); k {
		case oplog.Insert, oplog.Update, oplog.Delete:
			e := ev
			e.db, e.coll = splitNS(ns)
			if !s.watches(e.db, e.coll) {
				continue
			}
			e.tok.Index = uint32(i)
			_, ui, hasUUID := op.Lookup("ui").BinaryOK()
			copy(e.tok.UUID[:], ui)
			e.hasUUID = hasUUID
			op = bytes.Clone(op)
			o, _ := op.Lookup("o").DocumentOK()
			dst = append(dst, s.crud(e, k, op, o))
		}
		// Lethe logs only CRUD operations in a transaction; anything
		// else in the array has no event, as commands outside the ones
		// command knows have none.
	}
	return dst, nil
}
