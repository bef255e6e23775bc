package wire

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := decodeHex(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAppendMsgLayout pins the OP_MSG layout against bytes laid out by hand
// from the protocol description.
func TestAppendMsgLayout(t *testing.T) {
	m := &Msg{
		Body: bsoncore.BuildDocument(nil, bsoncore.AppendInt32Element(nil, "ping", 1)),
		Sequences: []Sequence{{
			Identifier: "documents",
			Documents:  []bsoncore.Document{bsoncore.BuildDocument(nil, bsoncore.AppendInt32Element(nil, "a", 1))},
		}},
	}
	want := unhex(t, `
		3f000000 07000000 00000000 dd070000  # length 63, requestID 7, responseTo 0, OP_MSG
		00000000                             # flags
		00 0f000000 10 70696e6700 01000000 00  # kind 0: {ping: 1}
		01 1a000000 646f63756d656e747300      # kind 1: size 26, "documents"
		   0c000000 10 6100 01000000 00        # {a: 1}
	`)
	got := AppendMsg(nil, 7, 0, m)
	if !bytes.Equal(got, want) {
		t.Errorf("AppendMsg =\n%x\nwant\n%x", got, want)
	}
	// AppendMsg appends: what dst already holds stays in front.
	if got := AppendMsg([]byte("xyz"), 7, 0, m); !bytes.Equal(got, append([]byte("xyz"), want...)) {
		t.Errorf("AppendMsg after a prefix = %x", got)
	}
}

// TestAppendMsgPrefix: a prefix followed by the body is the message
// AppendMsg builds for that body, and decodes back to it.
func TestAppendMsgPrefix(t *testing.T) {
	body := bsoncore.BuildDocument(nil, bsoncore.AppendStringElement(nil, "s", "a reply body"))
	for _, flags := range []MsgFlags{0, FlagMoreToCome} {
		want := AppendMsg(nil, 9, 4, &Msg{Flags: flags, Body: body})
		got := append(AppendMsgPrefix([]byte("xyz"), 9, 4, flags, len(body)), body...)
		if !bytes.Equal(got[3:], want) || string(got[:3]) != "xyz" {
			t.Fatalf("flags %d: prefix and body =\n%x\nwant xyz then\n%x", flags, got, want)
		}
		var m Message
		if err := DecodeInto(&m, got[3:]); err != nil {
			t.Fatalf("flags %d: decode: %v", flags, err)
		}
		if m.Msg.Flags != flags || !bytes.Equal(m.Msg.Body, body) || m.Header.RequestID != 9 || m.Header.ResponseTo != 4 {
			t.Fatalf("flags %d: decoded %+v", flags, m)
		}
	}
}

func TestMsgChecksumCoversEveryByte(t *testing.T) {
	frame := AppendMsg(nil, 3, 0, &Msg{Flags: FlagChecksumPresent, Body: pingBody()})
	if _, err := Decode(frame); err != nil {
		t.Fatalf("Decode: %v", err)
	}
	for i := range frame {
		bad := bytes.Clone(frame)
		bad[i] ^= 0x01
		if _, err := Decode(bad); err == nil {
			t.Errorf("Decode accepted the message with byte %d flipped", i)
		}
	}
}

// TestDecodeMsgLayouts covers OP_MSG layouts the captures do not.
func TestDecodeMsgLayouts(t *testing.T) {
	body := pingBody()
	doc := bsoncore.BuildDocument(nil, bsoncore.AppendInt32Element(nil, "a", 1))
	msg := func(flags string, sections ...[]byte) []byte {
		frame := appendHeader(nil, 5, 0, OpMsg)
		frame = append(frame, unhex(t, flags)...)
		for _, s := range sections {
			frame = append(frame, s...)
		}
		return finishFrame(frame, 0)
	}
	kind0 := append([]byte{0}, body...)
	seq := func(id string, docs ...[]byte) []byte {
		s := Sequence{Identifier: id}
		for _, d := range docs {
			s.Documents = append(s.Documents, d)
		}
		frame := AppendMsg(nil, 0, 0, &Msg{Body: body, Sequences: []Sequence{s}})
		return frame[HeaderLen+4+len(kind0):]
	}

	for _, tc := range []struct {
		name  string
		frame []byte
		want  *Msg // nil when Decode must fail with ErrMalformed
	}{
		{"sequence before body", msg("00000000", seq("documents", doc), kind0),
			&Msg{Body: body, Sequences: []Sequence{{Identifier: "documents", Documents: []bsoncore.Document{doc}}}}},
		{"empty sequence", msg("00000000", kind0, seq("documents")),
			&Msg{Body: body, Sequences: []Sequence{{Identifier: "documents"}}}},
		{"empty identifier", msg("00000000", kind0, seq("", doc)),
			&Msg{Body: body, Sequences: []Sequence{{Documents: []bsoncore.Document{doc}}}}},
		{"moreToCome and exhaustAllowed", msg("02000100", kind0),
			&Msg{Flags: FlagMoreToCome | FlagExhaustAllowed, Body: body}},
		{"no flags", msg(""), nil},
		{"flags cut off", msg("0000"), nil},
		{"no sections", msg("00000000"), nil},
		{"checksum cut off", msg("01000000", []byte{0, 0, 0}), nil},
		{"sequence size cut off", msg("00000000", kind0, []byte{1, 5, 0}), nil},
		{"sequence size too small", msg("00000000", kind0, []byte{1, 4, 0, 0, 0}), nil},
		{"identifier not terminated", msg("00000000", kind0, []byte{1, 6, 0, 0, 0, 'a', 'b'}), nil},
		{"kind byte alone", msg("00000000", kind0, []byte{1}), nil},
		{"body length cut off", msg("00000000", []byte{0, 30, 0}), nil},
	} {
		m, err := Decode(tc.frame)
		if tc.want == nil {
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("%s: Decode = %+v, %v; want ErrMalformed", tc.name, m, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !reflect.DeepEqual(m.Msg, tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.name, m.Msg, tc.want)
		}
	}
}

func TestEncodeEmptyMessage(t *testing.T) {
	if _, err := Encode(&Message{}); err == nil {
		t.Error("Encode of a message with no operation succeeded")
	}
}

// TestDecodeIntoReuses: decoding one message after another into the same
// Message gives what Decode gives each, and once its slices have grown,
// allocates nothing.
func TestDecodeIntoReuses(t *testing.T) {
	doc := func(k string, v int32) bsoncore.Document {
		return bsoncore.BuildDocument(nil, bsoncore.AppendInt32Element(nil, k, v))
	}
	frames := [][]byte{
		AppendMsg(nil, 1, 0, &Msg{Body: doc("insert", 1), Sequences: []Sequence{{Identifier: "documents", Documents: []bsoncore.Document{doc("a", 1), doc("a", 2)}}}}),
		AppendMsg(nil, 2, 0, &Msg{Body: doc("ping", 1)}),
		AppendMsg(nil, 3, 0, &Msg{Body: doc("update", 1), Sequences: []Sequence{{Identifier: "updates", Documents: []bsoncore.Document{doc("q", 3)}},
			{Identifier: "documents", Documents: []bsoncore.Document{doc("b", 4)}}}}),
		AppendMsg(nil, 4, 0, &Msg{Body: doc("insert", 1), Sequences: []Sequence{{Identifier: "documents", Documents: []bsoncore.Document{doc("a", 5)}}}}),
	}
	var m Message
	for i, f := range frames {
		want, err := Decode(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := DecodeInto(&m, f); err != nil {
			t.Fatal(err)
		}
		got := m
		if len(got.Msg.Sequences) == 0 {
			got.Msg = &Msg{Flags: got.Msg.Flags, Body: got.Msg.Body} // an emptied slice, where Decode has none
		}
		if !reflect.DeepEqual(&got, want) {
			t.Errorf("frame %d: DecodeInto = %+v, Decode = %+v", i, got.Msg, want.Msg)
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		for _, f := range frames {
			if err := DecodeInto(&m, f); err != nil {
				t.Fatal(err)
			}
		}
	}); n != 0 {
		t.Errorf("DecodeInto allocates %v times for the four messages", n)
	}
}
