package cursor

import (
	"context"
	"strconv"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/mongoerr"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Option reads a command's cursor: {batchSize: n} option.
func Option(cmd string, v bson.RawValue, batchSize *int) error {
	c, err := command.Doc(cmd, "cursor", v)
	if err != nil {
		return err
	}
	// The cursor document is a strict IDL struct (SimpleCursorOptions in
	// src/mongo/db/query/cursor_response.idl): batchSize is its only field.
	// aggregate parses it on its own, so its errors name it "cursor"
	// (parseAggregateCursorFromBSON in aggregation_request_helper.cpp).
	context := cmd + ".cursor"
	if cmd == "aggregate" {
		context = "cursor"
	}
	for key := range command.Fields(c) {
		if string(key) != "batchSize" {
			return command.UnknownField(context, key)
		}
	}
	bs, err := c.LookupErr("batchSize")
	if err != nil {
		return nil
	}
	n, err := command.Int64(cmd, "cursor.batchSize", bs)
	if err != nil {
		return err
	}
	if n < 0 {
		return mongoerr.New(mongoerr.BadValue, "BatchSize value must be non-negative, but received: %d", n)
	}
	*batchSize = int(n)
	return nil
}

// Options are how a command asked for its cursor.
type Options struct {
	Single    bool // singleBatch: no cursor stays open
	NoTimeout bool // noCursorTimeout: exempt from the idle sweep
}

// Reply sends the first batch of src and registers the cursor, opened by
// the command by, if more remains: {cursor: {firstBatch, id, ns}, ok: 1}.
// The batch goes straight into the reply (AppendBatch), so src is closed
// only once it is there: a source may append documents whose memory is
// valid only while it is open.
func (t *Table) Reply(ctx context.Context, req *command.Request, by Opener, src Source, ns string, batchSize int, opts Options) (bson.Raw, error) {
	idx, dst := req.BeginReply()
	cidx, dst := bsoncore.AppendDocumentElementStart(dst, "cursor")
	aidx, dst := bsoncore.AppendArrayElementStart(dst, "firstBatch")
	dst, err := AppendBatch(ctx, src, dst, batchSize, MaxBatchBytes)
	if err != nil {
		closeSource(src)
		return nil, err
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
	var id int64
	if opts.Single || src.Exhausted() {
		closeSource(src)
	} else if id, err = t.Add(by, src, ns, opts.NoTimeout); err != nil {
		closeSource(src)
		return nil, err
	}
	dst = appendCursorEnd(dst, cidx, id, ns)
	return req.EndReply(idx, dst)
}

// Appender is a Source that appends its next batch to a reply itself, as
// an array's elements "0", "1", ... (engine.Cursor.AppendBatch), rather
// than returning documents the reply copies again. On an error it returns
// dst as it was given.
type Appender interface {
	AppendBatch(ctx context.Context, dst []byte, n int, maxBytes int) ([]byte, error)
}

// AppendBatch appends src's next batch of at most n documents (n <= 0: no
// count limit) and about maxBytes to dst, as the elements of an array:
// through the source's own AppendBatch when it is an Appender, else
// NextBatch's documents.
func AppendBatch(ctx context.Context, src Source, dst []byte, n int, maxBytes int) ([]byte, error) {
	if a, ok := src.(Appender); ok {
		return a.AppendBatch(ctx, dst, n, maxBytes)
	}
	docs, err := src.NextBatch(ctx, n, maxBytes)
	if err != nil {
		return dst, err
	}
	return appendBatch(dst, docs), nil
}

// appendCursorEnd appends a cursor document's id and ns and closes it.
func appendCursorEnd(dst []byte, cidx int32, id int64, ns string) []byte {
	dst = bsoncore.AppendInt64Element(dst, "id", id)
	dst = bsoncore.AppendStringElement(dst, "ns", ns)
	dst, _ = bsoncore.AppendDocumentEnd(dst, cidx)
	return dst
}

// ReplyEmpty opens a cursor with an empty first batch (batchSize 0).
func (t *Table) ReplyEmpty(req *command.Request, by Opener, src Source, ns string, noTimeout bool) (bson.Raw, error) {
	id, err := t.Add(by, src, ns, noTimeout)
	if err != nil {
		closeSource(src)
		return nil, err
	}
	return AppendReply(req, "firstBatch", nil, id, ns)
}

// AppendReply builds {cursor: {<batchName>: docs, id, ns}, ok: 1} in
// req's reply buffer.
func AppendReply(req *command.Request, batchName string, docs []bson.Raw, id int64, ns string) (bson.Raw, error) {
	idx, dst := req.BeginReply()
	cidx, dst := bsoncore.AppendDocumentElementStart(dst, "cursor")
	aidx, dst := bsoncore.AppendArrayElementStart(dst, batchName)
	dst = appendBatch(dst, docs)
	dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
	dst = appendCursorEnd(dst, cidx, id, ns)
	return req.EndReply(idx, dst)
}

// ResumeTokener is a Source that reports a postBatchResumeToken with each
// batch: a change stream's.
type ResumeTokener interface {
	PostBatchResumeToken() bson.Raw
}

// AppendReplyFrom is AppendReply with the postBatchResumeToken of src
// when it reports one.
func AppendReplyFrom(req *command.Request, batchName string, docs []bson.Raw, id int64, ns string, src Source) (bson.Raw, error) {
	rt, ok := src.(ResumeTokener)
	if !ok {
		return AppendReply(req, batchName, docs, id, ns)
	}
	idx, dst := req.BeginReply()
	cidx, dst := bsoncore.AppendDocumentElementStart(dst, "cursor")
	aidx, dst := bsoncore.AppendArrayElementStart(dst, batchName)
	dst = appendBatch(dst, docs)
	dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
	dst = bsoncore.AppendDocumentElement(dst, "postBatchResumeToken", rt.PostBatchResumeToken())
	dst = appendCursorEnd(dst, cidx, id, ns)
	return req.EndReply(idx, dst)
}

// appendBatch appends docs as the elements of an array, each document's
// bytes as they are.
func appendBatch(dst []byte, docs []bson.Raw) []byte {
	for i, d := range docs {
		dst = append(dst, byte(bsoncore.TypeEmbeddedDocument))
		dst = AppendIndexKey(dst, i)
		dst = append(dst, 0)
		dst = append(dst, d...)
	}
	return dst
}

// AppendIndexKey appends i as an array index key.
func AppendIndexKey(dst []byte, i int) []byte { return strconv.AppendInt(dst, int64(i), 10) }

// GetMore answers getMore, run by the command by.
func (t *Table) GetMore(ctx context.Context, req *command.Request, by Opener) (bson.Raw, error) {
	first := command.FirstValue(req.Body)
	id, ok := first.Int64OK()
	if !ok {
		return nil, command.WrongType("getMore", "getMore", first.Type, "long")
	}
	var coll string
	haveColl := false
	var err error
	batchSize := 0
	for key, v := range command.Args(req.Body) {
		switch string(key) {
		case "collection":
			coll, err = command.String("getMore", "collection", v)
			haveColl = true
		case "batchSize":
			var n int64
			n, err = command.Int64("getMore", "batchSize", v)
			if n < 0 {
				err = mongoerr.New(mongoerr.BadValue, "BatchSize value must be non-negative, but received: %d", n)
			}
			batchSize = int(n)
		case "maxTimeMS", "term", "lastKnownCommittedOpTime":
		default:
			err = command.UnknownField("getMore", key)
		}
		if err != nil {
			return nil, err
		}
	}
	switch {
	case !haveColl:
		return nil, command.MissingField("getMore", "collection")
	case coll == "":
		// Present but empty: MongoDB's getMore checks the namespace it
		// makes of it (getmore_cmd.cpp).
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "Invalid namespace for getMore: %s.", req.DB)
	}
	c := t.get(id)
	if c == nil {
		return nil, mongoerr.New(mongoerr.CursorNotFound, "cursor id %d not found", id)
	}
	if c.ns != req.DB+"."+coll && !(coll == "$cmd.listCollections" && c.ns == req.DB+".$cmd.listCollections") {
		return nil, mongoerr.New(mongoerr.Unauthorized, "Requested getMore on namespace '%s.%s', but cursor belongs to a different namespace %s", req.DB, coll, c.ns)
	}
	owner := by.CursorOwner()
	if t.auth && c.user != owner.User {
		return nil, mongoerr.New(mongoerr.Unauthorized, "cursor id %d was not created by the authenticated user", id)
	}
	if err := t.checkCursorSession(id, c.lsid, owner.Lsid); err != nil {
		return nil, err
	}
	if err := checkCursorTxn(id, c, owner); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// As AppendReplyFrom builds it, with the batch appended in place.
	idx, dst := req.BeginReply()
	cidx, dst := bsoncore.AppendDocumentElementStart(dst, "cursor")
	aidx, dst := bsoncore.AppendArrayElementStart(dst, "nextBatch")
	dst, err = AppendBatch(ctx, c.src, dst, batchSize, MaxBatchBytes)
	if err != nil {
		t.remove(id)
		return nil, err
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
	if rt, ok := c.src.(ResumeTokener); ok {
		dst = bsoncore.AppendDocumentElement(dst, "postBatchResumeToken", rt.PostBatchResumeToken())
	}
	// Removing the cursor closes its source only once this getMore lets
	// go of the cursor's mutex, after its batch is in the reply.
	if c.src.Exhausted() {
		t.remove(id)
		id = 0
	} else {
		t.recount(id, c)
	}
	dst = appendCursorEnd(dst, cidx, id, c.ns)
	return req.EndReply(idx, dst)
}

// KillCursors answers killCursors, run by the command by.
func (t *Table) KillCursors(ctx context.Context, req *command.Request, by Opener) (bson.Raw, error) {
	var ids bson.RawArray
	var err error
	haveIDs := false
	for key, v := range command.Args(req.Body) {
		switch string(key) {
		case "cursors":
			ids, err = command.Array("killCursors", "cursors", v)
			haveIDs = true
		default:
			err = command.UnknownField("killCursors", key)
		}
		if err != nil {
			return nil, err
		}
	}
	if !haveIDs {
		return nil, command.MissingField("killCursors", "cursors")
	}
	// MongoDB's parser checks the namespace like this, and a cursor's
	// namespace may be a collection's or "$cmd.listCollections".
	coll := command.FirstValue(req.Body)
	switch name, ok := coll.StringValueOK(); {
	case !ok:
		return nil, mongoerr.New(mongoerr.BadValue, "collection name has invalid type %s", command.TypeName(coll.Type))
	case name == "":
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "Invalid namespace specified '%s.'", req.DB)
	}
	// Every id is checked before any cursor is killed.
	vals, err := ids.Values()
	if err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "invalid cursors array: %v", err)
	}
	for i, v := range vals {
		if v.Type != bson.TypeInt64 {
			return nil, command.WrongType("killCursors", "cursors."+strconv.Itoa(i), v.Type, "long")
		}
		if c := t.get(v.Int64()); c != nil && t.auth && c.user != by.CursorOwner().User {
			return nil, mongoerr.New(mongoerr.Unauthorized, "not authorized to kill cursor %d, which another user opened", v.Int64())
		}
	}
	var killed, notFound bson.A
	for _, v := range vals {
		id := v.Int64()
		if t.remove(id) {
			killed = append(killed, id)
		} else {
			notFound = append(notFound, id)
		}
	}
	return command.OK(
		bson.E{Key: "cursorsKilled", Value: nonNil(killed)},
		bson.E{Key: "cursorsNotFound", Value: nonNil(notFound)},
		bson.E{Key: "cursorsAlive", Value: bson.A{}},
		bson.E{Key: "cursorsUnknown", Value: bson.A{}},
	)
}

