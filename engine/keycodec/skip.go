package keycodec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrMalformedKey is returned, wrapped, for bytes that are not a valid key.
var ErrMalformedKey = errors.New("keycodec: malformed key")

var errTruncated = errors.New("truncated")

// Skip returns the length of the key at the start of b, so that a compound
// key can be split into its fields. The key may be ascending or descending:
// the first byte of a descending key is an inverted class byte, which no
// ascending key starts with.
func Skip(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, malformed(0, errTruncated)
	}
	// flip undoes the inversion of a descending key when XORed into a byte.
	var flip byte
	if b[0] > classMaxKey {
		flip = 0xff
	}
	// Containers nest in keys without lengths, so walk them with a stack of
	// the open ones: true for a document, whose elements carry names.
	var stackSpace [16]bool
	open := stackSpace[:0]
	pos := 0
	for {
		if pos >= len(b) {
			return 0, malformed(pos, errTruncated)
		}
		class := b[pos] ^ flip
		pos++
		if len(open) > 0 {
			if class == endOfContainer {
				open = open[:len(open)-1]
				if len(open) == 0 {
					return pos, nil
				}
				continue
			}
			if open[len(open)-1] {
				n, err := skipString(b[pos:], flip)
				if err != nil {
					return 0, malformed(pos, err)
				}
				pos += n
			}
		}
		switch class {
		case classObject:
			open = append(open, true)
			continue
		case classArray:
			open = append(open, false)
			continue
		case classCodeWithScope:
			n, err := skipString(b[pos:], flip)
			if err != nil {
				return 0, malformed(pos, err)
			}
			pos += n
			open = append(open, true)
			continue
		}
		n, err := skipScalar(class, b[pos:], flip)
		if err != nil {
			return 0, malformed(pos, err)
		}
		pos += n
		if len(open) == 0 {
			return pos, nil
		}
	}
}

func malformed(pos int, err error) error {
	return fmt.Errorf("%w: %v at byte %d", ErrMalformedKey, err, pos)
}

// skipScalar returns the length of the body of a class that does not nest.
func skipScalar(class byte, b []byte, flip byte) (int, error) {
	var n int
	switch class {
	case classInvalid, classMinKey, classUndefined, classNull, classMaxKey:
		return 0, nil
	case classNumber:
		return skipNumber(b, flip)
	case classString, classJavaScript:
		return skipString(b, flip)
	case classRegex:
		pattern, err := skipString(b, flip)
		if err != nil {
			return 0, err
		}
		options, err := skipString(b[pattern:], flip)
		return pattern + options, err
	case classBinary, classDBPointer:
		if len(b) < 4 {
			return 0, errTruncated
		}
		length := binary.BigEndian.Uint32(b) ^ uint32(flip)*0x01010101
		if uint64(length) > uint64(len(b)) {
			return 0, errTruncated
		}
		n = 4 + int(length)
		if class == classBinary {
			n++ // subtype
		} else {
			n += 12 // ObjectId
		}
	case classObjectID:
		n = 12
	case classBoolean:
		n = 1
	case classDateTime, classTimestamp:
		n = 8
	default:
		return 0, fmt.Errorf("unknown class %#x", class)
	}
	if n > len(b) {
		return 0, errTruncated
	}
	return n, nil
}

func skipString(b []byte, flip byte) (int, error) {
	pos := 0
	for {
		i := bytes.IndexByte(b[pos:], flip)
		if i < 0 || pos+i+1 >= len(b) {
			return 0, errTruncated
		}
		pos += i + 2
		switch b[pos-1] ^ flip {
		case endOfString:
			return pos, nil
		case escapedNUL:
		default:
			return 0, errors.New("bad escape in string")
		}
	}
}

func skipNumber(b []byte, flip byte) (int, error) {
	if len(b) < 9 {
		return 0, errTruncated
	}
	// The remainder's bytes are inverted once more below the truncated double.
	var end byte
	switch b[8] ^ flip {
	case numberExact:
		return 9, nil
	case numberAbove:
		end = endOfDigits ^ flip
	case numberBelow:
		end = ^byte(endOfDigits) ^ flip
	default:
		return 0, fmt.Errorf("bad number marker %#x", b[8]^flip)
	}
	const digitsStart = 9 + 2 // after the remainder's exponent
	if len(b) < digitsStart {
		return 0, errTruncated
	}
	i := bytes.IndexByte(b[digitsStart:], end)
	if i < 0 {
		return 0, errTruncated
	}
	return digitsStart + i + 1, nil
}
