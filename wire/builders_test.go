package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/wiremessage"
)

// Fixed values, so that the captures are reproducible.
var (
	lsid      = bson.Binary{Subtype: 4, Data: []byte{0x6a, 0x1f, 0x3c, 0x52, 0x9d, 0x0e, 0x4b, 0x7a, 0x8c, 0x61, 0x2e, 0xf4, 0x05, 0xb3, 0x97, 0xd8}}
	processID = mustObjectID("65f0c1a2b3c4d5e6f7a8b9c0")
	when      = bson.DateTime(1_710_000_000_000)
	filterDoc = bson.D{{Key: "age", Value: bson.D{{Key: "$gte", Value: int32(21)}}}, {Key: "status", Value: "active"}}
	client    = bson.D{
		{Key: "application", Value: bson.D{{Key: "name", Value: "inventory-service"}}},
		{Key: "driver", Value: bson.D{{Key: "name", Value: "mongo-go-driver"}, {Key: "version", Value: "2.9.3"}}},
		{Key: "os", Value: bson.D{{Key: "type", Value: "linux"}, {Key: "architecture", Value: "amd64"}}},
		{Key: "platform", Value: "go1.26.8"},
	}
	handshakeCompressors = bson.A{"zstd", "zlib", "snappy"}
)

func mustObjectID(s string) bson.ObjectID {
	id, err := bson.ObjectIDFromHex(s)
	if err != nil {
		panic(err)
	}
	return id
}

func mustMarshal(v any) bsoncore.Document {
	doc, err := bson.Marshal(v)
	if err != nil {
		panic(err)
	}
	return doc
}

// sequence is a kind-1 section to lay out with opMsg.
type sequence struct {
	id   string
	docs []bsoncore.Document
}

// opMsg lays out an OP_MSG, body first, as the driver does.
func opMsg(requestID, responseTo int32, flags wiremessage.MsgFlag, body bsoncore.Document, seqs []sequence) []byte {
	start, wm := wiremessage.AppendHeaderStart(nil, requestID, responseTo, wiremessage.OpMsg)
	wm = wiremessage.AppendMsgFlags(wm, flags)
	wm = wiremessage.AppendMsgSectionType(wm, wiremessage.SingleDocument)
	wm = append(wm, body...)
	for _, s := range seqs {
		wm = appendSequence(wm, s.id, s.docs)
	}
	if flags&wiremessage.ChecksumPresent == 0 {
		return bsoncore.UpdateLength(wm, start, int32(len(wm)))
	}
	wm = bsoncore.UpdateLength(wm, start, int32(len(wm)+4))
	return binary.LittleEndian.AppendUint32(wm, crc32.Checksum(wm, crc32.MakeTable(crc32.Castagnoli)))
}

func appendSequence(wm []byte, id string, docs []bsoncore.Document) []byte {
	wm = wiremessage.AppendMsgSectionType(wm, wiremessage.DocumentSequence)
	start, wm := bsoncore.ReserveLength(wm)
	wm = append(wm, id...)
	wm = append(wm, 0)
	for _, doc := range docs {
		wm = append(wm, doc...)
	}
	return bsoncore.UpdateLength(wm, start, int32(len(wm))-start)
}

// fixLength makes the header of an edited frame declare its length.
func fixLength(frame []byte) []byte {
	binary.LittleEndian.PutUint32(frame, uint32(len(frame)))
	return frame
}

// sequenceSizeOffset returns where the size of the first document sequence
// of an OP_MSG is, assuming the body comes first.
func sequenceSizeOffset(frame []byte) int {
	body := HeaderLen + 4 + 1
	return body + int(binary.LittleEndian.Uint32(frame[body:])) + 1
}

