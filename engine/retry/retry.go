package retry

// Retryable writes: the outcome of each statement of a write that carries
// a session and a transaction number is stored in the batch of the write
// itself, so that a retry of the statement finds it exactly when the write
// committed, also after a restart.
//
//	t lsid(16) 0x00            txnNumber(8) lastWrite ms(8)
//	t lsid(16) 0x02 stmt(4)    txnNumber(8) + the statement's result (BSON)
//
// Only the newest transaction number of a session counts: a statement's
// record names the number it was written under, and a write under a newer
// number overwrites the records of the statements it runs, leaving those
// of statements it does not as stale ones that Executed ignores. So no
// write deletes anything: drivers start a new number with every write,
// and deleting the last one's records each time left a tombstone per
// write in the session's key range for the next write to step over
// (inserts at 0.5x those without retries, measured with lethe-load's
// retry-cost). Records go with their session (Forget,
// Expired); records of the earlier layout (tag 0x01, the number in
// the key) are never read, and go with their session too.

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/mongoerr"
)

// Txn ties a write to a statement of a retryable write: the session, its
// transaction number, and the statement's id (for single-statement
// writes; inserts take the engine's WriteOptions.StmtIDs).
type Txn struct {
	Session [16]byte
	Number  int64
	StmtID  int32
	// Lsid, if set, is the lsid document the oplog entries of the write
	// carry ({id, uid}); nil means {id: Session}.
	Lsid []byte
	// Retried lists the statements that Executed found recorded, in the
	// order it was asked: those a command answered from their records,
	// which mongod's write replies list as retriedStmtIds.
	Retried []int32
	// ExpireBefore, if set, is when the session's records expire: those
	// last written before it are gone to Check and Executed, and the
	// first record of the write deletes them.
	ExpireBefore time.Time
	stale        bool // set by Check: the records have expired
	clearAll     bool // the next record deletes all of the session's
	// unrecorded, set by Check, says that no statement of Number was
	// recorded: the session's newest number was older, or it had none.
	// Executed then needs no read, which drivers, with a new number per
	// write, would otherwise pay for every retryable write. Record clears
	// it, since from then a statement may be.
	unrecorded bool
}

// Check compares t.Number with the session's newest one: an older
// number is TransactionTooOld, as in MongoDB.
func Check(ctx context.Context, store kv.Store, t *Txn) error {
	t.unrecorded = false
	v, err := store.Get(ctx, record.TxnHeaderKey(t.Session))
	if err == kv.ErrNotFound {
		t.unrecorded = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("engine: read session record: %w", err)
	}
	if len(v) < 8 {
		return fmt.Errorf("engine: session record of %d bytes", len(v))
	}
	stored := int64(binary.BigEndian.Uint64(v))
	if len(v) == 16 && !t.ExpireBefore.IsZero() && int64(binary.BigEndian.Uint64(v[8:])) < t.ExpireBefore.UnixMilli() {
		t.stale, t.clearAll = true, true
		return nil
	}
	if t.Number < stored {
		return mongoerr.New(mongoerr.TransactionTooOld, "Retryable write with txnNumber %d is prohibited on session %s because a newer retryable write with txnNumber %d has already started on this session.", t.Number, uuidString(t.Session), stored)
	}
	if t.Number == stored {
		// The number of a transaction that committed or was ended, maybe
		// on another server or before a restart: not a retryable write's,
		// as mongod's _beginOrContinueRetryableWrite refuses it.
		o, err := TransactionOutcome(ctx, store, t)
		if err != nil {
			return err
		}
		if o != Unknown {
			return mongoerr.New(mongoerr.IncompleteTransactionHistory, "Cannot retry a retryable write that has been converted into a transaction")
		}
	}
	// Every statement record carries a number no newer than the
	// session's, which each Record sets to its own.
	t.unrecorded = t.Number > stored
	return nil
}

// Latest returns the newest transaction number recorded for session, and
// whether there is one: what a restarted server knows of the numbers a
// session used.
func Latest(ctx context.Context, store kv.Reader, session [16]byte) (int64, bool, error) {
	v, err := store.Get(ctx, record.TxnHeaderKey(session))
	if err == kv.ErrNotFound {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("engine: read session record: %w", err)
	}
	if len(v) < 8 {
		return 0, false, fmt.Errorf("engine: session record of %d bytes", len(v))
	}
	return int64(binary.BigEndian.Uint64(v)), true, nil
}

