package concern

import (
	"context"
	"encoding/binary"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/mongoerr"
)

// writeCommands advance the cluster time when they succeed.
var writeCommands = map[string]bool{
	"insert": true, "update": true, "delete": true, "findAndModify": true,
	"create": true, "drop": true, "dropDatabase": true, "createIndexes": true,
	"dropIndexes": true, "collMod": true, "renameCollection": true,
	// A transaction's writes take their write concern from its end.
	"commitTransaction": true, "abortTransaction": true,
}

// Clock is the cluster time of the member (replset.ClusterClock).
type Clock interface {
	// Now is the latest cluster time: that of the last write.
	Now() bson.Timestamp
	// Tick advances the cluster time past every time Now or Tick has
	// returned and returns the new time.
	Tick() bson.Timestamp
	// Await returns once Now is at or past ts, or with ctx's error.
	Await(ctx context.Context, ts bson.Timestamp) error
}

// Before checks command cmd's read and write concerns, in body, and waits
// for its afterClusterTime on clock. It returns what the reply must say
// about the write concern: the writeConcernError a successful write gets,
// nil when the write concern is met (or on error).
func Before(ctx context.Context, clock Clock, cmd string, body bson.Raw) (wcError bson.Raw, err error) {
	if v, err := body.LookupErr("readConcern"); err == nil {
		after, err := checkReadConcern(body, v)
		if err != nil {
			return nil, err
		}
		if !after.IsZero() && clock.Now().Before(after) {
			if err := clock.Await(ctx, after); err != nil {
				return nil, err
			}
		}
	}
	if v, err := body.LookupErr("writeConcern"); err == nil && writeCommands[cmd] {
		wcErr, err := checkWriteConcern(v)
		if err != nil {
			return nil, err
		}
		return wcErr, nil
	}
	return nil, nil
}

// After advances the cluster time after command cmd's write (ok says it
// succeeded) and adds the member's fields to the reply: wcError, which
// Before returned, when the command succeeded, $clusterTime and
// operationTime. It builds the result in *buf, reused from request to
// request, as reply may be in the first buffer.
func After(clock Clock, cmd string, ok bool, wcError bson.Raw, reply bson.Raw, buf *[]byte) bson.Raw {
	var op bson.Timestamp
	if ok && writeCommands[cmd] {
		op = clock.Tick()
	} else {
		op = clock.Now()
	}
	var wcErr bson.Raw
	if ok {
		wcErr = wcError
	}
	return decorate(buf, reply, wcErr, op, clock.Now())
}

// checkReadConcern checks a readConcern document and returns its
// afterClusterTime, zero when it has none.
func checkReadConcern(body bson.Raw, v bson.RawValue) (bson.Timestamp, error) {
	var after bson.Timestamp
	doc, ok := v.DocumentOK()
	if !ok {
		return after, command.WrongType("readConcern", "readConcern", v.Type, "object")
	}
	level := ""
	var at bson.Timestamp
	haveAt, haveAfterOpTime := false, false
	for key, f := range command.Fields(doc) {
		switch string(key) {
		case "level":
			s, ok := f.StringValueOK()
			if !ok {
				return after, command.WrongType("readConcern", "level", f.Type, "string")
			}
			switch s {
			case "local", "majority", "linearizable", "available", "snapshot":
				level = s
			default:
				return after, mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field 'readConcern.level' is not a valid value.", s)
			}
		case "afterClusterTime":
			t, i, ok := f.TimestampOK()
			if !ok {
				return after, command.WrongType("readConcern", "afterClusterTime", f.Type, "timestamp")
			}
			if t == 0 && i == 0 {
				return after, mongoerr.New(mongoerr.InvalidOptions, "afterClusterTime cannot be a null timestamp")
			}
			after = bson.Timestamp{T: t, I: i}
		case "atClusterTime":
			t, i, ok := f.TimestampOK()
			if !ok {
				return after, command.WrongType("readConcern", "atClusterTime", f.Type, "timestamp")
			}
			at, haveAt = bson.Timestamp{T: t, I: i}, true
		case "afterOpTime":
			haveAfterOpTime = true
		case "provenance":
		default:
			return after, command.UnknownField("readConcern", key)
		}
	}
	switch {
	case level == "snapshot" && !inTransaction(body) && !snapshotReadCommands[command.Name(body)] && !snapshotCursorCommands[command.Name(body)]:
		return after, mongoerr.New(mongoerr.InvalidOptions, "readConcern level 'snapshot' is only valid in a transaction or on find, aggregate and distinct")
	case haveAt && level != "snapshot":
		return after, mongoerr.New(mongoerr.InvalidOptions, "atClusterTime is only allowed with readConcern level 'snapshot'")
	case haveAt && (at.T == 0):
		return after, mongoerr.New(mongoerr.InvalidOptions, "atClusterTime cannot be a null timestamp or have zero seconds")
	case haveAt && (!after.IsZero() || haveAfterOpTime):
		return after, mongoerr.New(mongoerr.InvalidOptions, "atClusterTime cannot be used with afterClusterTime or afterOpTime")
	case level == "linearizable" && !after.IsZero():
		return after, mongoerr.New(mongoerr.InvalidOptions, "afterClusterTime is not allowed with readConcern level 'linearizable'")
	case level == "available" && !after.IsZero():
		return after, mongoerr.New(mongoerr.InvalidOptions, "afterClusterTime is not allowed with readConcern level 'available'")
	}
	return after, nil
}