// compressed wraps frame in an OP_COMPRESSED, compressing it directly with
// the libraries rather than through Compress.
func compressed(frame []byte, c Compressor) []byte {
	_, requestID, responseTo, op, body, _ := wiremessage.ReadHeader(frame)
	start, wm := wiremessage.AppendHeaderStart(nil, requestID, responseTo, wiremessage.OpCompressed)
	wm = wiremessage.AppendCompressedOriginalOpCode(wm, op)
	wm = wiremessage.AppendCompressedUncompressedSize(wm, int32(len(body)))
	wm = wiremessage.AppendCompressedCompressorID(wm, wiremessage.CompressorID(c))
	switch c {
	case CompressorNoop:
		wm = append(wm, body...)
	case CompressorSnappy:
		wm = append(wm, snappy.Encode(nil, body)...)
	case CompressorZlib:
		var buf bytes.Buffer
		w := zlib.NewWriter(&buf)
		w.Write(body)
		w.Close()
		wm = append(wm, buf.Bytes()...)
	case CompressorZstd:
		enc, err := zstd.NewWriter(nil)
		if err != nil {
			panic(err)
		}
		wm = enc.EncodeAll(body, wm)
	}
	return bsoncore.UpdateLength(wm, start, int32(len(wm)))
}

func helloOpQuery(requestID int32) []byte {
	query := mustMarshal(bson.D{
		{Key: "isMaster", Value: int32(1)},
		{Key: "helloOk", Value: true},
		{Key: "client", Value: client},
		{Key: "compression", Value: handshakeCompressors},
	})
	start, wm := wiremessage.AppendHeaderStart(nil, requestID, 0, wiremessage.OpQuery)
	wm = wiremessage.AppendQueryFlags(wm, 0)
	wm = wiremessage.AppendQueryFullCollectionName(wm, "admin.$cmd")
	wm = wiremessage.AppendQueryNumberToSkip(wm, 0)
	wm = wiremessage.AppendQueryNumberToReturn(wm, -1)
	wm = append(wm, query...)
	return bsoncore.UpdateLength(wm, start, int32(len(wm)))
}

func helloOpReply() []byte {
	doc := mustMarshal(bson.D{
		{Key: "helloOk", Value: true},
		{Key: "ismaster", Value: true},
		{Key: "topologyVersion", Value: bson.D{{Key: "processId", Value: processID}, {Key: "counter", Value: int64(0)}}},
		{Key: "maxBsonObjectSize", Value: int32(16 * 1024 * 1024)},
		{Key: "maxMessageSizeBytes", Value: int32(48_000_000)},
		{Key: "maxWriteBatchSize", Value: int32(100_000)},
		{Key: "localTime", Value: when},
		{Key: "logicalSessionTimeoutMinutes", Value: int32(30)},
		{Key: "connectionId", Value: int32(3)},
		{Key: "minWireVersion", Value: int32(0)},
		{Key: "maxWireVersion", Value: int32(21)},
		{Key: "readOnly", Value: false},
		{Key: "compression", Value: bson.A{"zstd"}},
		{Key: "ok", Value: 1.0},
	})
	start, wm := wiremessage.AppendHeaderStart(nil, 101, 1, wiremessage.OpReply)
	wm = wiremessage.AppendReplyFlags(wm, wiremessage.AwaitCapable)
	wm = wiremessage.AppendReplyCursorID(wm, 0)
	wm = wiremessage.AppendReplyStartingFrom(wm, 0)
	wm = wiremessage.AppendReplyNumberReturned(wm, 1)
	wm = append(wm, doc...)
	return bsoncore.UpdateLength(wm, start, int32(len(wm)))
}

func legacyQuerySelector() []byte {
	start, wm := wiremessage.AppendHeaderStart(nil, 7, 0, wiremessage.OpQuery)
	wm = wiremessage.AppendQueryFlags(wm, wiremessage.SecondaryOK)
	wm = wiremessage.AppendQueryFullCollectionName(wm, "app.users")
	wm = wiremessage.AppendQueryNumberToSkip(wm, 5)
	wm = wiremessage.AppendQueryNumberToReturn(wm, 20)
	wm = append(wm, mustMarshal(bson.D{{Key: "age", Value: bson.D{{Key: "$gte", Value: int32(21)}}}})...)
	wm = append(wm, mustMarshal(bson.D{{Key: "name", Value: int32(1)}, {Key: "_id", Value: int32(0)}})...)
	return bsoncore.UpdateLength(wm, start, int32(len(wm)))
}

