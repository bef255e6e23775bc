package engine

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/lethedb/lethe/mongoerr"
)

// renameReplacing renames fromDB.from over the existing toDB.to
// (renameCollection with dropTarget) in one commit, as MongoDB does: the
// target goes with the rename, whose one oplog entry names the target's
// UUID as dropTarget. There is no separate drop entry, so change streams
// see a rename (operationDescription.dropTarget) and no drop of the target
// (jstests/change_streams/show_expanded_events.js, metadata_notifications.js),
// and no reader sees the target gone but the source not yet renamed.
func (e *Engine) renameReplacing(fromDB, from, toDB, to string) error {
	if err := e.disk.writable(); err != nil {
		return err
	}
	src, dst := e.collection(fromDB, from), e.collection(toDB, to)
	if src == nil {
		return mongoerr.New(mongoerr.NamespaceNotFound, "Source collection %s.%s does not exist", fromDB, from)
	}
	if dst == nil {
		return e.RenameCollection(fromDB, from, toDB, to, false)
	}
	// Two renames in opposite directions take the two ddl locks in the
	// same order: that of the collections' ids.
	first, second := src, dst
	if dst.st().meta.ID < src.st().meta.ID {
		first, second = dst, src
	}
	first.ddl.Lock()
	defer first.ddl.Unlock()
	second.ddl.Lock()
	defer second.ddl.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.colls[nsKey(fromDB, from)] != src {
		return mongoerr.New(mongoerr.NamespaceNotFound, "Source collection %s.%s does not exist", fromDB, from)
	}
	if e.colls[nsKey(toDB, to)] != dst {
		return mongoerr.New(mongoerr.Interrupted, "renameCollection: the target %s.%s was created, dropped or renamed meanwhile", toDB, to)
	}
	if e.isViewLocked(toDB, to) {
		return mongoerr.New(mongoerr.NamespaceExists, "a view already exists with that name: %s.%s", toDB, to)
	}
	b := e.db.NewBatch()
	defer b.Close()
	dstState := dst.st()
	if err := b.Delete(catalogKey(toDB, to), nil); err != nil {
		return err
	}
	deleteCollectionData(b, dstState)
	st := src.st()
	meta := st.meta
	meta.DB, meta.Name = toDB, to
	_ = b.Delete(catalogKey(fromDB, from), nil)
	if err := putMeta(b, &meta); err != nil {
		return err
	}
	if err := e.commitLogged(b, pebble.Sync, renameEntry(st, toDB, to, dstState.meta.UUID.Data)); err != nil {
		return fmt.Errorf("engine: rename %s.%s over %s.%s: %w", fromDB, from, toDB, to, err)
	}
	dropped := *dstState
	dropped.dropped = true
	dst.state.Store(&dropped)
	nst := *st
	nst.meta = meta
	nst.renames++
	src.state.Store(&nst)
	delete(e.colls, nsKey(fromDB, from))
	e.colls[nsKey(toDB, to)] = src
	return nil
}