// snapshotReadCommands may read at a snapshot outside a transaction
// (readConcern level "snapshot", MongoDB 5.0+).
var snapshotReadCommands = map[string]bool{"find": true, "aggregate": true, "distinct": true}

// snapshotCursorCommands go on with the cursor of a snapshot read: drivers
// send them the session's read concern too (the Go driver does), and the
// cursor reads its own snapshot whatever they say.
var snapshotCursorCommands = map[string]bool{"getMore": true, "killCursors": true}

// SnapshotRead reports whether a command outside a transaction reads at a
// snapshot (readConcern level "snapshot"), and at which cluster time; zero
// for the latest. Before has checked the read concern.
func SnapshotRead(body bson.Raw) (at bson.Timestamp, ok bool) {
	// The name first: every command passes here, and most are not reads.
	// A map lookup of the name's bytes converts them without allocating.
	if !snapshotReadCommands[string(bsonvalue.FirstKeyBytes(body))] {
		return at, false
	}
	// One pass finds both fields; the first of a name counts, as for a
	// lookup.
	var autocommit, readConcern bson.RawValue
	for key, v := range command.Fields(body) {
		switch {
		case string(key) == "autocommit" && autocommit.Type == 0:
			autocommit = v
		case string(key) == "readConcern" && readConcern.Type == 0:
			readConcern = v
		}
	}
	if autocommit.Type == bson.TypeBoolean && !autocommit.Boolean() {
		return at, false // in a transaction
	}
	rc, ok := readConcern.DocumentOK()
	if !ok {
		return at, false
	}
	if level, _ := rc.Lookup("level").StringValueOK(); level != "snapshot" {
		return at, false
	}
	t, i, _ := rc.Lookup("atClusterTime").TimestampOK()
	return bson.Timestamp{T: t, I: i}, true
}

// inTransaction reports whether the command runs in a multi-document
// transaction, which carries autocommit: false.
func inTransaction(body bson.Raw) bool {
	v, err := body.LookupErr("autocommit")
	return err == nil && v.Type == bson.TypeBoolean && !v.Boolean()
}

