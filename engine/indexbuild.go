package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/reclaim"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/oplog"
)

// buildShared builds the indexes fresh of c on a store that other servers
// write too, in the states of an online schema change (as F1 and TiDB
// do), each seen by every live server before the next:
//
//  1. The indexes are stored as building: every server's writers maintain
//     them from the moment it installs that state, and no plan uses them.
//     The build waits until every live server has installed it
//     (awaitCatalog), so that no write anywhere still misses them.
//  2. The entries of the documents stored before are written in
//     optimistic transactions that read a batch of documents at their
//     start. Every writer now maintains the indexes, so a write of one of
//     those documents after that start sets or deletes the very entries
//     the batch writes: the batch's commit then conflicts and it is read
//     again. A write before the start is read. No document lock is taken,
//     so the build waits for no transaction that holds one (one that wrote
//     under the state before fails at its commit, as its collection
//     changed). A duplicate in a unique index fails the build, which then
//     takes the indexes out again.
//  3. The indexes are stored ready, with the oplog's createIndexes
//     entries ents.
//
// The caller holds c's exclusive ddl lock; buildShared releases it for
// the wait of the first step, which this server's refresh of the catalog
// may need the lock for, and takes it again for the rest. It returns the
// state installed.
func (e *Engine) buildShared(ctx context.Context, c *Collection, fresh []record.IndexMeta, ranges []reclaim.Range, ents []oplog.Entry) (*collState, error) {
	ids := map[uint64]bool{}
	for _, im := range fresh {
		ids[im.ID] = true
		e.cluster.running.Store(im.ID, struct{}{})
	}
	defer e.forgetRunning(ids)
	// 1. Building.
	st, err := e.changeStored(ctx, c, func(meta *collMeta) error {
		for _, im := range fresh {
			im.Building, im.Builder = true, e.cluster.member.ID()
			meta.Indexes = append(meta.Indexes, im)
		}
		return nil
	}, nil)
	if err != nil {
		return nil, err
	}
	c.ddl.Unlock()
	e.awaitCatalog(ctx)
	return e.finishBuild(ctx, c, st, ids, ranges, ents, false)
}

// buildInProgress is createIndexes' answer, to its caller only, when an
// index it asks for is being built (on a shared store, by any server):
// the caller waits for that build and asks again.
type buildInProgress struct {
	c   *Collection
	ids map[uint64]bool
}

func (b *buildInProgress) Error() string { return "engine: an index build is already in progress" }

// buildingOf returns the builds in progress in st (c's state) of indexes
// identical to those requested, nil if none.
func buildingOf(c *Collection, st *collState, metas []record.IndexMeta) *buildInProgress {
	var busy *buildInProgress
	for _, im := range st.meta.Indexes {
		if !im.Building {
			continue
		}
		for _, req := range metas {
			if exists, err := checkIndexConflict(req, im); err == nil && exists {
				if busy == nil {
					busy = &buildInProgress{c: c, ids: map[uint64]bool{}}
				}
				busy.ids[im.ID] = true
			}
		}
	}
	return busy
}

// waitBuild waits until none of the indexes of busy is being built any
// more: ready, or taken out by a failed build, or the collection gone.
func (e *Engine) waitBuild(ctx context.Context, busy *buildInProgress) error {
	for {
		st := busy.c.st()
		building := false
		for _, im := range st.meta.Indexes {
			building = building || (im.Building && busy.ids[im.ID])
		}
		if !building || st.dropped {
			return nil
		}
		if err := e.waitReplaced(ctx, []*Collection{busy.c}, st); err != nil {
			return err
		}
	}
}

// forgetRunning drops ids from the builds this server runs.
func (e *Engine) forgetRunning(ids map[uint64]bool) {
	for id := range ids {
		e.cluster.running.Delete(id)
	}
}

