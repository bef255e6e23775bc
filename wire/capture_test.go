package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The captures in captureDir are made by the builders in builders_test.go,
// which lay messages out with the Go driver's own wiremessage package rather
// than with this package, so that the round trips compare against an
// independent encoder. Regenerate them after changing a builder with
//
//	go test ./wire/ -run Captures -update
var update = flag.Bool("update", false, "rewrite the captures in "+captureDir)

const captureDir = "../testdata/wire"

// A goodCapture is a message that must decode, pass check and re-encode to
// the same bytes.
type goodCapture struct {
	name  string
	about string
	build func() []byte
	check func(t *testing.T, m *Message)
}

// A badCapture is a message that Decode must reject with an error wrapping
// want and containing text.
type badCapture struct {
	name  string
	about string
	build func() []byte
	want  error
	text  string
}

var goodCaptures = []goodCapture{
	{
		name:  "hello_op_query",
		about: "A driver's first message on a connection: the legacy isMaster handshake as OP_QUERY on admin.$cmd.",
		build: func() []byte { return helloOpQuery(1) },
		check: func(t *testing.T, m *Message) {
			wantHeader(t, m, Header{Length: int32(len(helloOpQuery(1))), RequestID: 1, OpCode: OpQuery}, CompressorNoop)
			q := m.Query
			if q.FullCollectionName != "admin.$cmd" || q.NumberToSkip != 0 || q.NumberToReturn != -1 || q.ReturnFieldsSelector != nil {
				t.Errorf("query = %+v", q)
			}
			wantField(t, q.Query, int32(1), "isMaster")
			wantField(t, q.Query, true, "helloOk")
			wantField(t, q.Query, "mongo-go-driver", "client", "driver", "name")
			wantField(t, q.Query, "linux", "client", "os", "type")
			wantField(t, q.Query, "zstd", "compression", "0")
			wantField(t, q.Query, "snappy", "compression", "2")
		},
	},
	{
		name:  "hello_op_reply",
		about: "The server's OP_REPLY to the isMaster handshake, offering zstd compression.",
		build: helloOpReply,
		check: func(t *testing.T, m *Message) {
			wantHeader(t, m, Header{Length: int32(len(helloOpReply())), RequestID: 101, ResponseTo: 1, OpCode: OpReply}, CompressorNoop)
			r := m.Reply
			if r.Flags != 8 || r.CursorID != 0 || r.StartingFrom != 0 || len(r.Documents) != 1 {
				t.Fatalf("reply = %+v", r)
			}
			wantField(t, r.Documents[0], true, "ismaster")
			wantField(t, r.Documents[0], int32(48_000_000), "maxMessageSizeBytes")
			wantField(t, r.Documents[0], "zstd", "compression", "0")
			wantField(t, r.Documents[0], 1.0, "ok")
		},
	},
	{
		name:  "legacy_query_selector",
		about: "A legacy OP_QUERY find with skip, limit and a returnFieldsSelector.",
		build: legacyQuerySelector,
		check: func(t *testing.T, m *Message) {
			q := m.Query
			if q.Flags != 4 || q.FullCollectionName != "app.users" || q.NumberToSkip != 5 || q.NumberToReturn != 20 {
				t.Errorf("query = %+v", q)
			}
			wantField(t, q.Query, int32(21), "age", "$gte")
			wantField(t, q.ReturnFieldsSelector, int32(1), "name")
			wantField(t, q.ReturnFieldsSelector, int32(0), "_id")
		},
	},
	{
		name:  "hello_op_msg",
		about: "The handshake as a driver with a server API version sends it: hello in an OP_MSG.",
		build: helloOpMsg,
		check: func(t *testing.T, m *Message) {
			wantHeader(t, m, Header{Length: int32(len(helloOpMsg())), RequestID: 2, OpCode: OpMsg}, CompressorNoop)
			if m.Msg.Flags != 0 || len(m.Msg.Sequences) != 0 {
				t.Errorf("msg = %+v", m.Msg)
			}
			wantField(t, m.Msg.Body, int32(1), "hello")
			wantField(t, m.Msg.Body, "1", "apiVersion")
			wantField(t, m.Msg.Body, "admin", "$db")
		},
	},
	{
		name:  "find_op_msg",
		about: "A find with filter, sort, projection, limit, session and read preference.",
		build: findOpMsg,
		check: func(t *testing.T, m *Message) {
			if m.Header.RequestID != 12 || m.Msg.Flags != 0 {
				t.Errorf("header %+v, flags %#x", m.Header, m.Msg.Flags)
			}
			wantField(t, m.Msg.Body, "users", "find")
			wantField(t, m.Msg.Body, "active", "filter", "status")
			wantField(t, m.Msg.Body, int64(10), "limit")
			wantField(t, m.Msg.Body, lsid, "lsid", "id")
			wantField(t, m.Msg.Body, "primaryPreferred", "$readPreference", "mode")
			wantField(t, m.Msg.Body, "app", "$db")
		},
	},
	{
		name:  "insert_op_msg_sequence",
		about: "An insert whose documents travel in a kind-1 document sequence.",
		build: insertOpMsgSequence,
		check: func(t *testing.T, m *Message) {
			wantField(t, m.Msg.Body, "users", "insert")
			wantField(t, m.Msg.Body, int64(1), "txnNumber")
			if len(m.Msg.Sequences) != 1 {
				t.Fatalf("%d sequences, want 1", len(m.Msg.Sequences))
			}
			s := m.Msg.Sequences[0]
			if s.Identifier != "documents" || len(s.Documents) != 3 {
				t.Fatalf("sequence %q has %d documents, want documents with 3", s.Identifier, len(s.Documents))
			}
			wantField(t, s.Documents[0], "Ada", "name")
			wantField(t, s.Documents[1], "ops", "tags", "1")
			wantField(t, s.Documents[2], "Paris", "address", "city")
		},
	},
	{
		name:  "bulkwrite_op_msg_sequences",
		about: "A bulkWrite command with two document sequences, ops and nsInfo.",
		build: bulkWriteOpMsg,
		check: func(t *testing.T, m *Message) {
			wantField(t, m.Msg.Body, int32(1), "bulkWrite")
			if len(m.Msg.Sequences) != 2 {
				t.Fatalf("%d sequences, want 2", len(m.Msg.Sequences))
			}
			ops, ns := m.Msg.Sequences[0], m.Msg.Sequences[1]
			if ops.Identifier != "ops" || len(ops.Documents) != 3 || ns.Identifier != "nsInfo" || len(ns.Documents) != 1 {
				t.Fatalf("sequences %q (%d docs), %q (%d docs)", ops.Identifier, len(ops.Documents), ns.Identifier, len(ns.Documents))
			}
			wantField(t, ops.Documents[1], int32(37), "updateMods", "$set", "age")
			wantField(t, ns.Documents[0], "app.users", "ns")
		},
	},
	{
		name:  "op_msg_checksum",
		about: "A ping with checksumPresent: the message ends with a CRC-32C.",
		build: pingChecksum,
		check: func(t *testing.T, m *Message) {
			if m.Msg.Flags != FlagChecksumPresent {
				t.Errorf("flags = %#x", m.Msg.Flags)
			}
			wantField(t, m.Msg.Body, int32(1), "ping")
		},
	},
	{
		name:  "op_msg_more_to_come",
		about: "An unacknowledged (w:0) insert sent with moreToCome, so no reply is expected.",
		build: unacknowledgedInsert,
		check: func(t *testing.T, m *Message) {
			if m.Msg.Flags != FlagMoreToCome {
				t.Errorf("flags = %#x", m.Msg.Flags)
			}
			wantField(t, m.Msg.Body, int32(0), "writeConcern", "w")
			if len(m.Msg.Sequences) != 1 || len(m.Msg.Sequences[0].Documents) != 2 {
				t.Errorf("sequences = %+v", m.Msg.Sequences)
			}
		},
	},
	{
		name:  "op_msg_exhaust_hello",
		about: "A streaming monitor's hello, with exhaustAllowed, topologyVersion and maxAwaitTimeMS.",
		build: exhaustHello,
		check: func(t *testing.T, m *Message) {
			if m.Msg.Flags != FlagExhaustAllowed {
				t.Errorf("flags = %#x", m.Msg.Flags)
			}
			wantField(t, m.Msg.Body, int64(10_000), "maxAwaitTimeMS")
			wantField(t, m.Msg.Body, processID, "topologyVersion", "processId")
		},
	},
	{
		name:  "op_msg_optional_flag",
		about: "A ping with flag bit 20 set: an unknown optional bit, which is ignored but kept.",
		build: func() []byte { return opMsg(22, 0, 1<<20, pingBody(), nil) },
		check: func(t *testing.T, m *Message) {
			if m.Msg.Flags != 1<<20 {
				t.Errorf("flags = %#x", m.Msg.Flags)
			}
		},
	},
	{
		name:  "op_msg_cursor_reply",
		about: "The server's reply to find_op_msg: a cursor with its first batch.",
		build: cursorReply,
		check: func(t *testing.T, m *Message) {
			wantHeader(t, m, Header{Length: int32(len(cursorReply())), RequestID: 102, ResponseTo: 12, OpCode: OpMsg}, CompressorNoop)
			wantField(t, m.Msg.Body, "app.users", "cursor", "ns")
			wantField(t, m.Msg.Body, "Ada", "cursor", "firstBatch", "0", "name")
			wantField(t, m.Msg.Body, 1.0, "ok")
		},
	},
	{
		name:  "compressed_noop",
		about: "A listCollections OP_MSG inside an OP_COMPRESSED with the noop compressor.",
		build: func() []byte { return compressed(listCollections(), CompressorNoop) },
		check: func(t *testing.T, m *Message) {
			frame := compressed(listCollections(), CompressorNoop)
			wantHeader(t, m, Header{Length: int32(len(frame)), RequestID: 18, OpCode: OpMsg}, CompressorNoop)
			wantField(t, m.Msg.Body, true, "nameOnly")
		},
	},
	{
		name:  "compressed_snappy",
		about: "A cursor reply with a batch of twenty users, compressed with snappy.",
		build: func() []byte { return compressed(bigCursorReply(), CompressorSnappy) },
		check: func(t *testing.T, m *Message) {
			wantHeader(t, m, Header{Length: int32(len(compressed(bigCursorReply(), CompressorSnappy))), RequestID: 103, ResponseTo: 19, OpCode: OpMsg}, CompressorSnappy)
			wantField(t, m.Msg.Body, "user19", "cursor", "firstBatch", "19", "name")
		},
	},
	{
		name:  "compressed_zlib",
		about: "The insert of insert_op_msg_sequence, compressed with zlib.",
		build: func() []byte { return compressed(insertOpMsgSequence(), CompressorZlib) },
		check: func(t *testing.T, m *Message) {
			if m.Compressor != CompressorZlib || m.Header.OpCode != OpMsg || m.Header.RequestID != 13 {
				t.Errorf("header %+v, compressor %v", m.Header, m.Compressor)
			}
			if len(m.Msg.Sequences) != 1 || len(m.Msg.Sequences[0].Documents) != 3 {
				t.Errorf("sequences = %+v", m.Msg.Sequences)
			}
		},
	},
	{
		name:  "compressed_zstd_checksum",
		about: "An aggregate with checksumPresent, compressed with zstd; the checksum covers the rebuilt header.",
		build: func() []byte { return compressed(aggregateChecksum(), CompressorZstd) },
		check: func(t *testing.T, m *Message) {
			if m.Compressor != CompressorZstd || m.Msg.Flags != FlagChecksumPresent {
				t.Errorf("compressor %v, flags %#x", m.Compressor, m.Msg.Flags)
			}
			wantField(t, m.Msg.Body, "$age", "pipeline", "1", "$group", "_id")
		},
	},
}

