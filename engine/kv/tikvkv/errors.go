package tikvkv

import (
	"bytes"
	"errors"
	"fmt"

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
	}
	return wrapErr(op, err)
}
