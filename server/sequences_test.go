package server

import (
	"context"
	"net"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/wire"
)

// TestDocumentSequences checks that OP_MSG kind-1 sections reach the handler
// in Request.Sequences, merged by identifier.
func TestDocumentSequences(t *testing.T) {
	s, _, _ := startTestServer(t, commandDef{name: "letheCount", handle: func(_ context.Context, req *Request) (bson.Raw, error) {
		return command.OK(
			bson.E{Key: "documents", Value: int32(len(req.Sequences["documents"]))},
			bson.E{Key: "updates", Value: int32(len(req.Sequences["updates"]))},
			bson.E{Key: "last", Value: req.Sequences["documents"][2].Lookup("i").Int32()},
		)
	}})
	doc := func(i int32) bsoncore.Document {
		return bsoncore.NewDocumentBuilder().AppendInt32("i", i).Build()
	}
	body, _ := bson.Marshal(bson.D{{Key: "letheCount", Value: 1}, {Key: "$db", Value: "test"}})
	frame := wire.AppendMsg(nil, 1, 0, &wire.Msg{Body: body, Sequences: []wire.Sequence{
		{Identifier: "documents", Documents: []bsoncore.Document{doc(1), doc(2)}},
		{Identifier: "updates", Documents: []bsoncore.Document{doc(9)}},
		{Identifier: "documents", Documents: []bsoncore.Document{doc(3)}},
	}})

	nc, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Write(frame); err != nil {
		t.Fatal(err)
	}
	_, reply, err := wire.ReadFrame(nc, wire.MaxMessageSize, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := wire.Decode(reply)
	if err != nil {
		t.Fatal(err)
	}
	got := bson.Raw(m.Msg.Body)
	if got.Lookup("documents").Int32() != 3 || got.Lookup("updates").Int32() != 1 || got.Lookup("last").Int32() != 3 {
		t.Errorf("reply %s, want 3 documents ending with i: 3, and 1 update", got)
	}
}
