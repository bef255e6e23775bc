package changestream

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/oplog"
)

// event is one change event before it is encoded.
type event struct {
	tok  Token
	op   string
	db   string
	coll string // "" for dropDatabase
	to   string // rename target, "db.coll"
	key  bsoncore.Document
	full bsoncore.Document // fullDocument, nil if none
	// fullNull sets fullDocument to null (a lookup that found nothing).
	fullNull bool
	// before is fullDocumentBeforeChange when hasBefore; beforeNull sets
	// it to null (no pre-image stored).
	before     bsoncore.Document
	hasBefore  bool
	beforeNull bool
	desc       oplog.Description // of an update
	// o is the update entry's o, which turns the pre-image into the
	// post-image.
	o []byte
	// hasUUID is whether the entry names a collection (tok.UUID), for
	// collectionUUID.
	hasUUID bool
	// opDesc is operationDescription, for showExpandedEvents; nil if
	// none.
	opDesc bsoncore.Document
	// stateBefore is a modify event's stateBeforeChange.
	stateBefore bsoncore.Document
	wall        int64
	// purged marks the delete of a TTL purge, of a document that expired
	// at expiredAt; purgeTail orders it among those of that instant.
	purged    bool
	expiredAt int64
	purgeTail []byte
	// inTxn marks an operation of a committed transaction (an applyOps
	// entry), which has no stored pre-image; lsid and txnNumber are its
	// session, each set only if the entry has it.
	inTxn        bool
	lsid         bsoncore.Document
	txnNumber    int64
	hasTxnNumber bool
}

func splitNS(ns string) (db, coll string) {
	db, coll, _ = strings.Cut(ns, ".")
	return db, coll
}

// internalDB reports whether db's changes are never reported.
func internalDB(db string) bool { return db == "admin" || db == "config" || db == "local" }

// watches reports whether the stream covers db.coll.
func (s *Spec) watches(db, coll string) bool {
	if strings.HasPrefix(coll, "system.") {
		return false
	}
	switch s.Scope {
	case Collection:
		return db == s.DB && coll == s.Coll
	case Database:
		return db == s.DB
	default:
		return !internalDB(db)
	}
}

// events appends the events of the entry raw at ts to dst.
func (s *Spec) events(dst []event, ts oplog.Timestamp, raw bson.Raw) ([]event, error) {
	f, err := oplog.Parse(raw)
	if err != nil {
		return dst, err
	}
	doc := bsoncore.Document(raw)
	wall, _ := doc.Lookup("wall").DateTimeOK()
	var uuid [16]byte
	_, data, hasUUID := doc.Lookup("ui").BinaryOK()
	copy(uuid[:], data)
	ev := event{tok: Token{TS: ts, UUID: uuid}, wall: wall, hasUUID: hasUUID}
	switch f.Op {
	case oplog.Insert, oplog.Update, oplog.Delete:
		ev.db, ev.coll = splitNS(f.NS)
		if !s.watches(ev.db, ev.coll) {
			return dst, nil
		}
		// Events outlive the read that found them; raw does not.
		doc = bytes.Clone(doc)
		o, _ := doc.Lookup("o").DocumentOK()
		return append(dst, s.crud(ev, f.Op, doc, o)), nil
	case oplog.Command:
		o, _ := doc.Lookup("o").DocumentOK()
		if isTxn(f.NS, o) {
			return s.txnEvents(dst, ev, doc, o)
		}
		o2, _ := doc.Lookup("o2").DocumentOK()
		return s.command(dst, ev, f.NS, o, o2)
	}
	return dst, nil
}

func (s *Spec) crud(ev event, op oplog.Op, doc, o bsoncore.Document) event {
	o2, _ := doc.Lookup("o2").DocumentOK()
	switch op {
	case oplog.Insert:
		ev.op, ev.full, ev.key = "insert", o, o2
		if ev.key == nil {
			ev.key = oplog.IDDoc(o.Lookup("_id"))
		}
	case oplog.Delete:
		ev.op, ev.key = "delete", o
	default:
		ev.key = o2
		desc, isDiff, err := oplog.UpdateDescription(o)
		switch {
		case err != nil || !isDiff:
			ev.op, ev.full = "replace", o
		default:
			ev.op, ev.desc, ev.o = "update", desc, o
		}
	}
	return ev
}

