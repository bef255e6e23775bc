package command

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/wire"
)

func TestReplyOverMessageSizeRefused(t *testing.T) {
	var req Request
	idx, dst := req.BeginReply()
	big := strings.Repeat("x", 16<<20)
	for i := range 3 {
		dst = bsoncore.AppendStringElement(dst, string(rune('a'+i)), big)
	}
	if _, err := req.EndReply(idx, dst); mongoerr.CodeOf(err) != mongoerr.BSONObjectTooLarge {
		t.Fatalf("a reply of %d bytes: %v, want BSONObjectTooLarge", len(dst), err)
	}
	if len(dst) <= wire.MaxMessageSize-64 {
		t.Fatalf("the test's reply of %d bytes is not too large", len(dst))
	}
	// A large reply's buffer is not kept for the next one.
	req.reply = dst
	if _, dst := req.BeginReply(); cap(dst) > MaxKeptReplyBytes {
		t.Errorf("the next reply reuses a buffer of %d bytes", cap(dst))
	}
}