// checkWriteConcern checks a writeConcern document. It returns the
// writeConcernError a one-member set gives after the write, nil when the
// write concern is met, or an error when the document is malformed.
func checkWriteConcern(v bson.RawValue) (bson.Raw, error) {
	doc, ok := v.DocumentOK()
	if !ok {
		return nil, command.WrongType("writeConcern", "writeConcern", v.Type, "object")
	}
	var wcErr bson.Raw
	for key, f := range command.Fields(doc) {
		switch string(key) {
		case "w":
			switch f.Type {
			case bson.TypeInt32, bson.TypeInt64, bson.TypeDouble, bson.TypeDecimal128:
				n, _ := f.AsInt64OK()
				if f.Type == bson.TypeDouble {
					n = int64(f.Double())
				}
				if n < 0 || n > 50 {
					return nil, mongoerr.New(mongoerr.FailedToParse, "w has to be a non-negative number and not greater than 50; found: %d", n)
				}
				if n > 1 {
					// One data-bearing member cannot acknowledge for two.
					wcErr = writeConcernError(mongoerr.UnsatisfiableWriteConcern, "Not enough data-bearing nodes")
				}
			case bson.TypeString:
				if mode := f.StringValue(); mode != "majority" {
					wcErr = writeConcernError(mongoerr.UnknownReplWriteConcern, "No write concern mode named '"+mode+"' found in replica set configuration")
				}
			case bson.TypeEmbeddedDocument:
				// Tag counts: this set's one member has no tags.
				if len(f.Document()) > 5 {
					wcErr = writeConcernError(mongoerr.UnsatisfiableWriteConcern, "Not enough nodes match write concern tags")
				}
			default:
				return nil, mongoerr.New(mongoerr.FailedToParse, "w has to be a number, string, or object")
			}
		case "j", "fsync":
			switch f.Type {
			case bson.TypeBoolean, bson.TypeInt32, bson.TypeInt64, bson.TypeDouble, bson.TypeDecimal128, bson.TypeNull, bson.TypeUndefined:
			default:
				return nil, command.WrongType("writeConcern", string(key), f.Type, "bool")
			}
		case "wtimeout", "wtimeoutMS", "provenance", "getLastError":
		default:
			return nil, command.UnknownField("writeConcern", key)
		}
	}
	return wcErr, nil
}

func writeConcernError(code mongoerr.Code, msg string) bson.Raw {
	idx, dst := bsoncore.AppendDocumentStart(nil)
	dst = bsoncore.AppendInt32Element(dst, "code", int32(code))
	dst = bsoncore.AppendStringElement(dst, "codeName", code.String())
	dst = bsoncore.AppendStringElement(dst, "errmsg", msg)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// decorate appends what a replica-set member adds to every reply:
// writeConcernError when the write concern cannot be met, $clusterTime
// (unsigned: a deployment without keys, as mongod without auth) and
// operationTime. It builds the result in *buf, as reply may be in the
// request's first buffer.
func decorate(buf *[]byte, reply bson.Raw, wcErr bson.Raw, opTime, clusterTime bson.Timestamp) bson.Raw {
	if len(reply) < 5 {
		return reply
	}
	dst := append((*buf)[:0], reply[:len(reply)-1]...)
	if wcErr != nil {
		dst = bsoncore.AppendDocumentElement(dst, "writeConcernError", wcErr)
	}
	cidx, dst := bsoncore.AppendDocumentElementStart(dst, "$clusterTime")
	dst = bsoncore.AppendTimestampElement(dst, "clusterTime", clusterTime.T, clusterTime.I)
	sidx, dst := bsoncore.AppendDocumentElementStart(dst, "signature")
	dst = bsoncore.AppendBinaryElement(dst, "hash", bson.TypeBinaryGeneric, zeroHash[:])
	dst = bsoncore.AppendInt64Element(dst, "keyId", 0)
	dst, _ = bsoncore.AppendDocumentEnd(dst, sidx)
	dst, _ = bsoncore.AppendDocumentEnd(dst, cidx)
	dst = bsoncore.AppendTimestampElement(dst, "operationTime", opTime.T, opTime.I)
	dst = append(dst, 0)
	binary.LittleEndian.PutUint32(dst, uint32(len(dst)))
	*buf = dst
	return dst
}

// zeroHash is the signature of a cluster time on a deployment without
// keys: 20 zero bytes, an HMAC-SHA1's length.
var zeroHash [20]byte