// command appends the events of a command entry in ns ("db.$cmd").
func (s *Spec) command(dst []event, ev event, ns string, o, o2 bsoncore.Document) ([]event, error) {
	db, _ := splitNS(ns)
	first, err := o.IndexErr(0)
	if err != nil {
		return dst, nil
	}
	ev.db = db
	switch first.Key() {
	case "drop":
		ev.op = "drop"
		ev.coll, _ = first.Value().StringValueOK()
		if !s.watches(db, ev.coll) {
			return dst, nil
		}
		dst = append(dst, ev)
		if s.Scope == Collection {
			dst = append(dst, invalidate(ev))
		}
	case "renameCollection":
		from, _ := first.Value().StringValueOK()
		to, _ := o.Lookup("to").StringValueOK()
		ev.op, ev.to = "rename", to
		ev.db, ev.coll = splitNS(from)
		toDB, toColl := splitNS(to)
		if !s.watches(ev.db, ev.coll) && !s.watches(toDB, toColl) {
			return dst, nil
		}
		if s.ShowExpanded {
			// The entry's fields but the source and stayTemp, with the
			// target as a namespace document.
			ev.opDesc = describeOp(o, func(dst []byte, el bsoncore.Element) []byte {
				switch el.Key() {
				case "renameCollection", "stayTemp":
					return dst
				case "to":
					return appendNS(dst, "to", toDB, toColl)
				case "dropTarget":
					if el.Value().Type == bsoncore.TypeBoolean {
						return dst // present only as the UUID of a replaced target
					}
				}
				return bsoncore.AppendValueElement(dst, el.Key(), el.Value())
			})
		}
		dst = append(dst, ev)
		if s.Scope == Collection {
			dst = append(dst, invalidate(ev))
		}
	case "create", "createIndexes", "dropIndexes", "collMod":
		// The events of showExpandedEvents; a view's (system.views) are
		// not reported.
		ev.coll, _ = first.Value().StringValueOK()
		if !s.ShowExpanded || !s.watches(db, ev.coll) {
			return dst, nil
		}
		except := func(name string) func([]byte, bsoncore.Element) []byte {
			return func(dst []byte, el bsoncore.Element) []byte {
				if el.Key() == name {
					return dst
				}
				return bsoncore.AppendValueElement(dst, el.Key(), el.Value())
			}
		}
		switch first.Key() {
		case "create":
			ev.op, ev.opDesc = "create", describeOp(o, except("create"))
		case "collMod":
			ev.op, ev.opDesc = "modify", describeOp(o, except("collMod"))
			ev.stateBefore = stateBefore(o2)
		case "createIndexes":
			ev.op, ev.opDesc = "createIndexes", indexesDesc(describeOp(o, except("createIndexes")))
		default:
			ev.op, ev.opDesc = "dropIndexes", indexesDesc(describeOp(o2, except("dropIndexes")))
		}
		dst = append(dst, ev)
	case "dropDatabase":
		if internalDB(db) || (s.Scope != Cluster && db != s.DB) {
			return dst, nil
		}
		ev.op = "dropDatabase"
		dst = append(dst, ev)
		if s.Scope == Database {
			dst = append(dst, invalidate(ev))
		}
	}
	return dst, nil
}