var badCaptures = []badCapture{
	{
		name:  "garbage",
		about: "An HTTP request sent to the MongoDB port.",
		build: func() []byte {
			return []byte("GET / HTTP/1.1\r\nHost: localhost:27017\r\nUser-Agent: curl/8.5.0\r\nAccept: */*\r\n\r\n")
		},
		want: ErrMalformed,
		text: "header declares 542393671 bytes",
	},
	{
		name:  "truncated_header",
		about: "The first twelve bytes of a header.",
		build: func() []byte { return pingChecksum()[:12] },
		want:  ErrMalformed,
		text:  "shorter than a header",
	},
	{
		name:  "truncated",
		about: "hello_op_msg cut off after 40 bytes, its header still declaring the whole length.",
		build: func() []byte { return helloOpMsg()[:40] },
		want:  ErrMalformed,
		text:  "but the frame holds 40",
	},
	{
		name:  "truncated_body",
		about: "An OP_MSG whose body document claims 200 bytes but only 30 follow.",
		build: func() []byte {
			frame := opMsg(30, 0, 0, pingBody(), nil)
			frame[HeaderLen+5] = 200
			return frame
		},
		want: ErrMalformed,
		text: "document of 200 bytes overruns the 30 bytes left",
	},
	{
		name:  "bad_section_kind",
		about: "A ping followed by a section of kind 2, which is internal to MongoDB.",
		build: func() []byte {
			frame := opMsg(31, 0, 0, pingBody(), nil)
			frame = append(frame, 2)
			frame = append(frame, pingBody()...)
			return fixLength(frame)
		},
		want: ErrMalformed,
		text: "section 1 has unknown kind 2",
	},
	{
		name:  "two_body_sections",
		about: "An OP_MSG with two kind-0 sections.",
		build: func() []byte {
			frame := opMsg(32, 0, 0, pingBody(), nil)
			frame = append(frame, 0)
			frame = append(frame, pingBody()...)
			return fixLength(frame)
		},
		want: ErrMalformed,
		text: "section 1 is a second body",
	},
	{
		name:  "no_body_section",
		about: "An OP_MSG holding only a document sequence.",
		build: func() []byte {
			frame := opMsg(33, 0, 0, pingBody(), nil)[:HeaderLen+4]
			frame = appendSequence(frame, "documents", userDocs()[:1])
			return fixLength(frame)
		},
		want: ErrMalformed,
		text: "no body section",
	},
	{
		name:  "unknown_required_flag",
		about: "A ping with flag bit 2 set, a required bit this protocol version does not define.",
		build: func() []byte { return opMsg(34, 0, 1<<2, pingBody(), nil) },
		want:  ErrMalformed,
		text:  "unknown required flags 0x4",
	},
	{
		name:  "sequence_size_short",
		about: "An insert whose document sequence size is one byte short of its documents.",
		build: func() []byte {
			frame := insertOpMsgSequence()
			at := sequenceSizeOffset(frame)
			frame[at]--
			return frame
		},
		want: ErrMalformed,
		text: `document sequence "documents" document 2`,
	},
	{
		name:  "sequence_size_long",
		about: "An insert whose document sequence size runs past the end of the message.",
		build: func() []byte {
			frame := insertOpMsgSequence()
			frame[sequenceSizeOffset(frame)]++
			return frame
		},
		want: ErrMalformed,
		text: "does not fit",
	},
	{
		name:  "checksum_mismatch",
		about: "op_msg_checksum with ping changed to pong after the checksum was computed.",
		build: func() []byte {
			frame := pingChecksum()
			i := bytes.Index(frame, []byte("ping"))
			frame[i+1] = 'o'
			return frame
		},
		want: ErrChecksum,
		text: "CRC-32C",
	},
	{
		name:  "invalid_bson_body",
		about: "A ping whose only element has type 0x99, which BSON does not define.",
		build: func() []byte {
			frame := opMsg(35, 0, 0, pingBody(), nil)
			frame[HeaderLen+4+1+4] = 0x99
			return frame
		},
		want: ErrInvalidBSON,
		text: "OP_MSG body",
	},
	{
		name:  "invalid_bson_nested",
		about: "A find whose filter document lacks its final null byte; the outer document is consistent.",
		build: func() []byte {
			frame := findOpMsg()
			filter := bsoncore.Document(mustMarshal(filterDoc))
			at := bytes.Index(frame, filter) + len(filter) - 1
			frame[at] = 'x'
			return frame
		},
		want: ErrInvalidBSON,
		text: `field "filter"`,
	},
	{
		name:  "invalid_bson_sequence",
		about: "An insert whose second document holds a string without its null terminator.",
		build: func() []byte {
			frame := insertOpMsgSequence()
			at := bytes.Index(frame, []byte("Grace\x00"))
			frame[at+5] = '!'
			return frame
		},
		want: ErrInvalidBSON,
		text: `document sequence "documents" document 1: invalid BSON: field "name"`,
	},
	{
		name:  "invalid_bson_op_query",
		about: "The isMaster OP_QUERY with the query document's final null byte replaced.",
		build: func() []byte {
			frame := helloOpQuery(40)
			frame[len(frame)-1] = 'x'
			return frame
		},
		want: ErrInvalidBSON,
		text: "OP_QUERY query",
	},
	{
		name:  "op_reply_count_mismatch",
		about: "hello_op_reply claiming a thousand documents while holding one.",
		build: func() []byte {
			frame := helloOpReply()
			frame[HeaderLen+16], frame[HeaderLen+17] = 0xe8, 0x03
			return frame
		},
		want: ErrMalformed,
		text: "numberReturned 1000 does not fit",
	},
	{
		name:  "unknown_opcode_insert",
		about: "A legacy OP_INSERT, which MongoDB no longer accepts.",
		build: legacyInsert,
		want:  ErrUnsupportedOpCode,
		text:  "unsupported opcode OP_INSERT",
	},
	{
		name:  "unknown_opcode_number",
		about: "A ping under opcode 1234, which no protocol version defines.",
		build: func() []byte {
			frame := opMsg(41, 0, 0, pingBody(), nil)
			frame[12], frame[13] = 0xd2, 0x04
			return frame
		},
		want: ErrUnsupportedOpCode,
		text: "OpCode(1234)",
	},
	{
		name:  "compressed_too_large",
		about: "An OP_COMPRESSED declaring two billion bytes once decompressed.",
		build: func() []byte {
			frame := compressed(pingChecksum(), CompressorSnappy)
			copy(frame[HeaderLen+4:], []byte{0x00, 0x94, 0x35, 0x77})
			return frame
		},
		want: ErrMessageTooLarge,
		text: "2000000000",
	},
	{
		name:  "compressed_size_mismatch",
		about: "A snappy OP_COMPRESSED declaring ten bytes more than its payload decompresses to.",
		build: func() []byte {
			frame := compressed(pingChecksum(), CompressorSnappy)
			frame[HeaderLen+4] += 10
			return frame
		},
		want: ErrMalformed,
		text: "not the declared",
	},
	{
		name:  "compressed_unknown_compressor",
		about: "An OP_COMPRESSED naming compressor 7.",
		build: func() []byte {
			frame := compressed(pingChecksum(), CompressorNoop)
			frame[HeaderLen+8] = 7
			return frame
		},
		want: ErrMalformed,
		text: "unknown compressor 7",
	},
	{
		name:  "compressed_nested",
		about: "An OP_COMPRESSED whose original opcode is OP_COMPRESSED.",
		build: func() []byte {
			frame := compressed(pingChecksum(), CompressorNoop)
			frame[HeaderLen], frame[HeaderLen+1] = 0xdc, 0x07
			return frame
		},
		want: ErrMalformed,
		text: "wraps another OP_COMPRESSED",
	},
	{
		name:  "compressed_corrupt_zlib",
		about: "compressed_zlib with a run of its deflate stream overwritten.",
		build: func() []byte {
			frame := compressed(insertOpMsgSequence(), CompressorZlib)
			for i := HeaderLen + 20; i < HeaderLen+40; i++ {
				frame[i] = 0xff
			}
			return frame
		},
		want: ErrMalformed,
		text: "OP_COMPRESSED zlib payload",
	},
	{
		name:  "compressed_invalid_bson",
		about: "invalid_bson_body inside a noop OP_COMPRESSED: the inner error comes through.",
		build: func() []byte {
			frame := opMsg(42, 0, 0, pingBody(), nil)
			frame[HeaderLen+4+1+4] = 0x99
			return compressed(frame, CompressorNoop)
		},
		want: ErrInvalidBSON,
		text: "OP_MSG body",
	},
}

