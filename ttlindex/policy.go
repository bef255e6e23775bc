package ttlindex

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Never is the ttl, and the _ts index default, for "does not expire".
const Never = -1

// ttlField is the root-level field through which a document sets its own lifetime.
const ttlField = "ttl"

// DocTTL is the lifetime a document asks for in its own ttl field: Never,
// or 1..math.MaxInt32 seconds. NoTTL stands for an absent field and for any
// value TTL ignores, which the document keeps as ordinary data (rule 12).
type DocTTL int32

// NoTTL marks a document without a valid ttl of its own: the collection
// default applies.
const NoTTL DocTTL = 0

// ParseDocTTL returns v as a document ttl and reports whether it is a valid
// one (rule 11): a number of type int32, int64 or double whose value is a
// whole number in the int32 range, and Never or at least 1.
func ParseDocTTL(v bsoncore.Value) (DocTTL, bool) {
	n, ok := exactInt32(v)
	if !ok || !validTTL(n) {
		return NoTTL, false
	}
	return DocTTL(n), true
}

// DocTTLOf returns the valid ttl of doc's root-level field named exactly
// "ttl", or NoTTL. A nested ttl or a differently cased name does not count.
func DocTTLOf(doc bsoncore.Document) DocTTL {
	v, err := doc.LookupErr(ttlField)
	if err != nil {
		return NoTTL
	}
	d, _ := ParseDocTTL(v)
	return d
}

// Setting is a collection's _ts TTL index as the catalog holds it. The zero
// Setting is TTL off.
type Setting struct {
	Enabled bool
	// Default is the index's expireAfterSeconds: Never or 1..math.MaxInt32.
	Default int32
}

// Lifetime returns how many seconds after its _ts a document expires under
// s, and ok=false if it never does (the matrix of section 4).
func Lifetime(s Setting, d DocTTL) (seconds int64, ok bool) {
	switch {
	case !s.Enabled, d == Never:
		return 0, false
	case d > 0:
		return int64(d), true
	case s.Default > 0:
		return int64(s.Default), true
	}
	// A default of Never, or one that is not valid: a damaged catalog entry
	// must not make every document of the collection expire at once.
	return 0, false
}

// ExpireAt returns the instant, in ms since the epoch, at which a document
// written at tsMillis expires under s, and ok=false if it never does.
func ExpireAt(s Setting, tsMillis int64, d DocTTL) (int64, bool) {
	seconds, ok := Lifetime(s, d)
	if !ok {
		return 0, false
	}
	lifetime := seconds * 1000
	// A manual clock can be set anywhere; saturate instead of wrapping into
	// the past, which would expire the document at once.
	if tsMillis > math.MaxInt64-lifetime {
		return math.MaxInt64, true
	}
	return tsMillis + lifetime, true
}

// Expired reports whether a document written at tsMillis has expired under
// s at nowMillis: now >= _ts + lifetime.
func Expired(s Setting, tsMillis int64, d DocTTL, nowMillis int64) bool {
	at, ok := ExpireAt(s, tsMillis, d)
	return ok && nowMillis >= at
}

func validTTL(n int32) bool { return n == Never || n >= 1 }

// exactInt32 returns v as an int32 when it is an int32, an int64 in the
// int32 range, or a double holding a whole number in the int32 range.
func exactInt32(v bsoncore.Value) (int32, bool) {
	switch v.Type {
	case bsoncore.TypeInt32:
		return v.Int32OK()
	case bsoncore.TypeInt64:
		n, ok := v.Int64OK()
		if !ok || n < math.MinInt32 || n > math.MaxInt32 {
			return 0, false
		}
		return int32(n), true
	case bsoncore.TypeDouble:
		f, ok := v.DoubleOK()
		// NaN fails every comparison, so it is refused here too.
		if !ok || f != math.Trunc(f) || f < math.MinInt32 || f > math.MaxInt32 {
			return 0, false
		}
		return int32(f), true
	}
	return 0, false
}
