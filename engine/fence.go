package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/lethedb/lethe/mongoerr"
)

// A fence holds the writes of a collection off every server sharing the
// store while a catalog change is made that no write may straddle: drops,
// renames, collMod (validators, pre-images, TTL) and dropIndexes. mongod
// takes the collection's exclusive lock for these, so that each write is
// wholly before or wholly after the change in the oplog: a write under the
// old validator or without the pre-image the change turned on must not
// commit after it, nor a write into a collection after its drop. The ddl
// lock reaches only this server's writers, so on a shared store the change
// goes through two catalog versions, as an index build goes through its
// states (indexbuild.go):
//
//  1. The collection's entry is stored fenced, naming the change (its
//     token). Every server installs it under the collection's exclusive
//     ddl lock, when none of its writes runs, and its writers that come
//     later wait for the fence to go (writeLock). The change waits until
//     every live server has installed it (awaitCatalog).
//  2. The change is stored, the fence gone, with its oplog entry: every
//     write before it committed before its server installed step 1, and
//     every write after it began after its server installed step 2.
//
// A fence whose server's lease runs out is taken down by another server
// (clearOrphanFences), so that a change cut off halfway holds writes off
// for a lease at most.

// ddlHold is the exclusive ddl locks of the collections a catalog change
// works on, fenced on a shared store.
type ddlHold struct {
	e     *Engine
	colls []*Collection
	token string // the fences' token; empty when not fenced
}

// lockForChange takes the exclusive ddl locks of cs in their order, after
// the fences of other changes of them are gone, and on a shared store
// fences them (step 1). cs hold no nil and no collection twice. The caller
// makes its change under the locks, which clears the fences it stores
// (updateMeta, commitDrop, commitRename), and then calls unlock.
func (e *Engine) lockForChange(ctx context.Context, cs ...*Collection) (*ddlHold, error) {
	h := &ddlHold{e: e, colls: cs}
	if err := h.lock(ctx, ""); err != nil {
		return nil, err
	}
	if e.cluster.member == nil {
		return h, nil
	}
	h.token = fmt.Sprintf("%s/%d", e.cluster.member.ID(), e.cluster.fences.Add(1))
	e.cluster.running.Store(h.token, struct{}{})
	for _, c := range cs {
		if c.st().dropped {
			continue
		}
		if _, err := e.changeStored(ctx, c, func(meta *collMeta) error {
			meta.Fence = h.token
			return nil
		}, nil); err != nil {
			h.unlock()
			return nil, err
		}
	}
	// This server's writers are fenced off too now: the locks can go
	// for the wait, during which its refresh may need them (another
	// server's writer that began before the fence may mark an index
	// multikey).
	h.release()
	e.awaitCatalog(ctx)
	if err := h.lock(ctx, h.token); err != nil {
		// Given up (ctx ended): take the fences down, under the locks
		// taken as the refresh takes them.
		for _, c := range cs {
			e.takeDownFence(context.WithoutCancel(ctx), c, h.token)
		}
		e.cluster.running.Delete(h.token)
		return nil, err
	}
	for _, c := range cs {
		if st := c.st(); !st.dropped && st.meta.Fence != h.token {
			// Taken down while this server was cut off from the
			// others (clearOrphanFences).
			h.unlock()
			return nil, mongoerr.New(mongoerr.ConflictingOperationInProgress, "the change of %s was interrupted: this server lost touch with the others", st.ns())
		}
	}
	return h, nil
}

// lockWaitingFences takes c's exclusive ddl lock once no fence of another
// change is on it, for a catalog change that needs none of its own.
func (e *Engine) lockWaitingFences(ctx context.Context, c *Collection) error {
	h := &ddlHold{e: e, colls: []*Collection{c}}
	return h.lock(ctx, "")
}

// lock takes the locks in order, waiting, with none held, while one of the
// collections carries a fence other than mine.
func (h *ddlHold) lock(ctx context.Context, mine string) error {
	for {
		var fenced *collState
		for i, c := range h.colls {
			c.ddl.Lock()
			if st := c.st(); !st.dropped && st.meta.Fence != "" && st.meta.Fence != mine {
				fenced = st
				for _, held := range h.colls[:i+1] {
					held.ddl.Unlock()
				}
				break
			}
		}
		if fenced == nil {
			return nil
		}
		if err := h.e.waitReplaced(ctx, h.colls, fenced); err != nil {
			return err
		}
	}
}

// release unlocks the locks, in the reverse order.
func (h *ddlHold) release() {
	for i := len(h.colls) - 1; i >= 0; i-- {
		h.colls[i].ddl.Unlock()
	}
}

// unlock takes down the fences a failed change left, then releases the
// locks.
func (h *ddlHold) unlock() {
	if h.token != "" {
		for _, c := range h.colls {
			h.e.clearFence(context.Background(), c, h.token)
		}
		h.e.cluster.running.Delete(h.token)
	}
	h.release()
}

// clearFence stores c unfenced if it still carries the fence token; the
// caller holds c's exclusive ddl lock.
func (e *Engine) clearFence(ctx context.Context, c *Collection, token string) {
	if st := c.st(); st.dropped || st.meta.Fence != token {
		return
	}
	if _, err := e.changeStored(ctx, c, func(meta *collMeta) error {
		if meta.Fence == token {
			meta.Fence = ""
		}
		return nil
	}, nil); err != nil && mongoerr.CodeOf(err) != mongoerr.NamespaceNotFound {
		e.log.Warn("engine: a catalog change's fence stays until its lease runs out", zap.String("namespace", c.st().ns()), zap.Error(err))
	}
}

// takeDownFence stores c unfenced, under its exclusive ddl lock, if it
// still carries the fence token.
func (e *Engine) takeDownFence(ctx context.Context, c *Collection, token string) {
	c.ddl.Lock()
	defer c.ddl.Unlock()
	e.clearFence(ctx, c, token)
}

// waitReplaced waits, holding no lock, until the state st of one of cs is
// replaced: the fence it carries has gone, the next step of its change is
// installed, or an index build it shows has moved on.
func (e *Engine) waitReplaced(ctx context.Context, cs []*Collection, st *collState) error {
	e.kickRefresh()
	t := time.NewTicker(max(e.cluster.poll/10, time.Millisecond))
	defer t.Stop()
	for slices.ContainsFunc(cs, func(c *Collection) bool { return c.st() == st }) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-e.cluster.done:
			// The refresh has stopped: the server is closing.
			return mongoerr.New(mongoerr.ShutdownInProgress, "the server is shutting down")
		case <-t.C:
		}
	}
	return nil
}

// fenceOwner is the roster id of the server whose change set the fence
// token.
func fenceOwner(token string) string {
	id, _, _ := strings.Cut(token, "/")
	return id
}

// clearOrphanFences takes down the fences of changes whose server's lease
// on the roster has run out, and those of this server's changes that no
// longer run; live are the roster's live ids.
func (e *Engine) clearOrphanFences(ctx context.Context, live map[string]bool) {
	for _, c := range e.openCollections() {
		token := c.st().meta.Fence
		if token == "" || !e.abandoned(fenceOwner(token), token, live) {
			continue
		}
		e.takeDownFence(ctx, c, token)
		e.log.Info("engine: took down the fence of a catalog change whose server is gone", zap.String("namespace", c.st().ns()))
	}
}
