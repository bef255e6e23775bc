package wire

import (
	"encoding/binary"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// maxNestingDepth bounds how deeply documents and arrays may nest, matching
// MongoDB's default maxBSONDepth. Validation recurses once per level, so the
// bound also keeps a hostile message from exhausting the stack.
const maxNestingDepth = 200

// readDocument reads one document from the start of b and validates it,
// returning it and the bytes after it. A document running past the end of b
// is a layout error (ErrMalformed); anything wrong within its declared bytes
// is ErrInvalidBSON.
func readDocument(b []byte) (bsoncore.Document, []byte, error) {
	if len(b) < 4 {
		return nil, nil, fmt.Errorf("document length cut off after %d bytes: %w", len(b), ErrMalformed)
	}
	if n := int32(binary.LittleEndian.Uint32(b)); int64(n) > int64(len(b)) {
		return nil, nil, fmt.Errorf("document of %d bytes overruns the %d bytes left: %w", n, len(b), ErrMalformed)
	}
	doc, rest, ok := bsoncore.ReadDocument(b)
	if !ok {
		return nil, nil, fmt.Errorf("%w: document length %d", ErrInvalidBSON, int32(binary.LittleEndian.Uint32(b)))
	}
	if err := validateDocument(doc, 1); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidBSON, err)
	}
	return doc, rest, nil
}

// validateDocument checks doc, which must be sliced to exactly its declared
// length, and everything nested in it. bsoncore's Validate checks only the
// outer level: it confirms that each element's value fits, not that an
// embedded document is itself well formed.
func validateDocument(doc bsoncore.Document, depth int) error {
	if depth > maxNestingDepth {
		return fmt.Errorf("documents nested more than %d deep", maxNestingDepth)
	}
	if err := doc.Validate(); err != nil {
		return err
	}
	// Validate has established that the bytes between the length and the
	// terminating null are a run of complete elements.
	elems := doc[4 : len(doc)-1]
	for len(elems) > 0 {
		elem, rest, ok := bsoncore.ReadElement(elems)
		if !ok {
			return fmt.Errorf("unreadable element at offset %d", len(doc)-1-len(elems))
		}
		elems = rest
		if err := validateValue(elem.Value(), depth); err != nil {
			return fmt.Errorf("field %q: %w", elem.Key(), err)
		}
	}
	return nil
}

// validateValue checks the inside of the value types whose contents Validate
// leaves unchecked: nested documents and the terminating null of strings.
func validateValue(v bsoncore.Value, depth int) error {
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		return validateDocument(v.Data, depth+1)
	case bsoncore.TypeString, bsoncore.TypeJavaScript, bsoncore.TypeSymbol:
		if !terminated(v.Data) {
			return fmt.Errorf("%s is not null-terminated", v.Type)
		}
	case bsoncore.TypeCodeWithScope:
		code, scope, ok := v.CodeWithScopeOK()
		// The declared total must be exactly its parts: the length itself,
		// the code string (length, bytes, null) and the scope.
		if !ok || len(v.Data) != 4+4+len(code)+1+len(scope) || !terminated(v.Data[4:4+4+len(code)+1]) {
			return fmt.Errorf("malformed %s", v.Type)
		}
		return validateDocument(scope, depth+1)
	}
	return nil
}

// terminated reports whether b, a BSON string with its length prefix, has at
// least the null byte and ends with it.
func terminated(b []byte) bool {
	return len(b) > 4 && b[len(b)-1] == 0
}
