package engine

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/members"
	"github.com/lethedb/lethe/engine/oplogstore"
	"github.com/lethedb/lethe/engine/preimage"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/oplog"
)

// OplogNS is the namespace under which the oplog is readable.
const OplogNS = "local.oplog.rs"

// commitLogged commits tx with the oplog entries ents appended to it, so
// that a write and its entries are stored together or not at all. The
// transaction is done afterwards, whatever the outcome.
func (e *Engine) commitLogged(ctx context.Context, tx kv.Txn, d kv.Durability, ents []oplog.Entry) error {
	if err := e.catalogFresh(ctx); err != nil {
		tx.Rollback()
		return err
	}
	if e.oplog == nil || len(ents) == 0 {
		_, err := tx.Commit(ctx, d)
		return err
	}
	r, err := e.oplog.AppendContext(ctx, tx, ents)
	if err != nil {
		tx.Rollback()
		return err
	}
	if err := e.leaseHolds(); err != nil {
		tx.Rollback()
		r.Finish(false)
		return err
	}
	_, err = tx.Commit(ctx, d)
	r.Finish(err == nil)
	return err
}

// leaseHolds refuses a commit of oplog entries by a server that has lost,
// or is about to lose, its place on the roster of a shared store: the
// others stop waiting for its floor (oplog.Cluster) when its lease runs
// out, and readers may then read past the entries' timestamps. The last
// quarter of the lease is left for the commit itself; renewals every
// third of it keep a live server out of it. ShutdownInProgress, as a
// member that steps down answers, is an error drivers retry, on another
// server.
func (e *Engine) leaseHolds() error {
	if m := e.cluster.member; m != nil && !m.ValidFor(m.Lease()/4) {
		return mongoerr.New(mongoerr.ShutdownInProgress, "this server's lease on the roster of the store has run out; retry on another server")
	}
	return nil
}

// oplogCluster is the roster of the servers sharing the store, as the
// shared oplog sees it (oplog.Cluster): floors are published in this
// server's roster record and read from the others'.
type oplogCluster struct{ e *Engine }

func (c oplogCluster) Now(ctx context.Context) (uint64, error) {
	ts, err := c.e.store.Now(ctx)
	return uint64(ts), err
}

func (c oplogCluster) Publish(ctx context.Context, floor oplog.Timestamp) error {
	m := c.e.cluster.member
	m.Update(func(r *members.Record) { r.Floor = floor.Uint64() })
	return m.Renew(ctx)
}

func (c oplogCluster) Floors(ctx context.Context) ([]oplog.Timestamp, error) {
	recs, err := c.e.Members(ctx)
	if err != nil {
		return nil, err
	}
	me := c.e.cluster.member.ID()
	out := make([]oplog.Timestamp, 0, len(recs))
	for _, r := range recs {
		if r.ID != me {
			out = append(out, oplog.FromUint64(r.Floor))
		}
	}
	return out, nil
}

// shareOplog makes the oplog one of the servers' on the shared store
// (oplog.Log.Share) and keeps its floor published until ctx ends; done is
// closed then.
func (e *Engine) shareOplog(ctx context.Context) (done chan struct{}) {
	done = make(chan struct{})
	if e.oplog == nil {
		close(done)
		return done
	}
	e.oplog.Share(oplogCluster{e})
	go func() {
		defer close(done)
		e.oplog.RunShared(ctx, e.log)
	}()
	return done
}

// beginPlain begins a short pessimistic transaction of the engine's own
// bookkeeping (the id sequence, no-op entries, cluster parameters); reserve
// lets it commit on a low disk (see kv.TxnOptions.UseReserve).
func (e *Engine) beginPlain(ctx context.Context, reserve bool) (kv.Txn, error) {
	tx, err := e.store.Begin(ctx, kv.TxnOptions{Pessimistic: true, UseReserve: reserve})
	if err != nil {
		return nil, fmt.Errorf("engine: begin: %w", err)
	}
	return tx, nil
}

