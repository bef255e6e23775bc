package tikvkv

import (
	"context"

	"github.com/tikv/client-go/v2/tikv"
	"github.com/tikv/client-go/v2/txnkv/txnsnapshot"
)

// storedValue is the value of key whose stored head is stored, read from
// snap: the head's own value, or its chunks joined; and the number of
// chunks. An inline value shares stored's memory.
func storedValue(ctx context.Context, k keys, snap *txnsnapshot.KVSnapshot, key, stored []byte) ([]byte, int, error) {
	h, err := decodeHead(stored)
	if err != nil || h.chunks == 0 {
		return h.value, 0, err
	}
	parts := make([][]byte, h.chunks)
	for from := 0; from < h.chunks; from += chunkReadGroup {
		ks := make([][]byte, 0, chunkReadGroup)
		for i := from; i < min(from+chunkReadGroup, h.chunks); i++ {
			ks = append(ks, k.chunk(key, i))
		}
		got, err := snap.BatchGet(ctx, ks)
		if err != nil {
			return nil, 0, wrapErr("get", err)
		}
		for j, ck := range ks {
			parts[from+j] = got[string(ck)]
		}
	}
	v, err := assemble(h, key, func(i int) []byte { return parts[i] })
	return v, h.chunks, err
}

// bufferedValue is the value of key whose head is stored in the
// transaction's buffer mem: its own value, or its chunks, buffered with it,
// joined. An inline value shares stored's memory.
func bufferedValue(mem *tikv.MemDB, k keys, key, stored []byte) ([]byte, error) {
	h, err := decodeHead(stored)
	if err != nil || h.chunks == 0 {
		return h.value, err
	}
	return assemble(h, key, func(i int) []byte {
		v, err := mem.Get(k.chunk(key, i))
		if err != nil {
			return nil
		}
		return v
	})
}