func legacyInsert() []byte {
	start, wm := wiremessage.AppendHeaderStart(nil, 21, 0, wiremessage.OpInsert)
	wm = binary.LittleEndian.AppendUint32(wm, 0)
	wm = append(wm, "app.users\x00"...)
	wm = append(wm, userDocs()[0]...)
	return bsoncore.UpdateLength(wm, start, int32(len(wm)))
}

func helloOpMsg() []byte {
	return opMsg(2, 0, 0, mustMarshal(bson.D{
		{Key: "hello", Value: int32(1)},
		{Key: "helloOk", Value: true},
		{Key: "client", Value: client},
		{Key: "compression", Value: handshakeCompressors},
		{Key: "apiVersion", Value: "1"},
		{Key: "$db", Value: "admin"},
	}), nil)
}

func findOpMsg() []byte {
	return opMsg(12, 0, 0, mustMarshal(bson.D{
		{Key: "find", Value: "users"},
		{Key: "filter", Value: filterDoc},
		{Key: "sort", Value: bson.D{{Key: "name", Value: int32(1)}}},
		{Key: "projection", Value: bson.D{{Key: "name", Value: int32(1)}, {Key: "email", Value: int32(1)}}},
		{Key: "limit", Value: int64(10)},
		{Key: "lsid", Value: bson.D{{Key: "id", Value: lsid}}},
		{Key: "$clusterTime", Value: bson.D{
			{Key: "clusterTime", Value: bson.Timestamp{T: 1_710_000_000, I: 3}},
			{Key: "signature", Value: bson.D{
				{Key: "hash", Value: bson.Binary{Data: make([]byte, 20)}},
				{Key: "keyId", Value: int64(0)},
			}},
		}},
		{Key: "$db", Value: "app"},
		{Key: "$readPreference", Value: bson.D{{Key: "mode", Value: "primaryPreferred"}}},
	}), nil)
}

func userDocs() []bsoncore.Document {
	user := func(id, name, city, zip string, age int32, tags ...string) bsoncore.Document {
		return mustMarshal(bson.D{
			{Key: "_id", Value: mustObjectID(id)},
			{Key: "name", Value: name},
			{Key: "email", Value: strings.ToLower(name) + "@example.com"},
			{Key: "age", Value: age},
			{Key: "tags", Value: tags},
			{Key: "address", Value: bson.D{{Key: "city", Value: city}, {Key: "zip", Value: zip}}},
			{Key: "createdAt", Value: when},
		})
	}
	return []bsoncore.Document{
		user("65f0c1a2b3c4d5e6f7a8b9c1", "Ada", "London", "N1 9GU", 36, "admin", "ops"),
		user("65f0c1a2b3c4d5e6f7a8b9c2", "Grace", "Arlington", "22201", 45, "dev", "ops"),
		user("65f0c1a2b3c4d5e6f7a8b9c3", "Marie", "Paris", "75005", 66, "research"),
	}
}

func insertOpMsgSequence() []byte {
	return opMsg(13, 0, 0, mustMarshal(bson.D{
		{Key: "insert", Value: "users"},
		{Key: "ordered", Value: true},
		{Key: "lsid", Value: bson.D{{Key: "id", Value: lsid}}},
		{Key: "txnNumber", Value: int64(1)},
		{Key: "$db", Value: "app"},
	}), []sequence{{"documents", userDocs()}})
}

func bulkWriteOpMsg() []byte {
	return opMsg(14, 0, 0, mustMarshal(bson.D{
		{Key: "bulkWrite", Value: int32(1)},
		{Key: "errorsOnly", Value: true},
		{Key: "ordered", Value: false},
		{Key: "lsid", Value: bson.D{{Key: "id", Value: lsid}}},
		{Key: "$db", Value: "admin"},
	}), []sequence{
		{"ops", []bsoncore.Document{
			mustMarshal(bson.D{
				{Key: "insert", Value: int32(0)},
				{Key: "document", Value: bson.D{{Key: "_id", Value: mustObjectID("65f0c1a2b3c4d5e6f7a8b9c4")}, {Key: "name", Value: "Hedy"}}},
			}),
			mustMarshal(bson.D{
				{Key: "update", Value: int32(0)},
				{Key: "filter", Value: bson.D{{Key: "name", Value: "Ada"}}},
				{Key: "updateMods", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "age", Value: int32(37)}}}}},
				{Key: "multi", Value: false},
			}),
			mustMarshal(bson.D{
				{Key: "delete", Value: int32(0)},
				{Key: "filter", Value: bson.D{{Key: "status", Value: "inactive"}}},
				{Key: "multi", Value: true},
			}),
		}},
		{"nsInfo", []bsoncore.Document{mustMarshal(bson.D{{Key: "ns", Value: "app.users"}})}},
	})
}