func TestGoodCaptures(t *testing.T) {
	for _, c := range goodCaptures {
		t.Run(c.name, func(t *testing.T) {
			if *update {
				writeCapture(t, c.name, c.about, c.build())
			}
			frame := readCapture(t, c.name)
			m, err := Decode(frame)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			c.check(t, m)
			again, err := Encode(m)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			// Encode leaves a message that came with the noop compressor
			// unwrapped.
			if parseHeader(frame).OpCode == OpCompressed && m.Compressor == CompressorNoop {
				if again, err = Compress(again, CompressorNoop); err != nil {
					t.Fatalf("Compress: %v", err)
				}
			}
			if !bytes.Equal(again, frame) {
				t.Errorf("re-encoded message differs from the capture\n got %x\nwant %x", again, frame)
			}
		})
	}
}

func TestBadCaptures(t *testing.T) {
	for _, c := range badCaptures {
		t.Run(c.name, func(t *testing.T) {
			if *update {
				writeCapture(t, c.name, c.about, c.build())
			}
			m, err := Decode(readCapture(t, c.name))
			if !errors.Is(err, c.want) {
				t.Fatalf("Decode = %+v, %v; want an error wrapping %q", m, err, c.want)
			}
			if !strings.Contains(err.Error(), c.text) {
				t.Errorf("Decode error %q does not mention %q", err, c.text)
			}
		})
	}
}

