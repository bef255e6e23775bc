// Package collation holds MongoDB's collations: the parsing and validation
// of a collation document as mongod does it (its codes and messages), the
// normalised document mongod reports back (listCollections, listIndexes,
// explain), and the comparison of strings, and of values holding strings,
// under a collation.
//
// The comparison itself is golang.org/x/text/collate's, which implements
// the Unicode Collation Algorithm with CLDR's tailorings, the rules ICU
// (and so mongod) follows. A Collator turns a string into its collation
// key, a byte string whose plain byte order is the collation's order, and
// a value into its collation key value (Key): every string, also inside
// arrays and documents, replaced by its key. Comparing key values in
// MongoDB's BSON order (keycodec) is comparing the values under the
// collation, which is what MongoDB does too: only strings (and symbols)
// are collated, field names and every other type compare as they always
// do, and BSON's type order is kept.
//
// A nil *Collator is the simple collation, byte-wise comparison; every
// method accepts it, so callers thread one pointer and need no branch.
//
// Where x/text differs from ICU, the collator comes close rather than
// exact: caseFirst is applied to the tertiary weights of the key (upper
// or lower case first), caseLevel keeps all tertiary differences rather
// than case alone, maxVariable "space" is reported but shifted handling
// ignores punctuation as with "punct", and input is always normalised
// (normalization only matters for text that is not in FCD form).
//
// The package knows nothing of the engine: the query language, the
// aggregation language and the index key builder take a *Collator.
package collation
