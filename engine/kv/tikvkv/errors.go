package tikvkv

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	tikverr "github.com/tikv/client-go/v2/error"

	"github.com/lethedb/lethe/engine/kv"
)

// wrapErr names the operation of a backend failure that is none of kv's
// kinds.
func wrapErr(op string, err error) error {
	return fmt.Errorf("tikvkv: %s: %w", op, err)
}

// mapErr turns client-go's errors that mean another transaction got there
// first into kv conflicts; the rest are the backend's own failures.
// Client-go wraps its errors with pkg/errors, whose wrappers unwrap.
func (s *Store) mapErr(op string, err error) error {
	var wc *tikverr.ErrWriteConflict
	var dl *tikverr.ErrDeadlock
	var latch *tikverr.ErrWriteConflictInLatch
	switch {
	case errors.As(err, &wc):
		var key []byte
		if c := wc.WriteConflict; c != nil && bytes.HasPrefix(c.Key, s.k.prefix) {
			key = bytes.Clone(s.k.out(c.Key))
		} else if c != nil {
			key, _ = s.k.chunkOwner(c.Key) // nil if not a chunk's
		}
		return &kv.ConflictError{Key: key, Reason: "committed by another transaction after this one's timestamp"}
	case errors.Is(err, tikverr.ErrLockAcquireFailAndNoWaitSet):
		return kv.ErrLocked
	case errors.Is(err, tikverr.ErrLockWaitTimeout):
		return &kv.ConflictError{Reason: "lock wait timed out"}
	case errors.As(err, &dl):
		return &kv.ConflictError{Reason: "deadlock with another transaction's locks"}
	case errors.As(err, &latch):
		return &kv.ConflictError{Reason: "a conflicting commit in this process"}
	case errors.Is(err, tikverr.ErrResolveLockTimeout):
		return &kv.ConflictError{Reason: "another transaction's lock outlived the wait for it"}
	case lockLost(err):
		return &kv.ConflictError{Reason: "a lock it held was taken down by another transaction; nothing was committed"}
	}
	return wrapErr(op, err)
}

// lockLost reports whether err is a prewrite refused because a
// pessimistic lock the transaction held is gone: another transaction
// resolved it as abandoned (TiKV's protocol has a pessimistic prewrite
// that meets a lock in its way resolve it at once). The prewrite failed,
// so nothing of the transaction committed, and the caller may run it
// again as after any conflict. Client-go passes the reason on as the text
// of an abort, TiKV's and its mock's spelled differently.
func lockLost(err error) bool {
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "pessimistic lock not found") || strings.Contains(msg, "pessimisticlocknotfound")
}
