package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/oplog"
	"github.com/lethedb/lethe/ttlindex"
)

// Group commits: a multi-document command adds documents to one batch until
// it holds this many, then commits with one WAL sync. MongoDB's contract is
// per-document atomicity, which each batch still gives.
const (
	maxBatchOps   = 1000
	maxBatchBytes = 8 << 20
)

// writer accumulates the writes of one command into synced batches, holding
// the lock stripes of every key it has checked until the batch commits.
type writer struct {
	e   *Engine
	c   *Collection
	st  *collState
	b   *pebble.Batch
	ls  lockSet
	ops int // documents done in the pending batch
	// committed counts the documents done in batches that committed: what
	// a command may report as written when a later commit fails.
	committed int
	wake      int64 // earliest expiry created, for the reaper; 0 if none
	// noSync commits without waiting for the WAL sync, for writes that are
	// not acknowledged to a client.
	noSync bool
	// bypassValidation skips the collection's validator (validator.go).
	bypassValidation bool
	// now is the time of the command, $$NOW in the validator; zero means
	// the clock at the first checked write.
	now time.Time
	// validator is the collection's validator for this command, compiled
	// at its first checked write.
	validator *query.Filter
	// A plain batch cannot be read, so the writer remembers what its
	// pending batch holds: pendingDocs maps primary keys to the documents
	// written (nil once deleted), pendingUnique unique index entry keys to
	// their primary keys (nil once deleted). Checks of later documents of
	// the same command read them before the store.
	pendingDocs   map[string]*storedDoc
	pendingUnique map[string][]byte
	// logged are the oplog entries of the pending batch, appended to it at
	// commit (oplog.go); replacement logs updates as whole documents
	// rather than diffs.
	logged      []oplog.Entry
	replacement bool
	// txn, for a retryable write, ties the entries logged to its
	// statement txn.StmtID and records statements' results (retry.go).
	txn *Txn
}

func (e *Engine) newWriter(c *Collection) *writer {
	return &writer{e: e, c: c, st: c.st(), ls: lockSet{t: &e.locks}}
}

func (w *writer) batch() *pebble.Batch {
	if w.b == nil {
		w.b = w.e.db.NewBatch()
	}
	return w.b
}

// lock makes sure the stripes are held. If some are busy it commits what is
// pending, releases everything and takes the full set in order; it reports
// whether that happened, in which case the caller must re-read what it read
// under the old locks.
func (w *writer) lock(stripes []uint32) (relocked bool, err error) {
	if len(w.ls.held) == 0 {
		w.ls.lockAll(stripes)
		return false, nil
	}
	if w.ls.tryAdd(stripes) {
		return false, nil
	}
	keep := append([]uint32(nil), w.ls.held...)
	if err := w.flush(); err != nil {
		return true, err
	}
	w.ls.lockAll(append(keep, stripes...))
	return true, nil
}

// commitError is a failed commit of a writer's batch: every document
// written since the previous commit is lost, whichever statement the caller
// was working on when it happened.
type commitError struct{ err error }

func (e *commitError) Error() string { return "engine: commit: " + e.err.Error() }
func (e *commitError) Unwrap() error { return e.err }

func isCommitError(err error) bool {
	var ce *commitError
	return errors.As(err, &ce)
}

// done marks one document's writes complete and commits when the batch is full.
func (w *writer) done() error {
	w.ops++
	if w.ops >= maxBatchOps || (w.b != nil && w.b.Len() >= maxBatchBytes) {
		return w.flush()
	}
	return nil
}

// flush commits pending writes with a WAL sync and releases the locks.
func (w *writer) flush() error {
	defer w.ls.unlockAll()
	if w.b == nil || w.b.Empty() {
		return nil
	}
	b := w.b
	ops := w.ops
	w.b, w.ops = nil, 0
	clear(w.pendingDocs)
	clear(w.pendingUnique)
	defer b.Close()
	opts := pebble.Sync
	if w.noSync {
		opts = pebble.NoSync
	}
	logged := w.logged
	w.logged = w.logged[:0]
	if err := w.e.commitLogged(b, opts, logged); err != nil {
		return &commitError{err: err}
	}
	w.committed += ops
	if w.wake != 0 {
		w.e.reaper.Wake(timeOfMillis(w.wake))
		w.wake = 0
	}
	return nil
}

// close drops uncommitted writes and releases the locks.
func (w *writer) close() {
	if w.b != nil {
		w.b.Close()
		w.b = nil
	}
	w.logged = w.logged[:0]
	clear(w.pendingDocs)
	clear(w.pendingUnique)
	w.ls.unlockAll()
}

// storedDoc is a document as stored: primary key, header and BSON.
type storedDoc struct {
	pk  []byte
	h   header
	doc bson.Raw
}

// docEntries are the derived keys of one document: index entries and the
// expiry entry.
type docEntries struct {
	index  [][][]byte // per index of st.indexes, encoded keys without pk
	expiry []byte
}

func (w *writer) entriesOf(d *storedDoc) (docEntries, error) {
	var ent docEntries
	ent.index = make([][][]byte, len(w.st.indexes))
	marked := false
	defer func() {
		if marked {
			w.st = w.c.st()
		}
	}()
	for i, ix := range w.st.indexes {
		keys, multi, err := ix.keys(d.doc)
		if err != nil {
			return ent, err
		}
		if multi && !ix.meta.Multikey {
			if err := w.e.markMultikey(w.c, ix); err != nil {
				return ent, err
			}
			marked = true
		}
		ent.index[i] = keys
	}
	ent.expiry = expiryKey(w.st.meta.ID, d)
	return ent, nil
}