func nonNil(a bson.A) bson.A {
	if a == nil {
		return bson.A{}
	}
	return a
}

// Codes of getMore in a session other than the cursor's.
const (
	codeGetMoreOutsideSession mongoerr.Code = 50736 // the cursor has none, the getMore has one
	codeGetMoreWithoutSession mongoerr.Code = 50737 // the cursor has one, the getMore has none
	codeGetMoreInOtherSession mongoerr.Code = 50738 // both have one, not the same
)

// checkCursorTxn refuses a getMore in a transaction other than the one
// the cursor was opened in, or in none when it was opened in one, with
// mongod's codes and messages (getmore_cmd.cpp, validateTxnNumber).
func checkCursorTxn(id int64, c *openCursor, owner Owner) error {
	switch {
	case owner.InTxn && !c.inTxn:
		return mongoerr.New(50739, "Cannot run getMore on cursor %d, which was not created in a transaction, in transaction %d", id, owner.Txn)
	case !owner.InTxn && c.inTxn:
		return mongoerr.New(50740, "Cannot run getMore on cursor %d, which was created in transaction %d, without a txnNumber", id, c.txn)
	case owner.InTxn && owner.Txn != c.txn:
		return mongoerr.New(50741, "Cannot run getMore on cursor %d, which was created in transaction %d, in transaction %d", id, c.txn, owner.Txn)
	}
	return nil
}

// checkCursorSession refuses a getMore whose session (packed, "" for
// none) is not the one the cursor was opened in, as MongoDB does even
// without authentication: a session's cursors are its own.
func (t *Table) checkCursorSession(id int64, cursorLsid, lsid string) error {
	formatLsid := t.formatLsid
	switch {
	case cursorLsid == lsid:
		return nil
	case cursorLsid == "":
		return mongoerr.New(codeGetMoreOutsideSession, "Cannot run getMore on cursor %d, which was not created in a session, in session %s", id, formatLsid(lsid))
	case lsid == "":
		return mongoerr.New(codeGetMoreWithoutSession, "Cannot run getMore on cursor %d, which was created in session %s, without an lsid", id, formatLsid(cursorLsid))
	}
	return mongoerr.New(codeGetMoreInOtherSession, "Cannot run getMore on cursor %d, which was created in session %s, in session %s", id, formatLsid(cursorLsid), formatLsid(lsid))
}
