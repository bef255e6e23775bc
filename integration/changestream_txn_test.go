package integration

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// A committed transaction's events come together, in its order, each with
// its lsid and txnNumber (https://www.mongodb.com/docs/manual/reference/
// change-events/: "only if the operation is part of a multi-document
// transaction"); a stream resumed after one of them goes on with the next;
// an aborted transaction shows nothing.
func TestChangeStreamTransactionEvents(t *testing.T) {
	_, client := startReplSet(t)
	ctx := testCtx(t)
	db := client.Database("cstx")
	for _, name := range []string{"a", "b"} {
		if err := db.CreateCollection(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := db.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(context.Background())

	sess, err := client.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(context.Background())
	// An aborted transaction first: it must show nothing.
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	sctx := mongo.NewSessionContext(ctx, sess)
	if _, err := db.Collection("a").InsertOne(sctx, bson.D{{Key: "_id", Value: "aborted"}}); err != nil {
		t.Fatal(err)
	}
	if err := sess.AbortTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.WithTransaction(ctx, func(sctx context.Context) (any, error) {
		if _, err := db.Collection("a").InsertOne(sctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
			return nil, err
		}
		if _, err := db.Collection("b").InsertOne(sctx, bson.D{{Key: "_id", Value: 2}}); err != nil {
			return nil, err
		}
		_, err := db.Collection("a").UpdateOne(sctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}})
		return nil, err
	}); err != nil {
		t.Fatal(err)
	}
	// A plain write after it, to see that nothing of the aborted one came
	// before.
	if _, err := db.Collection("b").InsertOne(ctx, bson.D{{Key: "_id", Value: "plain"}}); err != nil {
		t.Fatal(err)
	}
	type event struct {
		op, coll string
		id       any
		txn      bool
		token    bson.Raw
	}
	var got []event
	var txnNumber int64
	for len(got) < 4 && cs.Next(ctx) {
		ev := cs.Current
		if err := ev.Validate(); err != nil {
			t.Fatalf("event %d: invalid BSON: %v", len(got), err)
		}
		e := event{op: ev.Lookup("operationType").StringValue(), coll: ev.Lookup("ns", "coll").StringValue(), token: cs.ResumeToken()}
		if err := ev.Lookup("documentKey", "_id").Unmarshal(&e.id); err != nil {
			t.Fatal(err)
		}
		n, hasNumber := ev.Lookup("txnNumber").Int64OK()
		_, hasLsid := ev.Lookup("lsid").DocumentOK()
		if hasNumber != hasLsid {
			t.Fatalf("an event with txnNumber %v and lsid %v: %v", hasNumber, hasLsid, ev)
		}
		e.txn = hasNumber
		if hasNumber {
			txnNumber = n
		}
		got = append(got, e)
	}
	if err := cs.Err(); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		op, coll string
		txn      bool
	}{{"insert", "a", true}, {"insert", "b", true}, {"update", "a", true}, {"insert", "b", false}}
	if len(got) != len(want) {
		t.Fatalf("events %+v", got)
	}
	for i, w := range want {
		if got[i].op != w.op || got[i].coll != w.coll || got[i].txn != w.txn {
			t.Fatalf("event %d is %+v, want %+v (all: %+v)", i, got[i], w, got)
		}
	}
	if txnNumber == 0 {
		t.Fatal("no txnNumber on the transaction's events")
	}
	// Resuming after the first event of the transaction gives the second.
	rs, err := db.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetResumeAfter(got[0].token))
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close(context.Background())
	if !rs.Next(ctx) {
		t.Fatalf("the resumed stream: %v", rs.Err())
	}
	if coll := rs.Current.Lookup("ns", "coll").StringValue(); coll != "b" || rs.Current.Lookup("operationType").StringValue() != "insert" {
		t.Fatalf("resumed after the first event of the transaction, got %v", rs.Current)
	}
}
