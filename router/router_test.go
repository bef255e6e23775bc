package router

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// fixedClock is a server's own cluster time standing at now; Await fails
// for a time it has not reached, as a server whose oplog never gets there
// would hang.
type fixedClock struct{ now bson.Timestamp }

var errNotReached = errors.New("not reached")

func (c *fixedClock) Now() bson.Timestamp { return c.now }
func (c *fixedClock) Tick() bson.Timestamp {
	c.now.I++
	return c.now
}
func (c *fixedClock) Await(_ context.Context, ts bson.Timestamp) error {
	if c.now.Before(ts) {
		return errNotReached
	}
	return nil
}

func TestClockTakesOtherServersTimes(t *testing.T) {
	own := &fixedClock{now: bson.Timestamp{T: 100, I: 5}}
	wall := time.Unix(100, 0)
	c := NewClock(own, func() time.Time { return wall })
	// A time of this server's waits as the server's own clock does.
	if err := c.Await(context.Background(), bson.Timestamp{T: 100, I: 3}); err != nil {
		t.Fatal(err)
	}
	if got := c.Now(); got != own.now {
		t.Fatalf("Now %v, want the server's own %v", got, own.now)
	}
	// A later time came from another server: no wait, and from then on
	// the clock is at least there.
	other := bson.Timestamp{T: 100, I: 9}
	if err := c.Await(context.Background(), other); err != nil {
		t.Fatalf("await another server's time: %v", err)
	}
	if got := c.Now(); got != other {
		t.Errorf("Now %v after another server's %v", got, other)
	}
	if got := c.Tick(); got != other {
		t.Errorf("Tick %v, want no earlier than %v", got, other)
	}
	// A time more than a year ahead of the wall clock is refused, and
	// moves nothing.
	far := bson.Timestamp{T: uint32(wall.Add(MaxDrift).Unix()) + 1}
	if err := c.Await(context.Background(), far); err == nil || !strings.Contains(err.Error(), "too far") {
		t.Errorf("await %v: %v", far, err)
	}
	if got := c.Now(); got != other {
		t.Errorf("Now %v after a refused time", got)
	}
	// The server's own time passes it again.
	own.now = bson.Timestamp{T: 101, I: 1}
	if got := c.Now(); got != own.now {
		t.Errorf("Now %v, want the server's own %v", got, own.now)
	}
}

func TestHelloAndHosts(t *testing.T) {
	reads := 0
	roster := []string{"b:2", "a:1", "", "b:2"}
	r := New(Config{Roster: func(context.Context) ([]string, error) {
		reads++
		if roster == nil {
			return nil, errors.New("store down")
		}
		return roster, nil
	}})
	idx, dst := bsoncore.AppendDocumentStart(nil)
	dst = r.AppendHello(dst, true)
	dst = r.AppendHosts(context.Background(), dst)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	doc := bson.Raw(dst)
	elems, _ := doc.Elements()
	if len(elems) != 3 || elems[0].Key() != "ismaster" || elems[1].Key() != "msg" || elems[2].Key() != "hosts" {
		t.Fatalf("hello %s", doc)
	}
	if msg := doc.Lookup("msg").StringValue(); msg != "isdbgrid" {
		t.Errorf("msg %q", msg)
	}
	var hosts []string
	vals, _ := doc.Lookup("hosts").Array().Values()
	for _, v := range vals {
		hosts = append(hosts, v.StringValue())
	}
	if !slices.Equal(hosts, []string{"a:1", "b:2"}) {
		t.Errorf("hosts %v", hosts)
	}
	// Within RosterAge the roster is not read again; after, a failed read
	// leaves the last roster.
	r.Hosts(context.Background())
	if reads != 1 {
		t.Errorf("%d roster reads for two hellos", reads)
	}
	roster = nil
	r.mu.Lock()
	r.read = time.Now().Add(-2 * RosterAge)
	r.mu.Unlock()
	for i := 0; i < 2; i++ {
		if got := r.Hosts(context.Background()); !slices.Equal(got, []string{"a:1", "b:2"}) || reads != 2 {
			t.Errorf("after a failed read: %v (%d reads)", got, reads)
		}
	}
}
