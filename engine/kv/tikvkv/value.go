package tikvkv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/lethedb/lethe/engine/kv"
)

// chunkSize is the most bytes of a value stored under one key: a longer
// value is split into chunks of this size (the last one shorter). TiKV
// refuses a write request over raft-entry-max-size (8 MiB by default), and
// answers over its gRPC message bound (10 MiB by default) fail too, so a
// chunk stays well under both; chunkReadGroup chunks are read per request.
const (
	chunkSize      = 1 << 20
	chunkReadGroup = 4
)

// headChunked starts the stored value of a chunked value's head: a zero
// byte, which encodeValue puts before an empty value or one that starts
// with a zero byte only, then one.
var headChunked = []byte{0, 1}

// encodeValue makes a value of at most chunkSize storable under its key:
// client-go's transaction buffer treats an empty value as a deletion, so
// an empty value, or one that starts with a zero byte, is stored with one
// zero byte in front. Every other value is stored as it is, with no copy.
func encodeValue(v []byte) []byte {
	if len(v) > 0 && v[0] != 0 {
		return v
	}
	out := make([]byte, 1+len(v))
	copy(out[1:], v)
	return out
}

// head is what a stored value under a key says.
type head struct {
	value  []byte // the value itself, if not chunked
	chunks int    // the number of chunks, if chunked; value is nil then
	size   int    // the value's length, chunked or not
}

// encodeHead is the stored value of the head of a value of size bytes in
// n chunks.
func encodeHead(size, n int) []byte {
	out := append([]byte{}, headChunked...)
	out = binary.AppendUvarint(out, uint64(size))
	return binary.AppendUvarint(out, uint64(n))
}

// decodeHead reads a stored value under a key. An inline value shares v's
// memory.
func decodeHead(v []byte) (head, error) {
	if !bytes.HasPrefix(v, headChunked) {
		if len(v) > 0 && v[0] == 0 {
			v = v[1:]
		}
		return head{value: v, size: len(v)}, nil
	}
	rest := v[len(headChunked):]
	size, n1 := binary.Uvarint(rest)
	if n1 <= 0 {
		return head{}, errBadHead
	}
	n, n2 := binary.Uvarint(rest[n1:])
	if n2 <= 0 || n1+n2 != len(rest) || size <= chunkSize || size > n*chunkSize || size <= (n-1)*chunkSize {
		return head{}, errBadHead
	}
	return head{chunks: int(n), size: int(size)}, nil
}

var errBadHead = errors.New("tikvkv: a chunked value's head is malformed")

// chunkCount is the number of chunks value is stored in: 0 when it is
// stored inline.
func chunkCount(value []byte) int {
	if len(value) <= chunkSize {
		return 0
	}
	return (len(value) + chunkSize - 1) / chunkSize
}

// assemble joins the chunks of a value of h.size bytes, as chunk(i)
// returns them (nil if missing); key names the value in errors.
func assemble(h head, key []byte, chunk func(i int) []byte) ([]byte, error) {
	out := make([]byte, 0, h.size)
	for i := 0; i < h.chunks; i++ {
		c := chunk(i)
		if len(c) == 0 {
			return nil, fmt.Errorf("tikvkv: chunk %d of %d of key %q is missing", i, h.chunks, key)
		}
		out = append(out, c...)
	}
	if len(out) != h.size {
		return nil, fmt.Errorf("tikvkv: the chunks of key %q hold %d bytes, not %d", key, len(out), h.size)
	}
	return out, nil
}

// keys maps kv's keys into the deployment's part of the cluster's key
// space, under its prefix P: a key K at P "k" K, the chunks of its value,
// if it has several, at P "c" escape(K) seq. escape keeps the order of
// keys and makes none a prefix of another, so that the chunks of the keys
// in [lo, hi) are exactly [P "c" escape(lo), P "c" escape(hi)).
type keys struct {
	prefix   []byte // P "k"
	end      []byte // the first key after every key under prefix
	chunks   []byte // P "c"
	chunkEnd []byte
}

func newKeys(prefix string) keys {
	p := []byte(prefix + "k")
	c := []byte(prefix + "c")
	return keys{prefix: p, end: kv.PrefixEnd(p), chunks: c, chunkEnd: kv.PrefixEnd(c)}
}

func (k keys) in(key []byte) []byte {
	out := make([]byte, 0, len(k.prefix)+len(key))
	return append(append(out, k.prefix...), key...)
}

// bounds maps [lo, hi) (hi nil: no bound) into the prefixed key space.
func (k keys) bounds(lo, hi []byte) (plo, phi []byte) {
	plo = k.in(lo)
	if hi == nil {
		return plo, k.end
	}
	return plo, k.in(hi)
}

func (k keys) out(key []byte) []byte { return key[len(k.prefix):] }

// chunk is the key of chunk i of key's value.
func (k keys) chunk(key []byte, i int) []byte {
	out := escape(append(bytes.Clone(k.chunks), make([]byte, 0, len(key)+6)...), key)
	return binary.BigEndian.AppendUint32(out, uint32(i))
}

// chunkBounds is the range of the chunks of the keys in [lo, hi).
func (k keys) chunkBounds(lo, hi []byte) (clo, chi []byte) {
	clo = escape(bytes.Clone(k.chunks), lo)
	if hi == nil {
		return clo, k.chunkEnd
	}
	return clo, escape(bytes.Clone(k.chunks), hi)
}

// chunkOwner is the key whose value a chunk key holds part of, if ck is
// one.
func (k keys) chunkOwner(ck []byte) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(ck, k.chunks)
	if !ok {
		return nil, false
	}
	var key []byte
	for i := 0; i+1 < len(rest); i++ {
		if rest[i] != 0 {
			key = append(key, rest[i])
			continue
		}
		switch rest[i+1] {
		case 0xff:
			key = append(key, 0)
			i++
		case 1:
			return key, true
		default:
			return nil, false
		}
	}
	return nil, false
}

// escape appends key to out so that the order of keys is kept and no key's
// escape is a prefix of another's: a zero byte becomes 0 0xff, and the end
// is 0 1.
func escape(out, key []byte) []byte {
	for _, c := range key {
		if c == 0 {
			out = append(out, 0, 0xff)
		} else {
			out = append(out, c)
		}
	}
	return append(out, 0, 1)
}