// TestReadFrameCaptures streams every good capture back to back through
// ReadFrame, reusing one buffer as a connection loop would.
func TestReadFrameCaptures(t *testing.T) {
	var stream []byte
	var frames [][]byte
	for _, c := range goodCaptures {
		frame := readCapture(t, c.name)
		frames = append(frames, frame)
		stream = append(stream, frame...)
	}
	r := bytes.NewReader(stream)
	buf := make([]byte, 0, 256)
	for i, want := range frames {
		h, frame, err := ReadFrame(r, MaxMessageSize, buf)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !bytes.Equal(frame, want) || h != parseHeader(want) {
			t.Fatalf("frame %d: got header %+v and %x, want %x", i, h, frame, want)
		}
		if cap(frame) > cap(buf) {
			buf = frame[:0]
		}
	}
	if _, _, err := ReadFrame(r, MaxMessageSize, buf); err != io.EOF {
		t.Errorf("after the last frame: err = %v, want io.EOF", err)
	}
}

// TestNoStrayCaptures makes sure every file in captureDir is a capture the
// tests build, so that none is left stale by a renamed builder.
func TestNoStrayCaptures(t *testing.T) {
	known := map[string]bool{}
	for _, c := range goodCaptures {
		known[c.name+".hex"] = true
	}
	for _, c := range badCaptures {
		known[c.name+".hex"] = true
	}
	entries, err := os.ReadDir(captureDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !known[e.Name()] {
			t.Errorf("%s is not a capture any test builds", e.Name())
		}
	}
}

