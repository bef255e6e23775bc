// Package wire converts between bytes and MongoDB wire protocol messages.
//
// It understands the framing shared by every message (a 16-byte header
// carrying the total length), the OP_MSG, OP_QUERY and OP_REPLY operations,
// and OP_COMPRESSED wrapping with the snappy, zlib and zstd compressors. It
// does no networking beyond reading frames from an io.Reader and knows nothing
// of commands: interpreting the documents is the server's job.
//
// Decoding is strict because every byte comes from an untrusted client. A
// malformed layout yields an error wrapping ErrMalformed, a document that is
// not well-formed BSON one wrapping ErrInvalidBSON, and a declared size above
// the limit one wrapping ErrMessageTooLarge; no length read from the input is
// used to size an allocation before it has been checked against the bytes
// actually present or against MaxMessageSize.
//
// Decoded documents, names aside, are not copied: they alias the frame passed
// to Decode (or, for a compressed message, a buffer Decode allocated). A caller
// that reuses its frame buffer, for instance by handing it back to ReadFrame,
// must first be done with every Message decoded from it, or copy the documents
// it keeps.
package wire
