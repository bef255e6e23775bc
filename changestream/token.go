package changestream

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/oplog"
)

// Tokens of streams without showExpireEvents are version 1; those of
// streams with it are version 2, which adds the expiry position.
const (
	tokenVersion  = 1
	tokenVersion2 = 2
)

const (
	flagInvalidate = 1 << iota
	flagHighWater
	flagExpire
)

// Token is a decoded resume token.
type Token struct {
	TS    oplog.Timestamp
	Index uint32
	Flags byte
	UUID  [16]byte
	// V2 marks a token of a stream with showExpireEvents, which carries
	// the expiry position: every expire event up to (Expire, Tail) was
	// handed out, a nil Tail covering all of instant Expire.
	V2     bool
	Expire int64
	// Tail is, on an expire event's token, "ns\x00" and the _id's key.
	Tail []byte
}

// IsExpire reports whether t is the token of an expire event.
func (t Token) IsExpire() bool { return t.Flags&flagExpire != 0 }

// Invalidate reports whether t is the token of an invalidate event.
func (t Token) Invalidate() bool { return t.Flags&flagInvalidate != 0 }

// HighWater reports whether t names a point in the oplog, not an event.
func (t Token) HighWater() bool { return t.Flags&flagHighWater != 0 }

func (t Token) bytes() []byte {
	b := make([]byte, 0, 38+len(t.Tail))
	if t.V2 {
		b = append(b, tokenVersion2)
	} else {
		b = append(b, tokenVersion)
	}
	b = binary.BigEndian.AppendUint64(b, t.TS.Uint64())
	b = binary.BigEndian.AppendUint32(b, t.Index)
	b = append(b, t.Flags)
	b = append(b, t.UUID[:]...)
	if t.V2 {
		b = binary.BigEndian.AppendUint64(b, uint64(t.Expire))
		b = append(b, t.Tail...)
	}
	return b
}

// Doc is the token as clients see it: {_data: "<hex>"}.
func (t Token) Doc() bson.Raw {
	return bson.Raw(bsoncore.NewDocumentBuilder().AppendString("_data", strings.ToUpper(hex.EncodeToString(t.bytes()))).Build())
}

// ParseToken decodes a resume token given as resumeAfter or startAfter.
func ParseToken(v bson.RawValue) (Token, error) {
	var t Token
	d, ok := v.DocumentOK()
	if !ok {
		return t, mongoerr.New(mongoerr.TypeMismatch, "resume token must be an object, not %s", v.Type)
	}
	data, ok := d.Lookup("_data").StringValueOK()
	if !ok {
		return t, errBadToken("missing or non-string _data")
	}
	b, err := hex.DecodeString(data)
	if err != nil || len(b) < 30 || !(b[0] == tokenVersion && len(b) == 30 || b[0] == tokenVersion2 && len(b) >= 38) {
		return t, errBadToken("malformed _data")
	}
	if b[0] == tokenVersion2 {
		t.V2 = true
		t.Expire = int64(binary.BigEndian.Uint64(b[30:38]))
		if len(b) > 38 {
			t.Tail = append([]byte(nil), b[38:]...)
		}
	}
	t.TS = oplog.FromUint64(binary.BigEndian.Uint64(b[1:9]))
	t.Index = binary.BigEndian.Uint32(b[9:13])
	t.Flags = b[13]
	copy(t.UUID[:], b[14:])
	return t, nil
}

func errBadToken(why string) error {
	return mongoerr.New(mongoerr.InvalidResumeToken, "invalid resume token: %s", why)
}

// sameEvent reports whether the event of token t is the one of token u.
func (t Token) sameEvent(u Token) bool {
	return t.TS == u.TS && t.Index == u.Index && t.Flags == u.Flags && bytes.Equal(t.UUID[:], u.UUID[:])
}