// describeOp builds an operationDescription from the fields of o, each
// appended by add.
func describeOp(o bsoncore.Document, add func(dst []byte, el bsoncore.Element) []byte) bsoncore.Document {
	idx, dst := bsoncore.AppendDocumentStart(nil)
	els, _ := o.Elements()
	for _, el := range els {
		dst = add(dst, el)
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// stateBefore is a modify event's stateBeforeChange, from the o2 of its
// collMod entry: {collectionOptions, indexOptions}, each only if logged.
func stateBefore(o2 bsoncore.Document) bsoncore.Document {
	idx, dst := bsoncore.AppendDocumentStart(nil)
	if v, err := o2.LookupErr("collectionOptions_old"); err == nil {
		dst = bsoncore.AppendValueElement(dst, "collectionOptions", v)
	}
	if v, err := o2.LookupErr("indexOptions_old"); err == nil {
		dst = bsoncore.AppendValueElement(dst, "indexOptions", v)
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// indexesDesc is the operationDescription of an index event, {indexes:
// [spec]}, one index per entry as MongoDB logs them.
func indexesDesc(spec bsoncore.Document) bsoncore.Document {
	idx, dst := bsoncore.AppendDocumentStart(nil)
	aidx, dst := bsoncore.AppendArrayElementStart(dst, "indexes")
	dst = bsoncore.AppendDocumentElement(dst, "0", spec)
	dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// appendNS appends a namespace document {db, coll}.
func appendNS(dst []byte, key, db, coll string) []byte {
	idx, dst := bsoncore.AppendDocumentElementStart(dst, key)
	dst = bsoncore.AppendStringElement(dst, "db", db)
	if coll != "" {
		dst = bsoncore.AppendStringElement(dst, "coll", coll)
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

func invalidate(after event) event {
	ev := event{op: "invalidate", tok: after.tok, wall: after.wall}
	ev.tok.Index++
	ev.tok.Flags |= flagInvalidate
	return ev
}

// images are the documents an event may carry beyond its entry: the
// current one (updateLookup) and the stored pre-image.
type images interface {
	FindByID(ctx context.Context, db, coll string, id bsoncore.Value) (bson.Raw, error)
	PreImage(ts oplog.Timestamp) (bson.Raw, error)
}

// addImages sets the fullDocumentBeforeChange and, on an update, the
// fullDocument the spec asks for. As MongoDB, the post-image of
// whenAvailable and required is the pre-image with the entry's update
// applied: the document right after that update, not as it is now.
func (s *Spec) addImages(ev *event, src images) error {
	imaged := ev.op == "update" || ev.op == "replace" || ev.op == "delete"
	var pre bson.Raw
	if imaged && (s.BeforeChange != BeforeChangeOff || (ev.op == "update" && (s.FullDocument == FullDocWhenAvailable || s.FullDocument == FullDocRequired))) {
		// An operation of a transaction has no stored pre-image (the
		// engine keeps one per entry, and the transaction's entry holds
		// many operations): it is missing, with the consequences below.
		var err error
		if !ev.inTxn {
			if pre, err = src.PreImage(ev.tok.TS); err != nil {
				return fmt.Errorf("changestream: pre-image: %w", err)
			}
		}
	}
	if imaged && s.BeforeChange != BeforeChangeOff {
		if pre == nil && s.BeforeChange == BeforeChangeRequired {
			return mongoerr.New(mongoerr.NoMatchingDocument, "Change stream was configured to require a pre-image for all update, delete and replace events, but the pre-image was not found for event: %s", s.notFoundDesc(ev))
		}
		ev.before, ev.beforeNull = bsoncore.Document(pre), pre == nil
		ev.hasBefore = true
	}
	if ev.op != "update" {
		return nil
	}
	switch s.FullDocument {
	case FullDocUpdateLookup:
		d, err := src.FindByID(context.TODO(), ev.db, ev.coll, ev.key.Lookup("_id"))
		if err != nil {
			return fmt.Errorf("changestream: updateLookup: %w", err)
		}
		ev.full, ev.fullNull = bsoncore.Document(d), d == nil
	case FullDocWhenAvailable, FullDocRequired:
		var post []byte
		if pre != nil {
			var err error
			if post, err = oplog.ApplyUpdate(pre, ev.o); err != nil {
				return fmt.Errorf("changestream: post-image: %w", err)
			}
		}
		if post == nil && s.FullDocument == FullDocRequired {
			return mongoerr.New(mongoerr.NoMatchingDocument, "Change stream was configured to require a post-image for all update events, but the post-image was not found for event: %s", s.notFoundDesc(ev))
		}
		ev.full, ev.fullNull = post, post == nil
	}
	return nil
}

// notFoundDesc names the event a required image was not found for, in the
// terms of MongoDB's message.
func (s *Spec) notFoundDesc(ev *event) string {
	return fmt.Sprintf("{operationType: %q, ns: {db: %q, coll: %q}, documentKey: %s, clusterTime: %v}", ev.op, ev.db, ev.coll, bson.Raw(ev.key), ev.tok.TS)
}

// encode builds the event document, in the field order of MongoDB's.
func (s *Spec) encode(ev *event, src images) (bson.Raw, error) {
	if err := s.addImages(ev, src); err != nil {
		return nil, err
	}
	idx, b := bsoncore.AppendDocumentStart(nil)
	// A transaction's session leads the event: MongoDB's transformation
	// (change_stream_event_transform.cpp) adds txnNumber and lsid before
	// the resume token.
	if ev.hasTxnNumber {
		b = bsoncore.AppendInt64Element(b, "txnNumber", ev.txnNumber)
	}
	if ev.lsid != nil {
		b = bsoncore.AppendDocumentElement(b, "lsid", ev.lsid)
	}
	b = bsoncore.AppendDocumentElement(b, "_id", ev.tok.Doc())
	b = bsoncore.AppendStringElement(b, "operationType", ev.op)
	b = bsoncore.AppendTimestampElement(b, "clusterTime", ev.tok.TS.T, ev.tok.TS.I)
	if s.ShowExpanded && ev.hasUUID && ev.op != "invalidate" && ev.op != "dropDatabase" {
		b = bsoncore.AppendBinaryElement(b, "collectionUUID", bson.TypeBinaryUUID, ev.tok.UUID[:])
	}
	b = bsoncore.AppendDateTimeElement(b, "wallTime", ev.wall)
	if ev.op == "insert" || ev.op == "replace" {
		b = bsoncore.AppendDocumentElement(b, "fullDocument", ev.full)
	}
	if ev.op != "invalidate" {
		nidx, nb := bsoncore.AppendDocumentElementStart(b, "ns")
		nb = bsoncore.AppendStringElement(nb, "db", ev.db)
		if ev.op != "dropDatabase" {
			nb = bsoncore.AppendStringElement(nb, "coll", ev.coll)
		}
		b, _ = bsoncore.AppendDocumentEnd(nb, nidx)
	}
	if ev.op == "rename" {
		toDB, toColl := splitNS(ev.to)
		tidx, tb := bsoncore.AppendDocumentElementStart(b, "to")
		tb = bsoncore.AppendStringElement(tb, "db", toDB)
		tb = bsoncore.AppendStringElement(tb, "coll", toColl)
		b, _ = bsoncore.AppendDocumentEnd(tb, tidx)
	}
	if ev.key != nil {
		b = bsoncore.AppendDocumentElement(b, "documentKey", ev.key)
	}
	if s.ShowExpanded && ev.opDesc != nil {
		b = bsoncore.AppendDocumentElement(b, "operationDescription", ev.opDesc)
	}
	if ev.op == "update" {
		uidx, ub := bsoncore.AppendDocumentElementStart(b, "updateDescription")
		ub = bsoncore.AppendDocumentElement(ub, "updatedFields", ev.desc.Updated)
		aidx, ub := bsoncore.AppendArrayElementStart(ub, "removedFields")
		for i, r := range ev.desc.Removed {
			ub = bsoncore.AppendStringElement(ub, fmt.Sprint(i), r)
		}
		ub, _ = bsoncore.AppendArrayEnd(ub, aidx)
		aidx, ub = bsoncore.AppendArrayElementStart(ub, "truncatedArrays")
		for i, t := range ev.desc.Truncated {
			tidx, tb := bsoncore.AppendDocumentElementStart(ub, fmt.Sprint(i))
			tb = bsoncore.AppendStringElement(tb, "field", t.Field)
			tb = bsoncore.AppendInt32Element(tb, "newSize", t.NewSize)
			ub, _ = bsoncore.AppendDocumentEnd(tb, tidx)
		}
		ub, _ = bsoncore.AppendArrayEnd(ub, aidx)
		if s.ShowExpanded {
			ub = bsoncore.AppendDocumentElement(ub, "disambiguatedPaths", ev.desc.Disambiguated)
		}
		b, _ = bsoncore.AppendDocumentEnd(ub, uidx)
	}
	if s.ShowExpanded && ev.stateBefore != nil {
		b = bsoncore.AppendDocumentElement(b, "stateBeforeChange", ev.stateBefore)
	}
	// The pre-image comes before an update's post-image: MongoDB's stage
	// adding it runs first.
	switch {
	case ev.beforeNull:
		b = bsoncore.AppendNullElement(b, "fullDocumentBeforeChange")
	case ev.hasBefore:
		b = bsoncore.AppendDocumentElement(b, "fullDocumentBeforeChange", ev.before)
	}
	if ev.op == "update" {
		switch {
		case ev.fullNull:
			b = bsoncore.AppendNullElement(b, "fullDocument")
		case ev.full != nil:
			b = bsoncore.AppendDocumentElement(b, "fullDocument", ev.full)
		}
	}
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b, nil
}
