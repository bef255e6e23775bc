// Package bsonvalue reads BSON values by the rules MongoDB's languages
// share: the filter language (package query) and the expression language
// (package expr) both walk documents and arrays, take the truth value and
// the integer value of a number, name types as $type does, and match
// MongoDB's regular expressions. Neither language may import the other's
// internals (query imports expr for $expr), so these rules live here, below
// both.
//
// Everything here works on raw bytes (bsoncore.Value) without decoding
// documents, and never panics on malformed input: a malformed document reads
// as a shorter one.
package bsonvalue