// finishBuild runs the last two steps of a build of the indexes ids of c,
// stored as building in st: the backfill, then ready. The caller holds no
// lock of c; finishBuild returns holding its exclusive ddl lock. A failed
// build takes its indexes out, unless ctx ended and keep is set: a build
// taken over by a server that leaves (or dies) stays for another to take.
func (e *Engine) finishBuild(ctx context.Context, c *Collection, st *collState, ids map[uint64]bool, ranges []reclaim.Range, ents []oplog.Entry, keep bool) (*collState, error) {
	// 2. Backfill, with no lock of c: this server's writers go on, as the
	// others' do, and its refresh of the catalog can install what the
	// others change meanwhile (an index marked multikey).
	multi, err := e.backfillBatches(ctx, st, ids)
	c.ddl.Lock()
	if err == nil {
		// 3. Ready, unless a drop took one of them meanwhile: then the
		// build of all of them ends, as mongod's does.
		var nst *collState
		aborted := false
		nst, err = e.changeStored(ctx, c, func(meta *collMeta) error {
			found := 0
			for i := range meta.Indexes {
				if im := &meta.Indexes[i]; ids[im.ID] {
					im.Building, im.Builder = false, ""
					im.Multikey = im.Multikey || multi[im.ID]
					found++
				}
			}
			if aborted = found < len(ids); !aborted {
				return nil
			}
			return errBuildAborted(meta)
		}, ents)
		if !aborted {
			return nst, err
		}
	}
	if keep && ctx.Err() != nil {
		return nil, err
	}
	// Take the indexes out; their entries are unreachable then.
	if _, rerr := e.changeStored(context.WithoutCancel(ctx), c, func(meta *collMeta) error {
		kept := meta.Indexes[:0]
		for _, im := range meta.Indexes {
			if !ids[im.ID] {
				kept = append(kept, im)
			}
		}
		meta.Indexes = kept
		return nil
	}, nil); rerr != nil && mongoerr.CodeOf(rerr) != mongoerr.NamespaceNotFound {
		e.log.Warn("engine: a failed index build's indexes stay building", zap.Error(rerr))
	}
	reclaim.Drop(context.WithoutCancel(ctx), e.store, e.log, ranges)
	return nil, err
}

// errBuildAborted is the error of an index build one of whose indexes was
// dropped before it was ready.
func errBuildAborted(meta *collMeta) error {
	return mongoerr.New(mongoerr.IndexBuildAborted, "Index build aborted: an index being built on %s.%s was dropped", meta.DB, meta.Name)
}

// changeStored changes c's stored catalog entry as the store has it now
// (another server may have changed it since this one installed it, for
// example marking an index multikey) and installs the result; the caller
// holds c's exclusive ddl lock, so no write of this server runs meanwhile.
func (e *Engine) changeStored(ctx context.Context, c *Collection, change func(*collMeta) error, ents []oplog.Entry) (*collState, error) {
	st := c.st()
	tx, err := e.beginCatalog(ctx, true)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	meta, _, err := readMeta(ctx, tx, st.meta.DB, st.meta.Name)
	if err != nil && err != kv.ErrNotFound {
		return nil, fmt.Errorf("engine: read the catalog entry of %s: %w", st.ns(), err)
	}
	if err == kv.ErrNotFound || meta.ID != st.meta.ID {
		return nil, mongoerr.New(mongoerr.NamespaceNotFound, "collection %s was dropped during the index build", st.ns())
	}
	if err := change(&meta); err != nil {
		return nil, err
	}
	nst, err := st.changed(meta)
	if err != nil {
		return nil, err
	}
	if err := putMeta(tx, &meta); err != nil {
		return nil, err
	}
	if err := e.commitLogged(ctx, tx, kv.Sync, ents); err != nil {
		return nil, fmt.Errorf("engine: index build on %s: %w", st.ns(), err)
	}
	c.setState(nst)
	return nst, nil
}

// backfillBatch is how many documents one transaction of a backfill
// reads.
const backfillBatch = 256

// backfillPatience is how long a backfill waits for the documents whose
// locks others hold before it indexes them without their lock.
const backfillPatience = 250 * time.Millisecond

