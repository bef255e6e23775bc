package keycodec

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

// The readers below return the parts of a value as slices of its data, where
// the bsoncore accessors would copy them into new strings. A part that cannot
// be read comes back empty.

// stringBytes returns the contents of a string or symbol value.
func stringBytes(data []byte) []byte {
	s, _ := readString(data)
	return s
}

// readString reads a length-prefixed BSON string, without its trailing NUL,
// and returns what follows it.
func readString(data []byte) (s, rest []byte) {
	n, body, ok := bsoncore.ReadLength(data)
	if !ok || n < 1 || int(n) > len(body) {
		return nil, nil
	}
	return body[:n-1], body[n:]
}

// regexParts returns the pattern and options of a regular expression value.
func regexParts(data []byte) (pattern, options []byte) {
	pattern, rest, ok := bsoncore.ReadKeyBytes(data)
	if !ok {
		return nil, nil
	}
	options, _, _ = bsoncore.ReadKeyBytes(rest)
	return pattern, options
}

// dbPointerParts returns the namespace and ObjectId of a DBPointer value.
func dbPointerParts(data []byte) (ns []byte, oid [12]byte) {
	ns, rest := readString(data)
	copy(oid[:], rest)
	return ns, oid
}

// codeWithScopeParts returns the code and scope of a JavaScript-with-scope value.
func codeWithScopeParts(data []byte) (code []byte, scope bsoncore.Document) {
	_, body, ok := bsoncore.ReadLength(data)
	if !ok {
		return nil, nil
	}
	code, rest := readString(body)
	scope, _, _ = bsoncore.ReadDocument(rest)
	return code, scope
}
