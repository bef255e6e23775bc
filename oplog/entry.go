package oplog

import (
	"fmt"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Op is the kind of an entry, MongoDB's "op" field.
type Op byte

const (
	Insert  Op = 'i'
	Update  Op = 'u'
	Delete  Op = 'd'
	Command Op = 'c'
	Noop    Op = 'n'
)

// Term is the replica-set term of every entry: a single node is never
// re-elected, so it stays 1.
const Term = 1

// Entry is one operation before it has a timestamp.
type Entry struct {
	Op Op
	// NS is "db.coll", or "db.$cmd" for commands.
	NS string
	// UI is the collection's UUID (16 bytes); nil when there is none, as
	// for dropDatabase.
	UI []byte
	// O is the operation: the inserted document, the update ($v:2 diff
	// or replacement), {_id} of a deleted document, the command.
	O []byte
	// O2 identifies the document of an update ({_id}), or carries the
	// extra argument of a command; nil if none.
	O2 []byte
	// LSID, TxnNumber and StmtID tie the entry to a retryable write;
	// LSID is nil for other writes. An applyOps entry of a transaction
	// (InTxn) carries LSID and TxnNumber, and prevOpTime instead of
	// StmtID.
	LSID      []byte
	TxnNumber int64
	StmtID    int32
	InTxn     bool
	// Expired marks the delete of a TTL purge, and ExpiredAt is the
	// instant (Unix ms) the document expired: Lethe's own field
	// "expiredAt", which lets change streams place the document's expire
	// event before its delete even when the reaper got there first.
	Expired   bool
	ExpiredAt int64
	// PreImage is the document before an update or delete of a
	// collection with changeStreamPreAndPostImages, stored under its own
	// key (see PreImagePrefix), not in the entry; nil if none.
	PreImage []byte
}

// Size approximates the encoded size of e, for batch accounting.
func (e *Entry) Size() int {
	return 96 + len(e.NS) + len(e.O) + len(e.O2) + len(e.LSID) + len(e.PreImage)
}

// Append encodes e at ts and wall time into dst, in the field order of
// MongoDB's entries.
func (e *Entry) Append(dst []byte, ts Timestamp, wall time.Time) []byte {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	if e.LSID != nil {
		dst = bsoncore.AppendDocumentElement(dst, "lsid", e.LSID)
		dst = bsoncore.AppendInt64Element(dst, "txnNumber", e.TxnNumber)
	}
	dst = bsoncore.AppendStringElement(dst, "op", string(rune(e.Op)))
	dst = bsoncore.AppendStringElement(dst, "ns", e.NS)
	if e.UI != nil {
		dst = bsoncore.AppendBinaryElement(dst, "ui", bson.TypeBinaryUUID, e.UI)
	}
	dst = bsoncore.AppendDocumentElement(dst, "o", e.O)
	if e.O2 != nil {
		dst = bsoncore.AppendDocumentElement(dst, "o2", e.O2)
	}
	switch {
	case e.LSID != nil && e.InTxn:
		// The only entry of its transaction: no previous one.
		pidx, pdst := bsoncore.AppendDocumentElementStart(dst, "prevOpTime")
		pdst = bsoncore.AppendTimestampElement(pdst, "ts", 0, 0)
		pdst = bsoncore.AppendInt64Element(pdst, "t", -1)
		dst, _ = bsoncore.AppendDocumentEnd(pdst, pidx)
	case e.LSID != nil:
		dst = bsoncore.AppendInt32Element(dst, "stmtId", e.StmtID)
	}
	dst = bsoncore.AppendTimestampElement(dst, "ts", ts.T, ts.I)
	dst = bsoncore.AppendInt64Element(dst, "t", Term)
	dst = bsoncore.AppendInt64Element(dst, "v", 2)
	dst = bsoncore.AppendDateTimeElement(dst, "wall", wall.UnixMilli())
	if e.Expired {
		dst = bsoncore.AppendDateTimeElement(dst, "expiredAt", e.ExpiredAt)
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// Fields are the parts of an encoded entry that readers filter on.
type Fields struct {
	TS Timestamp
	Op Op
	NS string
}

// Parse reads the fields of an encoded entry that readers filter on.
func Parse(raw []byte) (Fields, error) {
	var f Fields
	doc := bsoncore.Document(raw)
	t, i, ok := doc.Lookup("ts").TimestampOK()
	if !ok {
		return f, fmt.Errorf("oplog: entry without ts")
	}
	f.TS = Timestamp{T: t, I: i}
	op, ok := doc.Lookup("op").StringValueOK()
	if !ok || len(op) != 1 {
		return f, fmt.Errorf("oplog: entry at %v without op", f.TS)
	}
	f.Op = Op(op[0])
	f.NS, _ = doc.Lookup("ns").StringValueOK()
	return f, nil
}

// IDDoc is {_id: id}, the o of a delete and the o2 of an update.
func IDDoc(id bsoncore.Value) []byte {
	idx, dst := bsoncore.AppendDocumentStart(make([]byte, 0, 16+len(id.Data)))
	dst = bsoncore.AppendValueElement(dst, "_id", id)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// ApplyOps is the entry of a committed transaction whose operations are
// ops: a command on admin.$cmd whose o is {applyOps: [...]}, each
// operation with its op, ns, ui, o and o2, as MongoDB 4.2+ logs a
// transaction that fits in one entry. Pre-images are not kept.
func ApplyOps(ops []Entry) Entry {
	idx, o := bsoncore.AppendDocumentStart(nil)
	aidx, o := bsoncore.AppendArrayElementStart(o, "applyOps")
	for i := range ops {
		op := &ops[i]
		didx, d := bsoncore.AppendDocumentElementStart(o, strconv.Itoa(i))
		d = bsoncore.AppendStringElement(d, "op", string(rune(op.Op)))
		d = bsoncore.AppendStringElement(d, "ns", op.NS)
		if op.UI != nil {
			d = bsoncore.AppendBinaryElement(d, "ui", bson.TypeBinaryUUID, op.UI)
		}
		d = bsoncore.AppendDocumentElement(d, "o", op.O)
		if op.O2 != nil {
			d = bsoncore.AppendDocumentElement(d, "o2", op.O2)
		}
		o, _ = bsoncore.AppendDocumentEnd(d, didx)
	}
	o, _ = bsoncore.AppendArrayEnd(o, aidx)
	o, _ = bsoncore.AppendDocumentEnd(o, idx)
	return Entry{Op: Command, NS: "admin.$cmd", O: o, InTxn: true}
}
