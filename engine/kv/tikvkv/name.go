package tikvkv

import "github.com/lethedb/lethe/engine/kv"

var _ kv.Named = (*Store)(nil)

// Name is "tikv", or "tikv-mock" on client-go's in-process mock.
func (s *Store) Name() string {
	if s.Persistent() {
		return "tikv"
	}
	return "tikv-mock"
}

// Persistent reports whether the store is a real cluster: the mock keeps
// its data in memory.
func (s *Store) Persistent() bool { return s.onClose == nil }