func uuidString(id [16]byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", id[0:4], id[4:6], id[6:8], id[8:10], id[10:16])
}

// Executed returns the recorded result of statement stmt of t's
// transaction, if it committed.
func Executed(ctx context.Context, store kv.Store, t *Txn, stmt int32) (bson.Raw, bool, error) {
	if t.stale || t.unrecorded {
		return nil, false, nil
	}
	v, err := store.Get(ctx, record.TxnStmtKey(t.Session, stmt))
	if err == kv.ErrNotFound {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("engine: read statement record: %w", err)
	}
	if len(v) < 8 {
		return nil, false, fmt.Errorf("engine: statement record of %d bytes", len(v))
	}
	if int64(binary.BigEndian.Uint64(v)) != t.Number {
		return nil, false, nil // a record of an earlier number
	}
	t.Retried = append(t.Retried, stmt)
	return append(bson.Raw(nil), v[8:]...), true, nil
}

// LsidDoc is the lsid of the oplog entries of t: Lsid, or {id: Session}.
func (t *Txn) LsidDoc() []byte {
	if t.Lsid != nil {
		return t.Lsid
	}
	idx, dst := bsoncore.AppendDocumentStart(nil)
	dst = bsoncore.AppendBinaryElement(dst, "id", bson.TypeBinaryUUID, t.Session[:])
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// Record adds the result of statement stmt of t to b, the transaction of
// the write that ran it, written at nowMillis: the record commits exactly
// when the write does.
func Record(ctx context.Context, b kv.Txn, t *Txn, stmt int32, result []byte, nowMillis int64) error {
	t.unrecorded = false
	if t.clearAll {
		lo, hi := record.TxnStmtRange(t.Session)
		if err := deleteKeys(ctx, b, lo, hi); err != nil {
			return err
		}
		t.clearAll = false
	}
	hdr := binary.BigEndian.AppendUint64(nil, uint64(t.Number))
	hdr = binary.BigEndian.AppendUint64(hdr, uint64(nowMillis))
	if err := b.Set(record.TxnHeaderKey(t.Session), hdr); err != nil {
		return err
	}
	val := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(result)), uint64(t.Number))
	return b.Set(record.TxnStmtKey(t.Session, stmt), append(val, result...))
}

// Forget deletes the records of the sessions ids that were last written
// before before (any, if before is zero). Most sessions that end made no
// retryable write: only those with a record cost a deletion.
func Forget(ctx context.Context, store kv.Store, ids [][16]byte, before time.Time) error {
	b, err := store.Begin(ctx, kv.TxnOptions{Pessimistic: true})
	if err != nil {
		return fmt.Errorf("engine: begin: %w", err)
	}
	defer b.Rollback()
	for _, id := range ids {
		// Read under the session's checkout and header locks, which
		// the servers sharing a store take to write its records
		// (CheckOut, EndUnknown, CheckCommit): another may record
		// meanwhile.
		hk := record.TxnHeaderKey(id)
		if err := b.LockKeys(ctx, kv.LockOptions{}, record.TxnCheckoutKey(id), hk); err != nil {
			return fmt.Errorf("engine: lock session record: %w", err)
		}
		v, err := b.Get(ctx, hk)
		if err == kv.ErrNotFound {
			continue
		}
		if err != nil {
			return fmt.Errorf("engine: read session record: %w", err)
		}
		keep := !before.IsZero() && len(v) == 16 && int64(binary.BigEndian.Uint64(v[8:])) >= before.UnixMilli()
		if keep {
			continue
		}
		lo := record.TxnSessionPrefix(id)
		if err := deleteKeys(ctx, b, lo, record.PrefixEnd(lo)); err != nil {
			return err
		}
	}
	if b.Empty() {
		return nil
	}
	_, err = b.Commit(ctx, kv.NoSync)
	return err
}

