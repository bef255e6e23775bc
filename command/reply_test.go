package command

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/mongoerr"
)

func TestReplyBuilders(t *testing.T) {
	var req Request
	idx, dst := req.BeginReply()
	dst = bsoncore.AppendInt32Element(dst, "n", 3)
	reply, err := req.EndReply(idx, dst)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"n": {"$numberInt":"3"},"ok": {"$numberDouble":"1.0"}}`; reply.String() != want {
		t.Errorf("endReply = %s, want %s", reply, want)
	}
	// The next reply reuses the buffer.
	idx, dst = req.BeginReply()
	if again, _ := req.EndReply(idx, dst); &again[0] != &reply[0] {
		t.Error("the reply buffer was not reused")
	}

	reply, err = OK(bson.E{Key: "you", Value: "me"})
	if err != nil || reply.Lookup("you").StringValue() != "me" || reply.Lookup("ok").Double() != 1 {
		t.Errorf("okReply = %s, %v", reply, err)
	}

	e := &mongoerr.Error{Code: mongoerr.DuplicateKey, Msg: "dup", Extra: bson.D{{Key: "keyValue", Value: bson.D{{Key: "_id", Value: 1}}}}}
	got := bson.Raw(AppendError(nil, e))
	want := `{"ok": {"$numberDouble":"0.0"},"errmsg": "dup","code": {"$numberInt":"11000"},"codeName": "DuplicateKey","keyValue": {"_id": {"$numberInt":"1"}}}`
	if got.String() != want {
		t.Errorf("error reply = %s, want %s", got, want)
	}
}