// logPut records the write of d over old (nil for an insert). A rewrite
// that changes nothing but the _ts header is no operation to MongoDB and
// is not logged.
func (w *writer) logPut(d, old *storedDoc) {
	if w.e.oplog == nil {
		return
	}
	ent := oplog.Entry{NS: w.st.ns(), UI: w.st.meta.UUID.Data}
	switch {
	case old == nil:
		ent.Op, ent.O = oplog.Insert, d.doc
		ent.O2 = oplog.IDDoc(record.IDOf(d.doc))
	case bytes.Equal(old.doc, d.doc):
		return
	case w.replacement:
		ent.Op, ent.O, ent.O2 = oplog.Update, d.doc, oplog.IDDoc(record.IDOf(d.doc))
	default:
		ent.Op, ent.O, ent.O2 = oplog.Update, oplog.UpdateDiff(old.doc, d.doc), oplog.IDDoc(record.IDOf(d.doc))
	}
	if old != nil && w.st.preImages {
		ent.PreImage = old.doc
	}
	w.logged = append(w.logged, w.tag(ent))
}

// tag ties ent to the statement of a retryable write, if any.
func (w *writer) tag(ent oplog.Entry) oplog.Entry {
	if w.txn != nil {
		ent.LSID, ent.TxnNumber, ent.StmtID = w.txn.LsidDoc(), w.txn.Number, w.txn.StmtID
	}
	return ent
}

// logDelete records the deletion of d, TTL purges included (MongoDB
// records their pre-images too).
func (w *writer) logDelete(d *storedDoc) {
	if w.e.oplog == nil {
		return
	}
	ent := oplog.Entry{Op: oplog.Delete, NS: w.st.ns(), UI: w.st.meta.UUID.Data, O: oplog.IDDoc(record.IDOf(d.doc))}
	if w.st.preImages {
		ent.PreImage = d.doc
	}
	w.logged = append(w.logged, w.tag(ent))
}

// cmdEntry is the 'c' entry of a catalog change in db; ui is the
// collection's UUID, nil if none.
func cmdEntry(db string, ui []byte, o bson.D, o2 bson.D) []oplog.Entry {
	ent := oplog.Entry{Op: oplog.Command, NS: db + ".$cmd", UI: ui}
	ent.O, _ = bson.Marshal(o)
	if o2 != nil {
		ent.O2, _ = bson.Marshal(o2)
	}
	return []oplog.Entry{ent}
}

// openOplog reads the newest entry and the size of the stored oplog, so
// that timestamps keep increasing across restarts, and the oldest, where
// reads from the start begin.
func (e *Engine) openOplog(opts Options) error {
	oldest, last, size, err := oplogstore.Stored(context.TODO(), e.store)
	if err != nil {
		return err
	}
	e.oplog = oplog.New(oplog.Options{Now: e.clock.Now, MaxBytes: opts.OplogMaxBytes, MaxAge: opts.OplogMaxAge}, last, size)
	e.oplog.SetFloor(oldest)
	return nil
}

// Oplog is the engine's oplog, nil when it is off.
func (e *Engine) Oplog() *oplog.Log { return e.oplog }

// TrimOplog trims the oplog to its bounds now, for tests.
func (e *Engine) TrimOplog(ctx context.Context) (int, error) {
	if e.oplog == nil {
		return 0, nil
	}
	return e.oplog.Trim(oplogstore.Store{KV: e.store})
}

// ErrOplogOff is returned by oplog reads when the oplog is off.
var ErrOplogOff = fmt.Errorf("engine: the oplog is off")

// ReadOplog calls fn with each visible entry after ts, in timestamp order,
// until fn returns false or the entries end. The entry is valid only during
// the call. It returns the timestamp of the last entry passed to fn.
func (e *Engine) ReadOplog(ctx context.Context, after oplog.Timestamp, fn func(ts oplog.Timestamp, entry bson.Raw) (bool, error)) (oplog.Timestamp, error) {
	if e.oplog == nil {
		return after, ErrOplogOff
	}
	return oplogstore.Read(ctx, e.store, e.oplog, after, fn)
}

// OldestOplog is the timestamp of the oldest stored entry, zero if none:
// a reader resuming before it has lost history.
func (e *Engine) OldestOplog(ctx context.Context) (oplog.Timestamp, error) {
	var floor oplog.Timestamp
	if e.oplog != nil {
		floor = e.oplog.Floor()
	}
	return oplogstore.Oldest(ctx, e.store, floor)
}

