package changestream

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/mongoerr"
	"github.com/lethedb/lethe/oplog"
)

// memSource is an oplog in memory.
type memSource struct {
	// hole moves the visible point this far past the last entry, as a
	// failed write's reservation does.
	hole    uint32
	reads   int
	ents    []bson.Raw
	ts      []oplog.Timestamp
	changed chan struct{}
	// now and exp are the clock, in ms, and the documents' expiry.
	now int64
	exp []Expired
}

func (m *memSource) add(e oplog.Entry) {
	ts := oplog.Timestamp{T: 100, I: uint32(len(m.ents) + 1)}
	m.ents = append(m.ents, e.Append(nil, ts, time.Unix(100, 0)))
	m.ts = append(m.ts, ts)
}

func (m *memSource) ReadOplog(ctx context.Context, after oplog.Timestamp, fn func(oplog.Timestamp, bson.Raw) (bool, error)) (oplog.Timestamp, error) {
	m.reads++
	for i, ts := range m.ts {
		if !after.Less(ts) {
			continue
		}
		more, err := fn(ts, m.ents[i])
		if err != nil || !more {
			return ts, err
		}
		after = ts
	}
	return after, nil
}

func (m *memSource) OldestOplog() (oplog.Timestamp, error) {
	if len(m.ts) == 0 {
		return oplog.Timestamp{}, nil
	}
	return m.ts[0], nil
}

func (m *memSource) Watch() (oplog.Timestamp, <-chan struct{}) {
	if m.changed == nil {
		m.changed = make(chan struct{})
	}
	if len(m.ts) == 0 {
		return oplog.Timestamp{}, m.changed
	}
	last := m.ts[len(m.ts)-1]
	last.I += m.hole
	return last, m.changed
}

func (m *memSource) FindByID(string, string, bsoncore.Value) (bson.Raw, error) { return nil, nil }

func (m *memSource) Clock() (time.Time, <-chan struct{}) { return time.UnixMilli(m.now), nil }

func (m *memSource) Expiring(from, to int64, watch func(db, coll string) bool) ([]Expired, error) {
	var out []Expired
	for _, x := range m.exp { // kept in order
		if x.At > from && x.At <= to && watch(x.DB, x.Coll) {
			out = append(out, x)
		}
	}
	return out, nil
}