// backfillBatches writes the entries of the indexes ids (building in st)
// for every stored document, a batch per transaction. It returns the
// indexes found multikey.
//
// A batch locks its documents (and the unique entries it writes) without
// waiting, and reads them as they are: a writer of one of them, which
// maintains the indexes already, then writes after the batch and sees its
// entries. A document another holds is tried again for a while; one still
// held after that (by a multi-document transaction, which holds its locks
// to its end) is indexed as committed, in an optimistic transaction: if
// the holder commits a change of it first, the change sets or deletes the
// very entries the batch writes and the batch conflicts and is read
// again; if the holder wrote under the state before the build, it fails at
// its commit, its collection having changed.
func (e *Engine) backfillBatches(ctx context.Context, st *collState, ids map[uint64]bool) (map[uint64]bool, error) {
	var build []*record.Index
	for _, ix := range st.indexes {
		if ids[ix.Meta.ID] {
			build = append(build, ix)
		}
	}
	multi := map[uint64]bool{}
	if len(build) == 0 {
		return multi, nil
	}
	lo, hi := record.DocRange(st.meta.ID)
	for from := lo; ; {
		keys, err := e.docKeys(ctx, from, hi, backfillBatch)
		if err != nil || len(keys) == 0 {
			return multi, err
		}
		from = append(bytes.Clone(keys[len(keys)-1]), 0)
		deadline := time.Now().Add(backfillPatience)
		for attempt := 0; len(keys) > 0; attempt++ {
			locked := time.Now().Before(deadline)
			var held [][]byte
			held, err = e.backfillKeys(ctx, st, build, keys, multi, locked)
			switch {
			case err == nil:
				keys = held
			case !kv.IsConflict(err) || attempt >= 100:
				return nil, err
			}
			if len(keys) == 0 {
				break
			}
			// Others hold some of the documents, or changed an entry of
			// the batch since it began: try those again.
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Millisecond << min(attempt, 6)):
			}
		}
	}
}

// docKeys reads up to n document keys in [from, hi).
func (e *Engine) docKeys(ctx context.Context, from, hi []byte, n int) ([][]byte, error) {
	it, err := e.store.Iter(ctx, from, hi, false)
	if err != nil {
		return nil, fmt.Errorf("engine: index build: %w", err)
	}
	defer it.Close()
	var keys [][]byte
	for ok := it.First(); ok && len(keys) < n; ok = it.Next() {
		keys = append(keys, bytes.Clone(it.Key()))
	}
	return keys, it.Error()
}

// backfillKeys writes the entries of one batch of documents in one
// transaction: pessimistic when locked is set, returning the documents
// others hold, which it leaves alone; else optimistic, for all of them.
func (e *Engine) backfillKeys(ctx context.Context, st *collState, build []*record.Index, keys [][]byte, multi map[uint64]bool, locked bool) (held [][]byte, err error) {
	tx, err := e.store.Begin(ctx, kv.TxnOptions{Pessimistic: locked})
	if err != nil {
		return nil, fmt.Errorf("engine: index build: %w", err)
	}
	defer tx.Rollback()
	lock := func(k []byte) (bool, error) {
		if !locked {
			return true, nil
		}
		switch err := tx.LockKeys(ctx, kv.LockOptions{NoWait: true}, k); {
		case err == nil:
			return true, nil
		case errors.Is(err, kv.ErrLocked) || kv.IsConflict(err):
			return false, nil
		default:
			return false, fmt.Errorf("engine: index build: %w", err)
		}
	}
	found := map[uint64]bool{}
	for _, k := range keys {
		if ok, err := lock(k); err != nil {
			return nil, err
		} else if !ok {
			held = append(held, k)
			continue
		}
		v, err := tx.Get(ctx, k)
		if err == kv.ErrNotFound {
			continue // deleted since the keys were read
		} else if err != nil {
			return nil, err
		}
		_, doc, err := record.SplitValue(v)
		if err != nil {
			return nil, err
		}
		pk := record.PKOfDocKey(k)
		ents, ok, err := backfillEntries(ctx, tx, st, build, pk, doc, found, lock)
		if err != nil {
			return nil, err
		}
		if !ok {
			held = append(held, k)
			continue
		}
		for _, ek := range ents {
			if err := tx.Set(ek, pk); err != nil {
				return nil, err
			}
		}
		if locked {
			// The document is written again as it is, so that a writer
			// that began before this batch and locks it after sees a
			// change at its lock, as for any write of the document, and
			// not only at its commit in the entries it writes too (which
			// the TiKV mock, unlike TiKV, checks against its start).
			if err := tx.Set(k, v); err != nil {
				return nil, err
			}
		}
	}
	if _, err := tx.Commit(ctx, kv.Sync); err != nil {
		return nil, err
	}
	for id := range found {
		multi[id] = true
	}
	return held, nil
}