// wantHeader checks the header and compressor of m.
func wantHeader(t *testing.T, m *Message, h Header, c Compressor) {
	t.Helper()
	if m.Header != h || m.Compressor != c {
		t.Errorf("header %+v compressor %v; want %+v and %v", m.Header, m.Compressor, h, c)
	}
}

// wantField checks that the value at path in doc is want, as the driver
// would marshal it.
func wantField(t *testing.T, doc bsoncore.Document, want any, path ...string) {
	t.Helper()
	got, err := doc.LookupErr(path...)
	if err != nil {
		t.Errorf("%s: %v", strings.Join(path, "."), err)
		return
	}
	typ, data, err := bson.MarshalValue(want)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(bsoncore.Value{Type: bsoncore.Type(typ), Data: data}) {
		t.Errorf("%s = %v, want %v", strings.Join(path, "."), got, want)
	}
}

func capturePath(name string) string { return filepath.Join(captureDir, name+".hex") }

// readCapture returns the bytes of a capture file, hex as decodeHex reads it.
func readCapture(tb testing.TB, name string) []byte {
	tb.Helper()
	frame, err := parseCapture(capturePath(name))
	if err != nil {
		tb.Fatal(err)
	}
	return frame
}

func parseCapture(path string) ([]byte, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	frame, err := decodeHex(string(text))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return frame, nil
}

// decodeHex decodes hex laid out for reading: blank space is ignored and a #
// starts a comment that runs to the end of the line.
func decodeHex(s string) ([]byte, error) {
	var digits strings.Builder
	for line := range strings.Lines(s) {
		line, _, _ = strings.Cut(line, "#")
		digits.WriteString(strings.Join(strings.Fields(line), ""))
	}
	return hex.DecodeString(digits.String())
}

// writeCapture writes frame as hex in groups of four bytes, so that the
// header's fields and most lengths stand on their own.
func writeCapture(t *testing.T, name, about string, frame []byte) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n# %d bytes, written by builders_test.go: go test ./wire/ -run Captures -update\n", about, len(frame))
	for i := 0; i < len(frame); i += 32 {
		line := frame[i:min(i+32, len(frame))]
		for j := 0; j < len(line); j += 4 {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(hex.EncodeToString(line[j:min(j+4, len(line))]))
		}
		b.WriteByte('\n')
	}
	if err := os.WriteFile(capturePath(name), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
