package tikvkv

import "bytes"

// encodeValue makes v storable: client-go's transaction buffer treats an
// empty value as a deletion, so an empty value, or one that starts with a
// zero byte, is stored with one zero byte in front. Every other value is
// stored as it is, with no copy.
func encodeValue(v []byte) []byte {
	if len(v) > 0 && v[0] != 0 {
		return v
	}
	out := make([]byte, 1+len(v))
	copy(out[1:], v)
	return out
}

// decodeValue undoes encodeValue: a stored value starting with a zero byte
// had one put in front of it. The result shares v's memory.
func decodeValue(v []byte) []byte {
	if len(v) > 0 && v[0] == 0 {
		return v[1:]
	}
	return v
}

// keys adds and removes the deployment's prefix.
type keys struct {
	prefix []byte
	end    []byte // the first key after every key under prefix
}

func newKeys(prefix string) keys {
	p := []byte(prefix)
	return keys{prefix: p, end: prefixEnd(p)}
}

// prefixEnd is the smallest key above every key that starts with p.
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil // p is all 0xff: no bound
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