// expiryKey is the document's entry in one of the two expiry families; nil
// for ttl -1, which never expires.
func expiryKey(collID uint64, d *storedDoc) []byte {
	switch {
	case d.h.ttl == ttlindex.NoTTL:
		return ttlindex.AppendTSKey(nil, collID, d.h.ts, d.pk)
	case d.h.ttl > 0:
		return ttlindex.AppendOwnKey(nil, collID, d.h.ts+int64(d.h.ttl)*1000, d.pk)
	}
	return nil
}

// uniqueStripes are the lock stripes of a document's unique index keys.
func (w *writer) uniqueStripes(ent docEntries, dst []uint32) []uint32 {
	for i, ix := range w.st.indexes {
		if ix.meta.Unique {
			for _, k := range ent.index[i] {
				dst = append(dst, w.e.locks.stripe(ix.meta.ID, k))
			}
		}
	}
	return dst
}

// put writes d with its entries, replacing old (nil for a new document).
func (w *writer) put(d *storedDoc, ent docEntries, old *storedDoc, oldEnt *docEntries) error {
	b := w.batch()
	if old != nil {
		w.deleteEntries(old, oldEnt, &ent)
	}
	val := appendHeader(make([]byte, 0, headerLen+len(d.doc)), d.h)
	val = append(val, d.doc...)
	if err := b.Set(docKey(nil, w.st.meta.ID, d.pk), val, nil); err != nil {
		return err
	}
	w.notePendingDoc(d.pk, d)
	w.logPut(d, old)
	for i, ix := range w.st.indexes {
		for _, k := range ent.index[i] {
			if oldEnt != nil && containsKey(oldEnt.index[i], k) {
				continue
			}
			ek := ix.entryKey(nil, k, d.pk)
			if err := b.Set(ek, d.pk, nil); err != nil {
				return err
			}
			if ix.meta.Unique {
				w.notePending(ek, d.pk)
			}
		}
	}
	if ent.expiry != nil && (oldEnt == nil || !bytesEqual(oldEnt.expiry, ent.expiry)) {
		if err := b.Set(ent.expiry, nil, nil); err != nil {
			return err
		}
	}
	if at, ok := ttlindex.ExpireAt(w.st.ttl, d.h.ts, d.h.ttl); ok && (w.wake == 0 || at < w.wake) {
		w.wake = at
	}
	return nil
}

// deleteEntries removes old's index and expiry entries, except those keep
// also has.
func (w *writer) deleteEntries(old *storedDoc, oldEnt *docEntries, keep *docEntries) {
	b := w.batch()
	for i, ix := range w.st.indexes {
		for _, k := range oldEnt.index[i] {
			if keep != nil && containsKey(keep.index[i], k) {
				continue
			}
			ek := ix.entryKey(nil, k, old.pk)
			_ = b.Delete(ek, nil)
			if ix.meta.Unique {
				w.notePending(ek, nil)
			}
		}
	}
	if oldEnt.expiry != nil && (keep == nil || !bytesEqual(oldEnt.expiry, keep.expiry)) {
		_ = b.Delete(oldEnt.expiry, nil)
	}
}

// notePendingDoc records that the pending batch writes d at pk (nil: deletes it).
func (w *writer) notePendingDoc(pk []byte, d *storedDoc) {
	if w.pendingDocs == nil {
		w.pendingDocs = make(map[string]*storedDoc)
	}
	w.pendingDocs[string(pk)] = d
}

func (w *writer) notePending(entryKey, pk []byte) {
	if w.pendingUnique == nil {
		w.pendingUnique = make(map[string][]byte)
	}
	w.pendingUnique[string(entryKey)] = pk
}

// remove deletes d and all its entries.
func (w *writer) remove(d *storedDoc) error {
	ent, err := w.entriesOf(d)
	if err != nil {
		return fmt.Errorf("engine: entries of stored document: %w", err)
	}
	w.deleteEntries(d, &ent, nil)
	return w.delete(d)
}

// delete deletes the document d, whose entries are already deleted.
func (w *writer) delete(d *storedDoc) error {
	w.notePendingDoc(d.pk, nil)
	w.logDelete(d)
	return w.batch().Delete(docKey(nil, w.st.meta.ID, d.pk), nil)
}

// load reads the document at pk as the pending batch leaves it; nil if
// there is none.
func (w *writer) load(pk []byte) (*storedDoc, error) {
	if d, ok := w.pendingDocs[string(pk)]; ok {
		return d, nil
	}
	return w.e.loadDoc(w.e.db, w.st.meta.ID, pk)
}

// duplicateKey is MongoDB's E11000 error for an index.
func duplicateKey(st *collState, ixName string, keyPattern bson.Raw, keyValue bson.D) error {
	kv, _ := bson.MarshalExtJSON(keyValue, false, false)
	e := mongoerr.New(mongoerr.DuplicateKey, "E11000 duplicate key error collection: %s index: %s dup key: %s", st.ns(), ixName, kv)
	e.Extra = bson.D{{Key: "keyPattern", Value: keyPattern}, {Key: "keyValue", Value: keyValue}}
	return e
}

func containsKey(keys [][]byte, k []byte) bool {
	for _, x := range keys {
		if bytesEqual(x, k) {
			return true
		}
	}
	return false
}
