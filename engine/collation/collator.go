package collation

import (
	"bytes"
	"sync"
	"unicode"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"golang.org/x/text/collate"
	"golang.org/x/text/language"
	"golang.org/x/text/unicode/norm"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/keycodec"
)

// Collator compares strings under one collation. It is safe for
// concurrent use. A nil *Collator is the simple collation.
type Collator struct {
	spec Spec
	doc  bson.Raw
	// caseLevel is set when the key gets a case level of its own: caseLevel
	// on at strength 1 or 2.
	caseLevel bool
	// pool holds x/text collators of this collation: they keep buffers
	// and are not safe for concurrent use.
	pool sync.Pool
}

// worker is one x/text collator with its key buffer.
type worker struct {
	c   *collate.Collator
	buf collate.Buffer
}

// Parse parses a collation document (ParseSpec) and returns its Collator:
// nil for the simple collation.
func Parse(doc bson.Raw) (*Collator, error) {
	spec, simple, err := ParseSpec(doc)
	if err != nil || simple {
		return nil, err
	}
	return New(spec), nil
}

// New returns the Collator of a valid spec.
func New(spec Spec) *Collator {
	tag, _, _ := resolveLocale(spec.Locale)
	ext := "-ks-level" + string(rune('0'+min(spec.Strength, 4)))
	if spec.Strength == 5 {
		ext = "-ks-identic"
	}
	// Below strength 3 the case level is the collator's own (caseLevel):
	// x/text's would keep every tertiary difference, accents' included.
	if spec.NumericOrdering {
		ext += "-kn-true"
	}
	if spec.Backwards {
		ext += "-kb-true"
	}
	if spec.Alternate == "shifted" {
		ext += "-ka-shifted"
	}
	if bytes.Contains([]byte(tag), []byte("-u-")) {
		tag += ext
	} else {
		tag += "-u" + ext
	}
	t := language.Make(tag)
	c := &Collator{spec: spec, doc: spec.Document(), caseLevel: spec.CaseLevel && spec.Strength < 3}
	c.pool.New = func() any { return &worker{c: collate.New(t)} }
	return c
}

// Spec returns the collation's complete spec; the zero Spec for the simple
// collation.
func (c *Collator) Spec() Spec {
	if c == nil {
		return Spec{}
	}
	return c.spec
}

// Document returns the collation document mongod reports, every field
// with its value; {locale: "simple"} for the simple collation.
func (c *Collator) Document() bson.Raw {
	if c == nil {
		return bson.Raw(bsoncore.NewDocumentBuilder().AppendString("locale", "simple").Build())
	}
	return c.doc
}

// Equal reports whether a and b are the same collation (nil is simple).
func Equal(a, b *Collator) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a == b || a.spec == b.spec
}

// AppendKey appends the collation key of the string s to dst: byte order
// of keys is the collation's order of strings. Under the simple collation
// the key is s itself.
func (c *Collator) AppendKey(dst, s []byte) []byte {
	if c == nil {
		return append(dst, s...)
	}
	return c.withKey(s, func(k []byte) []byte { return append(dst, k...) })
}

// largeString is the length past which a string's key buffers are not
// kept for the next key: a key is several times its string, and a pool
// of workers holding those of a 16 MiB string would hold a lot for long.
const largeString = 64 << 10

// withKey calls fn with the collation key of s, which is valid only during
// the call, and returns what fn returns.
func (c *Collator) withKey(s []byte, fn func(key []byte) []byte) []byte {
	w := c.pool.Get().(*worker)
	w.buf.Reset()
	k := w.c.Key(&w.buf, s)
	switch {
	case c.caseLevel:
		k = c.appendCaseLevel(k, s)
	case c.spec.CaseFirst == "upper":
		c.upperFirst(k)
	}
	if c.spec.Strength == 5 {
		// The identical level: the code points, normalised, after
		// every other level.
		k = append(k, 0, 0, 0)
		k = norm.NFD.Append(k, s...)
	}
	out := fn(k)
	if len(s) <= largeString {
		c.pool.Put(w)
	}
	return out
}

// CompareStrings compares two strings under the collation.
func (c *Collator) CompareStrings(a, b []byte) int {
	if c == nil {
		return bytes.Compare(a, b)
	}
	var buf [64]byte
	ka := c.AppendKey(buf[:0], a)
	r := 0
	c.withKey(b, func(kb []byte) []byte {
		r = bytes.Compare(ka, kb)
		return nil
	})
	return r
}

