package failpoint

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

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