// deleteKeys adds to b a point deletion of every stored key in [lo, hi).
// A session's records are a handful of keys, deleted when the session
// goes or its records expire: range deletions instead would pile range
// tombstones into the memtable, which every read of the store must then
// fragment (a 12x slower insert in replica-set mode when a range went
// with every write, measured with lethe-load's changestream workload).
func deleteKeys(ctx context.Context, b kv.Txn, lo, hi []byte) error {
	it, err := b.Iter(ctx, lo, hi, false)
	if err != nil {
		return fmt.Errorf("engine: list session records: %w", err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		if err := b.Delete(it.Key()); err != nil {
			it.Close()
			return err
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("engine: list session records: %w", err)
	}
	return nil
}

// Expired lists the sessions whose records were last written before
// before.
func Expired(ctx context.Context, store kv.Store, before time.Time) ([][16]byte, error) {
	it, err := store.Iter(ctx, []byte{record.PrefixTxn}, []byte{record.PrefixTxn + 1}, false)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var old [][16]byte
	limit := before.UnixMilli()
	for ok := it.First(); ok; {
		k := it.Key()
		if len(k) < 17 {
			ok = it.Next()
			continue
		}
		if len(k) == 18 && k[17] == 0 {
			if v := it.Value(); len(v) == 16 && int64(binary.BigEndian.Uint64(v[8:])) < limit {
				var id [16]byte
				copy(id[:], k[1:17])
				old = append(old, id)
			}
		}
		// On to the next session.
		ok = it.SeekGE(record.PrefixEnd(k[:17]))
	}
	return old, it.Error()
}

// Recorded results: what a retry of a statement returns. They take and
// give plain values, so that the records need none of the engine's types.

// EncodeInsert is the result of an inserted document.
func EncodeInsert() []byte {
	return bsoncore.NewDocumentBuilder().AppendInt32("n", 1).Build()
}

// EncodeUpdate is the result of an update statement: the documents it
// matched and modified, and the _id of the one it upserted, if any.
func EncodeUpdate(matched, modified int64, upserted bson.RawValue) []byte {
	b := bsoncore.NewDocumentBuilder().AppendInt64("n", matched).AppendInt64("nModified", modified)
	if upserted.Type != 0 {
		b.AppendValue("upserted", bsoncore.Value{Type: bsoncore.Type(upserted.Type), Data: upserted.Value})
	}
	return b.Build()
}

// DecodeUpdate decodes the recorded result of an update statement.
func DecodeUpdate(raw bson.Raw) (matched, modified int64, upserted bson.RawValue) {
	if raw == nil {
		return 0, 0, bson.RawValue{}
	}
	d := bsoncore.Document(raw)
	matched, modified = d.Lookup("n").Int64(), d.Lookup("nModified").Int64()
	if v, err := d.LookupErr("upserted"); err == nil {
		upserted = rawValue(v)
	}
	return matched, modified, upserted
}

// EncodeDelete is the result of a delete statement: the documents it
// deleted.
func EncodeDelete(n int64) []byte {
	return bsoncore.NewDocumentBuilder().AppendInt64("n", n).Build()
}

// DecodeDelete decodes the recorded result of a delete statement.
func DecodeDelete(raw bson.Raw) int64 {
	n, _ := bsoncore.Document(raw).Lookup("n").Int64OK()
	return n
}

// EncodeFindAndModify is the result of a findAndModify: the documents it
// changed, whether one existed, the _id it upserted, if any, and the
// document it returned, if any.
func EncodeFindAndModify(n int64, updatedExisting bool, upserted bson.RawValue, value bson.Raw) []byte {
	b := bsoncore.NewDocumentBuilder().AppendInt64("n", n).AppendBoolean("updatedExisting", updatedExisting)
	if upserted.Type != 0 {
		b.AppendValue("upserted", bsoncore.Value{Type: bsoncore.Type(upserted.Type), Data: upserted.Value})
	}
	if value != nil {
		b.AppendDocument("value", value)
	}
	return b.Build()
}

// DecodeFindAndModify decodes the recorded result of a findAndModify.
func DecodeFindAndModify(raw bson.Raw) (n int64, updatedExisting bool, upserted bson.RawValue, value bson.Raw) {
	if raw == nil {
		return 0, false, bson.RawValue{}, nil
	}
	d := bsoncore.Document(raw)
	n, updatedExisting = d.Lookup("n").Int64(), d.Lookup("updatedExisting").Boolean()
	if v, err := d.LookupErr("upserted"); err == nil {
		upserted = rawValue(v)
	}
	if v, err := d.LookupErr("value"); err == nil {
		value = bson.Raw(v.Document())
	}
	return n, updatedExisting, upserted, value
}

func rawValue(v bsoncore.Value) bson.RawValue {
	return bson.RawValue{Type: bson.Type(v.Type), Value: v.Data}
}
