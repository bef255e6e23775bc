package server

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/wire"
)

// FuzzCommands sends arbitrary command documents through dispatch: every
// one must get a reply, and none may end in an internal error, which is
// how a panic in a handler surfaces.
func FuzzCommands(f *testing.F) {
	seeds := []bson.D{
		{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: 1}}}}}, {Key: "sort", Value: bson.D{{Key: "b", Value: -1}}}},
		{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "a", Value: 1}, {Key: "ttl", Value: 5}}}}},
		{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.D{{Key: "$push", Value: bson.D{{Key: "x", Value: bson.D{{Key: "$each", Value: bson.A{1}}, {Key: "$slice", Value: -1}}}}}}}, {Key: "multi", Value: true}}}}},
		{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.A{bson.D{{Key: "$set", Value: bson.D{{Key: "z", Value: bson.D{{Key: "$concat", Value: bson.A{"a", "$s"}}}}}}}}}}}}},
		{{Key: "delete", Value: "c"}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "limit", Value: 1}}}}},
		{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$a"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}}}}, {Key: "cursor", Value: bson.D{}}},
		{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "_ts", Value: 1}}}, {Key: "name", Value: "t"}, {Key: "expireAfterSeconds", Value: 10}}}}},
		{{Key: "findAndModify", Value: "c"}, {Key: "query", Value: bson.D{}}, {Key: "update", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}, {Key: "upsert", Value: true}, {Key: "new", Value: true}},
		{{Key: "count", Value: "c"}, {Key: "query", Value: bson.D{{Key: "$expr", Value: bson.D{{Key: "$gt", Value: bson.A{"$a", 0}}}}}}},
		{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: 1}}}}}},
		{{Key: "createUser", Value: "u"}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: bson.A{"read", bson.D{{Key: "role", Value: "readWrite"}, {Key: "db", Value: "x"}}}}},
		{{Key: "saslStart", Value: 1}, {Key: "mechanism", Value: "SCRAM-SHA-256"}, {Key: "payload", Value: bson.Binary{Data: []byte("n,,n=u,r=abcdefgh")}}, {Key: "options", Value: bson.D{{Key: "skipEmptyExchange", Value: true}}}},
		{{Key: "saslContinue", Value: 1}, {Key: "conversationId", Value: 1}, {Key: "payload", Value: bson.Binary{Data: []byte("c=biws,r=abcdefgh,p=AAAA")}}},
		{{Key: "usersInfo", Value: bson.D{{Key: "forAllDBs", Value: true}}}, {Key: "showCredentials", Value: true}},
		{{Key: "createRole", Value: "r"}, {Key: "privileges", Value: bson.A{bson.D{{Key: "resource", Value: bson.D{{Key: "db", Value: "fuzz"}, {Key: "collection", Value: ""}}}, {Key: "actions", Value: bson.A{"find"}}}}}, {Key: "roles", Value: bson.A{}}},
	}
	for _, d := range seeds {
		raw, _ := bson.Marshal(append(d, bson.E{Key: "$db", Value: "fuzz"}))
		f.Add([]byte(raw))
	}
	s, _, _ := startTestServer(f)
	conn := &Conn{srv: s}
	f.Fuzz(func(t *testing.T, body []byte) {
		// Only what the wire layer lets through reaches dispatch.
		m, err := wire.Decode(wire.AppendMsg(nil, 1, 0, &wire.Msg{Body: body}))
		if err != nil || len(body) > 1<<16 {
			return
		}
		req := &Request{Request: command.Request{DB: "fuzz", Body: bson.Raw(m.Msg.Body)}, Conn: conn}
		if k, err := req.Body.IndexErr(0); err == nil {
			req.Name = k.Key()
		}
		key := bsonvalue.FirstKeyBytes(req.Body)
		req.generic.read(req.Body)
		reply := s.dispatch(context.Background(), s.commands[string(key)], key, req, time.Now())
		if reply == nil {
			return // moreToCome-style requests get none
		}
		if code, ok := reply.Lookup("code").AsInt64OK(); ok && mongoerr.Code(code) == mongoerr.InternalError {
			t.Fatalf("command %v: internal error %v", bson.Raw(body), reply)
		}
	})
}