// createEntry is the 'c' entry of the creation of a collection: MongoDB's
// {create: name, idIndex, ...options}.
func createEntry(meta *collMeta) []oplog.Entry {
	o := bson.D{{Key: "create", Value: meta.Name}}
	if meta.Options != nil {
		elems, _ := meta.Options.Elements()
		for _, el := range elems {
			o = append(o, bson.E{Key: el.Key(), Value: el.Value()})
		}
	}
	o = append(o, bson.E{Key: "idIndex", Value: IDIndexSpec(meta.Options)})
	return cmdEntry(meta.DB, meta.UUID.Data, o, nil)
}

// renameEntry is the 'c' entry of renaming st's collection to db.to;
// droppedUUID is the UUID of the target it replaced, nil if none.
func renameEntry(st *collState, db, to string, droppedUUID []byte) []oplog.Entry {
	var dropTarget any = false
	if droppedUUID != nil {
		dropTarget = bson.Binary{Subtype: bson.TypeBinaryUUID, Data: droppedUUID}
	}
	o := bson.D{{Key: "renameCollection", Value: st.ns()}, {Key: "to", Value: db + "." + to}, {Key: "stayTemp", Value: false}, {Key: "dropTarget", Value: dropTarget}}
	return cmdEntry(st.meta.DB, st.meta.UUID.Data, o, nil)
}

// collModO2 is the o2 of a collMod entry, as MongoDB logs it: the
// collection's options before the change (with its UUID), and the index's
// expireAfterSeconds before a TTL change (nil: none).
func collModO2(old *collMeta, oldExpire *int32) bson.D {
	opts := bson.D{{Key: "uuid", Value: old.UUID}}
	if len(old.Options) > 0 {
		elems, _ := old.Options.Elements()
		for _, el := range elems {
			opts = append(opts, bson.E{Key: el.Key(), Value: el.Value()})
		}
	}
	o2 := bson.D{{Key: "collectionOptions_old", Value: opts}}
	if oldExpire != nil {
		o2 = append(o2, bson.E{Key: "expireAfterSeconds_old", Value: int64(*oldExpire)})
	}
	return o2
}

// collModIndexCmd is the o of a collMod that changes an index, as the
// command gave it: {collMod: coll, index: {name or keyPattern, changes}}.
func collModIndexCmd(coll string, ch IndexChange) bson.D {
	var ix bson.D
	if ch.Name != "" {
		ix = append(ix, bson.E{Key: "name", Value: ch.Name})
	} else {
		ix = append(ix, bson.E{Key: "keyPattern", Value: ch.KeyPattern})
	}
	if ch.ExpireAfter != nil {
		ix = append(ix, bson.E{Key: "expireAfterSeconds", Value: bson.RawValue{Type: bson.Type(ch.ExpireAfter.Type), Value: ch.ExpireAfter.Data}})
	}
	if ch.Hidden != nil {
		ix = append(ix, bson.E{Key: "hidden", Value: *ch.Hidden})
	}
	return bson.D{{Key: "collMod", Value: coll}, {Key: "index", Value: ix}}
}

// ClusterTime is the newest timestamp handed out, the cluster time of this
// single node ($clusterTime, operationTime); zero with the oplog off.
func (e *Engine) ClusterTime() oplog.Timestamp {
	if e.oplog == nil {
		return oplog.Timestamp{}
	}
	return e.oplog.Last()
}

