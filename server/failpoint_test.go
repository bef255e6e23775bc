package server

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/mongoerr"
)

func mustRaw(t *testing.T, d bson.D) bson.Raw {
	t.Helper()
	raw, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// The modes MongoDB's fail points take, and its refusals.
func TestParseFailPointMode(t *testing.T) {
	for _, c := range []struct {
		mode any
		want int
		n    int64
		code mongoerr.Code
	}{
		{"off", fpOff, 0, 0},
		{"alwaysOn", fpAlwaysOn, 0, 0},
		{bson.D{{Key: "times", Value: 3}}, fpTimes, 3, 0},
		{bson.D{{Key: "times", Value: 0}}, fpOff, 0, 0},
		{bson.D{{Key: "skip", Value: int64(2)}}, fpSkip, 2, 0},
		{bson.D{{Key: "times", Value: -1}}, 0, 0, mongoerr.BadValue},
		{bson.D{{Key: "times", Value: int64(1) << 40}}, 0, 0, mongoerr.BadValue},
		{bson.D{{Key: "times", Value: "x"}}, 0, 0, mongoerr.TypeMismatch},
		{"sometimes", 0, 0, mongoerr.BadValue},
		{1, 0, 0, mongoerr.TypeMismatch},
		{nil, 0, 0, mongoerr.IllegalOperation},
	} {
		d := bson.D{{Key: "configureFailPoint", Value: "failCommand"}}
		if c.mode != nil {
			d = append(d, bson.E{Key: "mode", Value: c.mode})
		}
		mode, n, err := parseFailPointMode(mustRaw(t, d).Lookup("mode"))
		if c.code != 0 {
			if mongoerr.CodeOf(err) != c.code {
				t.Errorf("%v: %v, want code %d", c.mode, err, c.code)
			}
			continue
		}
		if err != nil || mode != c.want || n != c.n {
			t.Errorf("%v: mode %d n %d err %v, want %d %d", c.mode, mode, n, err, c.want, c.n)
		}
	}
}

// RetryableWriteError goes on retryable codes of write commands with a
// txnNumber outside transactions, and a fail point's labels replace it.
func TestErrorLabels(t *testing.T) {
	s := &Server{}
	s.commands = map[string]*commandDef{}
	insert := &commandDef{name: "insert"}
	find := &commandDef{name: "find"}
	req := func(d bson.D) *Request { return &Request{Request: command.Request{Body: mustRaw(t, d)}} }
	withTxn := bson.D{{Key: "insert", Value: "c"}, {Key: "txnNumber", Value: int64(1)}}
	if l := s.errorLabels(insert, req(withTxn), 91); len(l) != 1 || l[0] != labelRetryableWriteError {
		t.Errorf("retryable write, code 91: %v", l)
	}
	if l := s.errorLabels(insert, req(withTxn), 11000); l != nil {
		t.Errorf("code 11000: %v", l)
	}
	if l := s.errorLabels(insert, req(bson.D{{Key: "insert", Value: "c"}}), 91); l != nil {
		t.Errorf("without txnNumber: %v", l)
	}
	if l := s.errorLabels(find, req(bson.D{{Key: "find", Value: "c"}, {Key: "txnNumber", Value: int64(1)}}), 91); l != nil {
		t.Errorf("find: %v", l)
	}
	inTxn := append(withTxn, bson.E{Key: "autocommit", Value: false})
	if l := s.errorLabels(insert, req(inTxn), 91); l != nil {
		t.Errorf("in a transaction: %v", l)
	}
	r := req(withTxn)
	r.failed = &failCommandData{hasLabels: true, labels: []string{"X"}}
	if l := s.errorLabels(insert, r, 91); len(l) != 1 || l[0] != "X" {
		t.Errorf("fail point labels: %v", l)
	}
	e := s.labelError(insert, req(withTxn), mongoerr.New(91, "shutting down"))
	reply := bson.Raw(command.AppendError(nil, e))
	if arr, ok := reply.Lookup("errorLabels").ArrayOK(); !ok || arr.Index(0).StringValue() != labelRetryableWriteError {
		t.Errorf("error reply %v", reply)
	}
}
