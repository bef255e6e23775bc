package engine

import (
	"bytes"
	"context"
	"sync"

	"github.com/lethedb/lethe/engine/kv"
)

// recordingStore records each transaction it commits, for tests of what
// the engine asks of the store.
type recordingStore struct {
	kv.Store
	mu      sync.Mutex
	commits []committedTxn
}

// committedTxn is one commit: the size hint its transaction began with,
// the bytes it held, and the keys it deleted, in the order it deleted them.
type committedTxn struct {
	hint, wrote int
	deleted     [][]byte
}

func (s *recordingStore) Unwrap() kv.Store { return s.Store }

func (s *recordingStore) Begin(ctx context.Context, o kv.TxnOptions) (kv.Txn, error) {
	tx, err := s.Store.Begin(ctx, o)
	if err != nil {
		return nil, err
	}
	return &recordingTxn{Txn: tx, s: s, hint: o.SizeHint}, nil
}

// take returns the commits recorded since the last take.
func (s *recordingStore) take() []committedTxn {
	s.mu.Lock()
	defer s.mu.Unlock()
	commits := s.commits
	s.commits = nil
	return commits
}

type recordingTxn struct {
	kv.Txn
	s       *recordingStore
	hint    int
	deleted [][]byte
}

func (t *recordingTxn) Delete(key []byte) error {
	t.deleted = append(t.deleted, bytes.Clone(key))
	return t.Txn.Delete(key)
}

func (t *recordingTxn) Commit(ctx context.Context, d kv.Durability) (kv.Timestamp, error) {
	t.s.mu.Lock()
	t.s.commits = append(t.s.commits, committedTxn{hint: t.hint, wrote: t.Size(), deleted: t.deleted})
	t.s.mu.Unlock()
	return t.Txn.Commit(ctx, d)
}