func pingBody() bsoncore.Document {
	return mustMarshal(bson.D{{Key: "ping", Value: int32(1)}, {Key: "$db", Value: "admin"}})
}

func pingChecksum() []byte {
	return opMsg(15, 0, wiremessage.ChecksumPresent, pingBody(), nil)
}

func unacknowledgedInsert() []byte {
	event := func(id, kind string) bsoncore.Document {
		return mustMarshal(bson.D{{Key: "_id", Value: mustObjectID(id)}, {Key: "type", Value: kind}, {Key: "at", Value: when}})
	}
	return opMsg(16, 0, wiremessage.MoreToCome, mustMarshal(bson.D{
		{Key: "insert", Value: "events"},
		{Key: "ordered", Value: false},
		{Key: "writeConcern", Value: bson.D{{Key: "w", Value: int32(0)}}},
		{Key: "$db", Value: "app"},
	}), []sequence{{"documents", []bsoncore.Document{
		event("65f0c1a2b3c4d5e6f7a8b9d1", "click"),
		event("65f0c1a2b3c4d5e6f7a8b9d2", "view"),
	}}})
}

func exhaustHello() []byte {
	return opMsg(17, 0, wiremessage.ExhaustAllowed, mustMarshal(bson.D{
		{Key: "hello", Value: int32(1)},
		{Key: "topologyVersion", Value: bson.D{{Key: "processId", Value: processID}, {Key: "counter", Value: int64(0)}}},
		{Key: "maxAwaitTimeMS", Value: int64(10_000)},
		{Key: "$db", Value: "admin"},
	}), nil)
}

func cursorReply() []byte {
	users := userDocs()
	return opMsg(102, 12, 0, mustMarshal(bson.D{
		{Key: "cursor", Value: bson.D{
			{Key: "firstBatch", Value: bson.A{bson.Raw(users[0]), bson.Raw(users[1])}},
			{Key: "id", Value: int64(0)},
			{Key: "ns", Value: "app.users"},
		}},
		{Key: "ok", Value: 1.0},
	}), nil)
}

func listCollections() []byte {
	return opMsg(18, 0, 0, mustMarshal(bson.D{
		{Key: "listCollections", Value: int32(1)},
		{Key: "filter", Value: bson.D{}},
		{Key: "nameOnly", Value: true},
		{Key: "authorizedCollections", Value: true},
		{Key: "$db", Value: "app"},
	}), nil)
}

func bigCursorReply() []byte {
	var batch bson.A
	for i := range 20 {
		batch = append(batch, bson.D{
			{Key: "_id", Value: int32(i)},
			{Key: "name", Value: fmt.Sprintf("user%d", i)},
			{Key: "email", Value: fmt.Sprintf("user%d@example.com", i)},
			{Key: "status", Value: "active"},
		})
	}
	return opMsg(103, 19, 0, mustMarshal(bson.D{
		{Key: "cursor", Value: bson.D{
			{Key: "firstBatch", Value: batch},
			{Key: "id", Value: int64(7_243_902_123)},
			{Key: "ns", Value: "app.users"},
		}},
		{Key: "ok", Value: 1.0},
	}), nil)
}

func aggregateChecksum() []byte {
	return opMsg(20, 0, wiremessage.ChecksumPresent, mustMarshal(bson.D{
		{Key: "aggregate", Value: "users"},
		{Key: "pipeline", Value: bson.A{
			bson.D{{Key: "$match", Value: bson.D{{Key: "status", Value: "active"}}}},
			bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$age"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: int32(1)}}}}}},
		}},
		{Key: "cursor", Value: bson.D{}},
		{Key: "$db", Value: "app"},
	}), nil)
}