// AppendNoop logs a no-op ('n') entry with o as its message and returns
// its timestamp once it is durable and visible: what mongod writes to move
// the cluster time forward without a write, for example to make a
// linearizable read's point in time durable.
func (e *Engine) AppendNoop(ctx context.Context, o bson.D) (oplog.Timestamp, error) {
	if e.oplog == nil {
		return oplog.Timestamp{}, ErrOplogOff
	}
	raw, err := bson.Marshal(o)
	if err != nil {
		return oplog.Timestamp{}, fmt.Errorf("engine: no-op entry: %w", err)
	}
	tx, err := e.beginPlain(ctx, false)
	if err != nil {
		return oplog.Timestamp{}, err
	}
	defer tx.Rollback()
	r, err := e.oplog.AppendContext(ctx, tx, []oplog.Entry{{Op: oplog.Noop, O: raw}})
	if err != nil {
		return oplog.Timestamp{}, err
	}
	if err := e.leaseHolds(); err != nil {
		r.Finish(false)
		return oplog.Timestamp{}, err
	}
	_, err = tx.Commit(ctx, kv.Sync)
	r.Finish(err == nil)
	if err != nil {
		return oplog.Timestamp{}, err
	}
	// Visible once every earlier reservation has finished too.
	if _, err := e.oplog.Wait(context.Background(), r.Last.Prev()); err != nil {
		return oplog.Timestamp{}, err
	}
	return r.Last, nil
}

// PreImagesOption is the collection option that makes updates and deletes
// keep the document's pre-image for change streams.
const PreImagesOption = preimage.Option

// ChangeStreamOptions is the changeStreamOptions cluster parameter:
// preAndPostImages.expireAfterSeconds, and when it was set.
type ChangeStreamOptions = preimage.Options

// ChangeStreamOptions returns the changeStreamOptions cluster parameter.
func (e *Engine) ChangeStreamOptions() ChangeStreamOptions { return e.images.Options() }

// SetChangeStreamOptions sets preAndPostImages.expireAfterSeconds (0:
// off), durably, at a new cluster time.
func (e *Engine) SetChangeStreamOptions(ctx context.Context, expireAfterSeconds int64) error {
	return e.images.SetOptions(expireAfterSeconds)
}

// ExpirePreImages removes the pre-images expireAfterSeconds has expired.
func (e *Engine) ExpirePreImages(ctx context.Context) error { return e.images.Expire() }

// PreImage returns the pre-image stored with the oplog entry at ts, nil if
// there is none (see preimage.Images.Get).
func (e *Engine) PreImage(ctx context.Context, ts oplog.Timestamp) (bson.Raw, error) {
	return e.images.Get(ctx, ts)
}

// imageHost is the engine as package preimage sees it.
type imageHost struct{ e *Engine }

func (h imageHost) Get(ctx context.Context, key []byte) ([]byte, error) {
	return h.e.store.Get(ctx, key)
}
func (h imageHost) Now() time.Time { return h.e.clock.Now() }
func (h imageHost) Logged() bool   { return h.e.oplog != nil }
func (h imageHost) AppendNoop(o bson.D) (oplog.Timestamp, error) {
	return h.e.AppendNoop(context.TODO(), o)
}

func (h imageHost) ExpireBefore(cut oplog.Timestamp) error {
	return h.e.oplog.ExpirePreImages(oplogstore.Store{KV: h.e.store}, cut)
}

func (h imageHost) StoreCatalog(key, value []byte) error {
	ctx := context.TODO()
	tx, err := h.e.beginPlain(ctx, false)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := tx.Set(key, value); err != nil {
		return err
	}
	if _, err := tx.Commit(ctx, kv.Sync); err != nil {
		return fmt.Errorf("engine: store changeStreamOptions: %w", err)
	}
	return nil
}

// isOplogNS reports whether db.coll is the oplog while it is on; with the
// oplog off, local.oplog.rs is an ordinary name, as on a standalone mongod.
func (e *Engine) isOplogNS(db, coll string) bool {
	return e.oplog != nil && db == "local" && coll == "oplog.rs"
}

// errOplogWrite refuses a client's write to the oplog, which only the
// server's own writes append to.
func errOplogWrite() error {
	return mongoerr.New(mongoerr.InvalidNamespace, "cannot write to '%s'", OplogNS)
}

// findOplog opens a cursor over the oplog (oplogstore.Open), within the
// sort limit.
func (e *Engine) findOplog(ctx context.Context, cur *Cursor, q *compiledQuery, spec FindSpec) (*Cursor, error) {
	ol, err := oplogstore.Open(ctx, e.store, e.oplog, spec.Filter, q.filter, q.sort, e.sortLimitOf())
	if err != nil {
		return nil, err
	}
	cur.ol = ol
	return cur, nil
}
