package shutdown

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/mongoerr"
)

func request(t *testing.T, doc bson.D) *command.Request {
	t.Helper()
	body, err := bson.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &command.Request{DB: "admin", Name: doc[0].Key, Body: body}
}

func code(err error) int32 {
	var me *mongoerr.Error
	if errors.As(err, &me) {
		return int32(me.Code)
	}
	return 0
}

// Without access control only a client on this machine stops the server,
// and the request is seen once however many clients ask.
func TestShutdownNeedsLoopbackWithoutAuth(t *testing.T) {
	s := New(Config{})
	ctx := context.Background()
	if _, err := s.Shutdown(ctx, request(t, bson.D{{Key: "shutdown", Value: 1}}), Caller{Remote: "10.0.0.1:5000"}); code(err) != int32(mongoerr.Unauthorized) {
		t.Fatalf("remote shutdown: %v", err)
	}
	select {
	case <-s.Requested():
		t.Fatal("requested after a refused shutdown")
	default:
	}
	for range 2 {
		if _, err := s.Shutdown(ctx, request(t, bson.D{{Key: "shutdown", Value: 1}, {Key: "force", Value: true}}), Caller{Remote: "127.0.0.1:5000", Loopback: true}); err != nil {
			t.Fatal(err)
		}
	}
	<-s.Requested()
	if _, err := New(Config{Auth: true}).Shutdown(ctx, request(t, bson.D{{Key: "shutdown", Value: 1}}), Caller{Remote: "10.0.0.1:5000"}); err != nil {
		t.Fatalf("shutdown with auth: %v", err)
	}
	if _, err := s.Shutdown(ctx, request(t, bson.D{{Key: "shutdown", Value: 1}, {Key: "bogus", Value: 1}}), Caller{Loopback: true}); err == nil {
		t.Fatal("unknown field accepted")
	}
}

func TestFsyncRefusesLock(t *testing.T) {
	s := New(Config{})
	h := s.Commands()[0].Handle
	if _, err := h(context.Background(), request(t, bson.D{{Key: "fsync", Value: 1}})); err != nil {
		t.Fatal(err)
	}
	if _, err := h(context.Background(), request(t, bson.D{{Key: "fsync", Value: 1}, {Key: "lock", Value: true}})); code(err) != int32(mongoerr.CommandNotSupported) {
		t.Fatalf("fsync lock: %v", err)
	}
}
