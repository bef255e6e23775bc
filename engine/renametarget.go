package engine

import (
	"context"
	"fmt"

	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/namespace"
	"github.com/lethedb/lethe/engine/reclaim"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/mongoerr"
)

// renameReplacing renames fromDB.from over the existing toDB.to
// (renameCollection with dropTarget) in one commit, as MongoDB does: the
// target goes with the rename, whose one oplog entry names the target's
// UUID as dropTarget. There is no separate drop entry, so change streams
// see a rename (operationDescription.dropTarget) and no drop of the target
// (jstests/change_streams/show_expanded_events.js, metadata_notifications.js),
// and no reader sees the target gone but the source not yet renamed.
func (e *Engine) renameReplacing(ctx context.Context, fromDB, from, toDB, to string) error {
	ranges, err := e.renameReplacingLocked(ctx, fromDB, from, toDB, to)
	e.reclaimDropped(ctx, ranges)
	return err
}

// renameReplacingLocked is renameReplacing under the collections' locks;
// it returns the target's ranges, to reclaim once the locks are released.
func (e *Engine) renameReplacingLocked(ctx context.Context, fromDB, from, toDB, to string) ([]reclaim.Range, error) {
	if err := e.writable(); err != nil {
		return nil, err
	}
	src, dst := e.collection(fromDB, from), e.collection(toDB, to)
	if src == nil {
		return nil, mongoerr.New(mongoerr.NamespaceNotFound, "Source collection %s.%s does not exist", fromDB, from)
	}
	if dst == nil {
		return nil, e.RenameCollection(ctx, fromDB, from, toDB, to, false)
	}
	// Two renames in opposite directions take the two ddl locks in the
	// same order: that of the collections' ids.
	first, second := src, dst
	if dst.st().meta.ID < src.st().meta.ID {
		first, second = dst, src
	}
	h, err := e.lockForChange(ctx, first, second)
	if err != nil {
		return nil, err
	}
	defer h.unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.colls[nsKey(fromDB, from)] != src {
		return nil, mongoerr.New(mongoerr.NamespaceNotFound, "Source collection %s.%s does not exist", fromDB, from)
	}
	if e.colls[nsKey(toDB, to)] != dst {
		return nil, mongoerr.New(mongoerr.Interrupted, "renameCollection: the target %s.%s was created, dropped or renamed meanwhile", toDB, to)
	}
	if e.isViewLocked(toDB, to) {
		return nil, mongoerr.New(mongoerr.NamespaceExists, "a view already exists with that name: %s.%s", toDB, to)
	}
	ranges, err := e.commitRename(ctx, src, dst, fromDB, from, toDB, to)
	if err != nil {
		return nil, fmt.Errorf("engine: rename %s.%s over %s.%s: %w", fromDB, from, toDB, to, err)
	}
	return ranges, nil
}

// commitRename commits the rename of src from fromDB.from to toDB.to,
// dropping dst (nil: none) in the same commit, and installs the new
// catalog state. The caller holds the ddl locks of both and e.mu, and has
// checked that the map still names them; it reclaims the ranges returned,
// dst's, once it has released them.
func (e *Engine) commitRename(ctx context.Context, src, dst *Collection, fromDB, from, toDB, to string) ([]reclaim.Range, error) {
	// A rename adds only a small catalog entry: it may use the disk's
	// reserve.
	tx, err := e.beginCatalog(ctx, true)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	// The entry moves as stored, with another server's changes to it.
	srcMeta, stale, err := e.storedMeta(ctx, tx, src.st())
	if err != nil {
		return nil, err
	}
	if dst != nil {
		if _, _, err := e.storedMeta(ctx, tx, dst.st()); err != nil {
			return nil, err
		}
	}
	var dstState *collState
	var ranges []reclaim.Range
	var droppedUUID []byte
	if dst != nil {
		dstState = dst.st()
		droppedUUID = dstState.meta.UUID.Data
		if err := tx.Delete(record.CatalogKey(toDB, to)); err != nil {
			return nil, err
		}
		ranges = collectionRanges(dstState)
		if err := e.recordDrop(tx, ranges); err != nil {
			return nil, err
		}
	}
	st := src.st()
	meta := srcMeta
	meta.DB, meta.Name = toDB, to
	meta.Fence = "" // the change the fence held writes off for (fence.go)
	if err := tx.Delete(record.CatalogKey(fromDB, from)); err != nil {
		return nil, err
	}
	if err := putMeta(tx, &meta); err != nil {
		return nil, err
	}
	if err := e.commitLogged(ctx, tx, kv.Sync, renameEntry(st, toDB, to, droppedUUID)); err != nil {
		return nil, err
	}
	if dst != nil {
		dropped := *dstState
		dropped.dropped = true
		dst.setState(&dropped)
	}
	nst := *st
	nst.meta = meta
	if stale {
		fresh, err := st.changed(meta)
		if err != nil {
			return nil, err
		}
		nst = *fresh
	}
	nst.renames++
	src.setState(&nst)
	delete(e.colls, nsKey(fromDB, from))
	if dst != nil {
		e.forgetLocked(nsKey(toDB, to), dst)
	}
	e.colls[nsKey(toDB, to)] = src
	return ranges, nil
}

// renameOver renames db.from to db.to, dropping db.to if it exists, in one
// commit.
func (e *Engine) renameOver(ctx context.Context, db, from, to string) error {
	ranges, err := e.renameOverLocked(ctx, db, from, to)
	e.reclaimDropped(ctx, ranges)
	return err
}

// renameOverLocked is renameOver under the collections' locks; it returns
// the ranges of the target it dropped, to reclaim once they are released.
func (e *Engine) renameOverLocked(ctx context.Context, db, from, to string) ([]reclaim.Range, error) {
	if err := namespace.Validate(db, to); err != nil {
		return nil, err
	}
	if err := e.writable(); err != nil {
		return nil, err
	}
	src := e.collection(db, from)
	if src == nil {
		return nil, mongoerr.New(mongoerr.NamespaceNotFound, "Source collection %s.%s does not exist", db, from)
	}
	// The target is locked before the source: the source is a temporary
	// collection no other request knows, so no request takes the two in
	// the other order.
	dst := e.collection(db, to)
	locked := []*Collection{src}
	if dst != nil {
		locked = []*Collection{dst, src}
	}
	h, err := e.lockForChange(ctx, locked...)
	if err != nil {
		return nil, err
	}
	defer h.unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.colls[nsKey(db, from)] != src || e.colls[nsKey(db, to)] != dst {
		return nil, mongoerr.New(mongoerr.Interrupted, "$out: the collection %s.%s was created, dropped or renamed while $out wrote it", db, to)
	}
	ranges, err := e.commitRename(ctx, src, dst, db, from, db, to)
	if err != nil {
		return nil, fmt.Errorf("engine: $out into %s.%s: %w", db, to, err)
	}
	return ranges, nil
}