// appendCaseLevel appends the case level ICU puts after the secondary
// level when caseLevel is on: the case of each cased letter, lower case
// first unless caseFirst is "upper".
func (c *Collator) appendCaseLevel(dst, s []byte) []byte {
	lower, upper := byte(0x02), byte(0x08)
	if c.spec.CaseFirst == "upper" {
		lower, upper = upper, lower
	}
	dst = append(dst, 0, 0)
	for _, r := range string(s) {
		switch {
		case unicode.IsUpper(r) || unicode.IsTitle(r):
			dst = append(dst, upper)
		case unicode.IsLower(r):
			dst = append(dst, lower)
		}
	}
	return dst
}

// upperFirst reorders the case weights of a key's tertiary level so
// that upper (caseFirst "upper") or lower case sorts first. The key is
// x/text's layout: primary weights of 2 or 3 bytes, a 0x0000 separator,
// 2-byte secondary weights, a separator, 1-byte tertiary weights, then
// an optional 0x00 and quaternary weights. x/text gives lower case the
// tertiary weights 0x02-0x06 and the matching upper case 0x08-0x0c, which
// already sorts lower first; "upper" swaps the two runs.
func (c *Collator) upperFirst(key []byte) {
	i := 0
	for i+1 < len(key) && !(key[i] == 0 && key[i+1] == 0) {
		if key[i]&0x80 != 0 {
			i += 3
		} else {
			i += 2
		}
	}
	i += 2 // the separator after the primary level
	for i+1 < len(key) && !(key[i] == 0 && key[i+1] == 0) {
		i += 2
	}
	i += 2 // the separator after the secondary level
	for ; i < len(key) && key[i] != 0; i++ {
		switch t := key[i]; {
		case t >= 0x02 && t <= 0x06:
			key[i] = t + 6
		case t >= 0x08 && t <= 0x0c:
			key[i] = t - 6
		}
	}
}

// Key returns v's collation key value: v with every string and symbol,
// also inside arrays and documents, replaced by a string holding its
// collation key. Key values compare in keycodec's order as the values
// compare under the collation, and key values that are equal are the
// index keys and the hash of grouping. Under the simple collation, or for
// a value with no string in it, Key returns v itself.
func (c *Collator) Key(v bsoncore.Value) bsoncore.Value {
	if c == nil {
		return v
	}
	switch v.Type {
	case bsoncore.TypeString, bsoncore.TypeSymbol:
		s, _ := bsonvalue.StringBytes(v)
		// The value is allocated once, at its size.
		data := c.withKey(s, func(k []byte) []byte { return append(make([]byte, 4, 4+len(k)+1), k...) })
		return bsoncore.Value{Type: bsoncore.TypeString, Data: finishString(data)}
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		if !hasString(v.Data) {
			return v
		}
		return bsoncore.Value{Type: v.Type, Data: c.appendContainer(nil, v.Data)}
	}
	return v
}

// finishString completes a BSON string value whose bytes follow the 4
// bytes reserved for its length.
func finishString(b []byte) []byte {
	b = append(b, 0)
	n := int32(len(b) - 4)
	b[0], b[1], b[2], b[3] = byte(n), byte(n>>8), byte(n>>16), byte(n>>24)
	return b
}

func (c *Collator) appendContainer(dst, container []byte) []byte {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	it := bsonvalue.ElementsOf(container)
	for {
		name, v, ok := it.Next()
		if !ok {
			break
		}
		k := c.Key(v)
		dst = bsoncore.AppendHeader(dst, k.Type, string(name))
		dst = append(dst, k.Data...)
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// hasString reports whether a document or array holds a string or symbol
// at any depth.
func hasString(container []byte) bool {
	it := bsonvalue.ElementsOf(container)
	for {
		_, v, ok := it.Next()
		if !ok {
			return false
		}
		switch v.Type {
		case bsoncore.TypeString, bsoncore.TypeSymbol:
			return true
		case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
			if hasString(v.Data) {
				return true
			}
		}
	}
}

// Collatable reports whether v's comparison depends on the collation: a
// string or symbol, or a document or array holding one.
func Collatable(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeString, bsoncore.TypeSymbol:
		return true
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		return hasString(v.Data)
	}
	return false
}

// Compare compares two values in MongoDB's BSON order with their strings
// compared under c: keycodec.Compare when c is nil.
func (c *Collator) Compare(a, b bsoncore.Value) int {
	if c == nil {
		return keycodec.Compare(a, b)
	}
	sa, okA := bsonvalue.StringBytes(a)
	sb, okB := bsonvalue.StringBytes(b)
	if okA && okB {
		return c.CompareStrings(sa, sb)
	}
	return keycodec.Compare(c.Key(a), c.Key(b))
}
