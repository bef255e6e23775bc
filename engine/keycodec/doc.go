// Package keycodec defines the order of BSON values as MongoDB compares them,
// and byte strings that sort in that order.
//
// Compare and CompareDocuments order values directly. Append encodes a value
// into a key whose bytes sort, under bytes.Compare, exactly as Compare orders
// the values, so an ordered key-value store can serve index scans without
// decoding keys. Encodings are self-delimiting: the keys of several fields can
// be concatenated into one compound key, and AppendDesc gives the key of a
// descending field.
//
// Values are expected to be well formed (see bsoncore.Value.Validate). Malformed
// values do not cause a panic: their unreadable parts are taken as empty or
// zero, consistently between Compare and Append.
package keycodec