func doc(t *testing.T, d bson.D) []byte {
	t.Helper()
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func spec(t *testing.T, opts bson.D, db, coll string) *Spec {
	t.Helper()
	raw := doc(t, bson.D{{Key: "s", Value: opts}})
	sp, err := ParseSpec(bson.Raw(raw).Lookup("s"), db, coll)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

func TestTokenRoundTrip(t *testing.T) {
	tok := Token{TS: oplog.Timestamp{T: 7, I: 3}, Index: 1, Flags: flagInvalidate, UUID: [16]byte{1, 2}}
	raw := doc(t, bson.D{{Key: "t", Value: tok.Doc()}})
	got, err := ParseToken(bson.Raw(raw).Lookup("t"))
	if err != nil || !got.sameEvent(tok) {
		t.Fatalf("round trip: %+v %v, want %+v", got, err, tok)
	}
	for _, bad := range []bson.D{{{Key: "_data", Value: "zz"}}, {{Key: "_data", Value: 1}}, {}} {
		raw := doc(t, bson.D{{Key: "t", Value: bad}})
		if _, err := ParseToken(bson.Raw(raw).Lookup("t")); mongoerr.CodeOf(err) != mongoerr.InvalidResumeToken {
			t.Errorf("token %v: %v", bad, err)
		}
	}
}

// TestResumeSkipsSeenEvent: resuming from an event's token starts right
// after it, and a token the stream does not produce is refused.
func TestResumeSkipsSeenEvent(t *testing.T) {
	src := &memSource{}
	for i := 1; i <= 3; i++ {
		src.add(oplog.Entry{Op: oplog.Insert, NS: "d.c", UI: make([]byte, 16), O: doc(t, bson.D{{Key: "_id", Value: i}})})
	}
	sp := spec(t, bson.D{{Key: "startAtOperationTime", Value: bson.Timestamp{T: 100, I: 1}}}, "d", "c")
	s, err := Open(sp, src)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := s.Next(context.Background(), 1, 1<<20, false)
	if err != nil || len(evs) != 1 {
		t.Fatalf("first batch %v %v", evs, err)
	}
	tok, _ := ParseToken(evs[0].Lookup("_id"))
	resumed, err := Open(spec(t, bson.D{{Key: "resumeAfter", Value: tok.Doc()}}, "d", "c"), src)
	if err != nil {
		t.Fatal(err)
	}
	evs, err = resumed.Next(context.Background(), 0, 1<<20, false)
	if err != nil || len(evs) != 2 || evs[0].Lookup("documentKey", "_id").Int32() != 2 {
		t.Fatalf("resumed batch %v %v", evs, err)
	}
	other, err := Open(spec(t, bson.D{{Key: "resumeAfter", Value: tok.Doc()}}, "d", "other"), src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Next(context.Background(), 0, 1<<20, false); mongoerr.CodeOf(err) != mongoerr.ChangeStreamFatalError {
		t.Fatalf("other collection's token: %v", err)
	}
}

func TestSpecErrors(t *testing.T) {
	tok := Token{TS: oplog.Timestamp{T: 1}}.Doc()
	cases := []struct {
		opts     bson.D
		db, coll string
		code     mongoerr.Code
	}{
		{bson.D{{Key: "nope", Value: 1}}, "d", "c", mongoerr.Location40415},
		{bson.D{{Key: "fullDocument", Value: "sometimes"}}, "d", "c", mongoerr.BadValue},
		{bson.D{{Key: "fullDocument", Value: 1}}, "d", "c", mongoerr.TypeMismatch},
		{bson.D{{Key: "resumeAfter", Value: tok}, {Key: "startAfter", Value: tok}}, "d", "c", mongoerr.Location40674},
		{bson.D{{Key: "allChangesForCluster", Value: true}}, "d", "", mongoerr.InvalidNamespace},
		{bson.D{}, "admin", "", mongoerr.InvalidNamespace},
		{bson.D{}, "local", "c", mongoerr.InvalidNamespace},
	}
	for _, c := range cases {
		raw := doc(t, bson.D{{Key: "s", Value: c.opts}})
		if _, err := ParseSpec(bson.Raw(raw).Lookup("s"), c.db, c.coll); mongoerr.CodeOf(err) != c.code {
			t.Errorf("%v on %s.%s: %v, want code %d", c.opts, c.db, c.coll, err, c.code)
		}
	}
}

// TestHoleDoesNotSpin: a visible point past the last entry (a failed
// write's hole) is reached, so an awaiting stream sleeps instead of
// reading again and again.
func TestHoleDoesNotSpin(t *testing.T) {
	src := &memSource{hole: 2}
	src.add(oplog.Entry{Op: oplog.Insert, NS: "d.c", UI: make([]byte, 16), O: doc(t, bson.D{{Key: "_id", Value: 1}})})
	s, err := Open(spec(t, bson.D{{Key: "startAtOperationTime", Value: bson.Timestamp{T: 100, I: 1}}}, "d", "c"), src)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if evs, err := s.Next(ctx, 0, 1<<20, false); err != nil || len(evs) != 1 {
		t.Fatalf("first batch %v %v", evs, err)
	}
	if evs, err := s.Next(ctx, 0, 1<<20, true); err != nil || len(evs) != 0 {
		t.Fatalf("awaited batch %v %v", evs, err)
	}
	if src.reads > 2 {
		t.Fatalf("%d oplog reads while waiting on a hole", src.reads)
	}
	tok, _ := ParseToken(bson.Raw(doc(t, bson.D{{Key: "t", Value: s.PostBatchResumeToken()}})).Lookup("t"))
	if !tok.HighWater() || tok.TS != (oplog.Timestamp{T: 100, I: 3}) {
		t.Fatalf("postBatchResumeToken %+v, want the visible point", tok)
	}
}
