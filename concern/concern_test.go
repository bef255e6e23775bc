package concern

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/mongoerr"
)

func TestCheckWriteConcern(t *testing.T) {
	for _, c := range []struct {
		wc      bson.D
		wcError mongoerr.Code // 0: met
		err     mongoerr.Code // 0: well formed
	}{
		{wc: bson.D{{Key: "w", Value: 1}}},
		{wc: bson.D{{Key: "w", Value: 0}}},
		{wc: bson.D{{Key: "w", Value: "majority"}, {Key: "j", Value: true}, {Key: "wtimeout", Value: 100}}},
		{wc: bson.D{{Key: "j", Value: false}}},
		{wc: bson.D{{Key: "w", Value: 2}}, wcError: mongoerr.UnsatisfiableWriteConcern},
		{wc: bson.D{{Key: "w", Value: int64(50)}}, wcError: mongoerr.UnsatisfiableWriteConcern},
		{wc: bson.D{{Key: "w", Value: "dc1"}}, wcError: mongoerr.UnknownReplWriteConcern},
		{wc: bson.D{{Key: "w", Value: -1}}, err: mongoerr.FailedToParse},
		{wc: bson.D{{Key: "w", Value: 51}}, err: mongoerr.FailedToParse},
		{wc: bson.D{{Key: "w", Value: true}}, err: mongoerr.FailedToParse},
		{wc: bson.D{{Key: "j", Value: "yes"}}, err: mongoerr.TypeMismatch},
		{wc: bson.D{{Key: "x", Value: 1}}, err: command.CodeUnknownField},
	} {
		wcErr, err := checkWriteConcern(rawValue(t, c.wc))
		if c.err != 0 {
			if e, ok := mongoerr.As(err); !ok || e.Code != c.err {
				t.Errorf("%v: got %v, want code %d", c.wc, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", c.wc, err)
			continue
		}
		var got mongoerr.Code
		if wcErr != nil {
			got = mongoerr.Code(wcErr.Lookup("code").Int32())
		}
		if got != c.wcError {
			t.Errorf("%v: writeConcernError %v, want code %d", c.wc, wcErr, c.wcError)
		}
	}
}

func TestCheckReadConcern(t *testing.T) {
	ts := bson.Timestamp{T: 7, I: 3}
	txn, _ := bson.Marshal(bson.D{{Key: "find", Value: "c"}, {Key: "autocommit", Value: false}})
	plain, _ := bson.Marshal(bson.D{{Key: "find", Value: "c"}})
	count, _ := bson.Marshal(bson.D{{Key: "count", Value: "c"}})
	for _, c := range []struct {
		rc    bson.D
		body  bson.Raw
		after bson.Timestamp
		err   mongoerr.Code
	}{
		{rc: bson.D{{Key: "level", Value: "local"}}},
		{rc: bson.D{{Key: "level", Value: "majority"}, {Key: "afterClusterTime", Value: ts}}, after: ts},
		{rc: bson.D{{Key: "afterClusterTime", Value: ts}}, after: ts},
		{rc: bson.D{{Key: "level", Value: "linearizable"}}},
		{rc: bson.D{{Key: "level", Value: "available"}}},
		{rc: bson.D{{Key: "level", Value: "snapshot"}}, body: txn},
		// MongoDB 5.0+ reads at a snapshot outside transactions on find,
		// aggregate and distinct only (jstests/replsets/
		// non_transaction_snapshot_reads.js; read_at_cluster_time's
		// checks of atClusterTime).
		{rc: bson.D{{Key: "level", Value: "snapshot"}}},
		{rc: bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: ts}}},
		{rc: bson.D{{Key: "level", Value: "snapshot"}}, body: count, err: mongoerr.InvalidOptions},
		{rc: bson.D{{Key: "level", Value: "local"}, {Key: "atClusterTime", Value: ts}}, err: mongoerr.InvalidOptions},
		{rc: bson.D{{Key: "atClusterTime", Value: ts}}, err: mongoerr.InvalidOptions},
		{rc: bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: bson.Timestamp{T: 0, I: 1}}}, err: mongoerr.InvalidOptions},
		{rc: bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: ts}, {Key: "afterClusterTime", Value: ts}}, err: mongoerr.InvalidOptions},
		{rc: bson.D{{Key: "level", Value: "linearizable"}, {Key: "afterClusterTime", Value: ts}}, err: mongoerr.InvalidOptions},
		{rc: bson.D{{Key: "afterClusterTime", Value: bson.Timestamp{}}}, err: mongoerr.InvalidOptions},
		{rc: bson.D{{Key: "afterClusterTime", Value: 5}}, err: mongoerr.TypeMismatch},
		{rc: bson.D{{Key: "level", Value: "strong"}}, err: mongoerr.BadValue},
		{rc: bson.D{{Key: "level", Value: 1}}, err: mongoerr.TypeMismatch},
		{rc: bson.D{{Key: "x", Value: 1}}, err: command.CodeUnknownField},
	} {
		body := c.body
		if body == nil {
			body = plain
		}
		after, err := checkReadConcern(body, rawValue(t, c.rc))
		if c.err != 0 {
			if e, ok := mongoerr.As(err); !ok || e.Code != c.err {
				t.Errorf("%v: got %v, want code %d", c.rc, err, c.err)
			}
			continue
		}
		if err != nil || after != c.after {
			t.Errorf("%v: afterClusterTime %v, %v; want %v", c.rc, after, err, c.after)
		}
	}
}

// rawValue is v as a BSON value, the way a command's field holds it.
func rawValue(t *testing.T, v any) bson.RawValue {
	t.Helper()
	doc, err := bson.Marshal(bson.D{{Key: "v", Value: v}})
	if err != nil {
		t.Fatal(err)
	}
	return bson.Raw(doc).Lookup("v")
}