// backfillEntries returns the entry keys of doc (primary key pk) in the
// indexes build, checking and locking (lock) its unique entries: ok false
// when another holds one. A duplicate is the build's DuplicateKey. found
// collects the indexes the document makes multikey.
func backfillEntries(ctx context.Context, tx kv.Txn, st *collState, build []*record.Index, pk []byte, doc bson.Raw, found map[uint64]bool, lock func([]byte) (bool, error)) (ents [][]byte, ok bool, err error) {
	for _, ix := range build {
		ixKeys, isMulti, err := ix.Keys(doc)
		if err != nil {
			return nil, false, err
		}
		if isMulti {
			found[ix.Meta.ID] = true
		}
		for _, ik := range ixKeys {
			ek := ix.EntryKey(nil, ik, pk)
			if ix.Meta.Unique {
				if ok, err := lock(ek); err != nil || !ok {
					return nil, false, err
				}
				switch got, err := tx.Get(ctx, ek); {
				case err == nil && !bytes.Equal(got, pk):
					return nil, false, duplicateKey(st, ix.Meta.Name, ix.Meta.Key, ix.KeyValue(doc))
				case err != nil && err != kv.ErrNotFound:
					return nil, false, err
				}
			}
			ents = append(ents, ek)
		}
	}
	return ents, true, nil
}

// takeOverBuilds finishes the index builds whose builder's lease on the
// roster has run out (it died, or was cut off), so that a build survives
// its builder, and those stored as this server's that it does not run (a
// failed build whose indexes could not be taken out): each orphaned build
// is claimed by a catalog change that names this server its builder,
// which one server only can make, and is then finished in the background.
// live are the roster's live ids.
func (e *Engine) takeOverBuilds(ctx context.Context, live map[string]bool) {
	for _, c := range e.openCollections() {
		st := c.st()
		ids := map[uint64]bool{}
		for _, im := range st.meta.Indexes {
			if im.Building && e.abandoned(im.Builder, im.ID, live) {
				ids[im.ID] = true
			}
		}
		if len(ids) == 0 || st.dropped {
			continue
		}
		c.ddl.Lock()
		claimed := map[uint64]bool{}
		nst, err := e.changeStored(ctx, c, func(meta *collMeta) error {
			for i := range meta.Indexes {
				if im := &meta.Indexes[i]; ids[im.ID] && im.Building && e.abandoned(im.Builder, im.ID, live) {
					im.Builder = e.cluster.member.ID()
					claimed[im.ID] = true
				}
			}
			return nil
		}, nil)
		if err == nil {
			for id := range claimed {
				e.cluster.running.Store(id, struct{}{})
			}
		}
		c.ddl.Unlock()
		if err != nil || len(claimed) == 0 {
			continue
		}
		var ranges []reclaim.Range
		var ents []oplog.Entry
		for _, im := range nst.meta.Indexes {
			if claimed[im.ID] {
				lo, hi := record.IndexRange(im.ID)
				ranges = append(ranges, reclaim.Range{Lo: lo, Hi: hi})
				spec := im
				spec.Building, spec.Builder = false, ""
				o := append(bson.D{{Key: "createIndexes", Value: nst.meta.Name}}, spec.Spec()...)
				ents = append(ents, cmdEntry(nst.meta.DB, nst.meta.UUID.Data, o, nil)...)
			}
		}
		e.log.Info("engine: taking over an index build whose server is gone", zap.String("namespace", nst.ns()), zap.Int("indexes", len(claimed)))
		e.cluster.builds.Add(1)
		go func() {
			defer e.cluster.builds.Done()
			defer e.forgetRunning(claimed)
			_, err := e.finishBuild(ctx, c, nst, claimed, ranges, ents, true)
			c.ddl.Unlock()
			if err != nil && ctx.Err() == nil {
				e.log.Warn("engine: an index build taken over failed", zap.String("namespace", nst.ns()), zap.Error(err))
			}
			e.awaitCatalog(ctx)
		}()
	}
}
