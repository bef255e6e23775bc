package changestream

import (
	"bytes"
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/mongoerr"
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
	// pre holds the pre-images by entry.
	pre map[oplog.Timestamp]bson.Raw
	// systemClock makes Clock the system's, for waits on real time.
	systemClock bool
	// afterEntry, when set, runs after each entry a read hands over, as
	// writes that land while a read goes on.
	afterEntry func()
	// afterClock, when set, runs after each reading of the clock, as
	// time that passes while a read goes on.
	afterClock func()
	// find, when set, is the current document of db.coll with _id id,
	// for updateLookup.
	find func(db, coll string, id bsoncore.Value) bson.Raw
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
		if m.afterEntry != nil {
			m.afterEntry()
		}
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

func (m *memSource) FindByID(_ context.Context, db, coll string, id bsoncore.Value) (bson.Raw, error) {
	if m.find == nil {
		return nil, nil
	}
	return m.find(db, coll, id), nil
}

func (m *memSource) PreImage(ts oplog.Timestamp) (bson.Raw, error) { return m.pre[ts], nil }

func (m *memSource) Clock() (time.Time, <-chan struct{}) {
	if m.systemClock {
		return time.Now(), nil
	}
	now := m.now
	if m.afterClock != nil {
		m.afterClock()
	}
	return time.UnixMilli(now), nil
}

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
		{bson.D{{Key: "fullDocumentBeforeChange", Value: "sometimes"}}, "d", "c", mongoerr.BadValue},
		{bson.D{{Key: "fullDocumentBeforeChange", Value: true}}, "d", "c", mongoerr.TypeMismatch},
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

// TestImages: update, replace and delete events carry the stored
// pre-image, and an update's post-image is that pre-image with the update
// applied; without a stored pre-image whenAvailable gives null and
// required fails with NoMatchingDocument.
func TestImages(t *testing.T) {
	src := &memSource{pre: map[oplog.Timestamp]bson.Raw{}}
	v1 := doc(t, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}, {Key: "b", Value: "x"}})
	v2 := doc(t, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 2}, {Key: "b", Value: "x"}})
	v3 := doc(t, bson.D{{Key: "_id", Value: 1}, {Key: "c", Value: true}})
	key := doc(t, bson.D{{Key: "_id", Value: 1}})
	ui := make([]byte, 16)
	src.add(oplog.Entry{Op: oplog.Update, NS: "d.c", UI: ui, O: oplog.UpdateDiff(v1, v2), O2: key})
	src.add(oplog.Entry{Op: oplog.Update, NS: "d.c", UI: ui, O: v3, O2: key})
	src.add(oplog.Entry{Op: oplog.Delete, NS: "d.c", UI: ui, O: key})
	src.add(oplog.Entry{Op: oplog.Update, NS: "d.c", UI: ui, O: oplog.UpdateDiff(v1, v2), O2: key})
	src.pre[src.ts[0]], src.pre[src.ts[1]], src.pre[src.ts[2]] = v1, v2, v3
	start := bson.E{Key: "startAtOperationTime", Value: bson.Timestamp{T: 100, I: 1}}

	s, err := Open(spec(t, bson.D{start, {Key: "fullDocument", Value: "whenAvailable"}, {Key: "fullDocumentBeforeChange", Value: "whenAvailable"}}, "d", "c"), src)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := s.Next(context.Background(), 0, 1<<20, false)
	if err != nil || len(evs) != 4 {
		t.Fatalf("events %v, %v", evs, err)
	}
	want := []struct {
		op           string
		before, full bson.Raw // nil: null; full of a delete: absent
	}{
		{"update", v1, v2},
		{"replace", v2, v3},
		{"delete", v3, nil},
		{"update", nil, nil},
	}
	for i, w := range want {
		ev := evs[i]
		if op := ev.Lookup("operationType").StringValue(); op != w.op {
			t.Fatalf("event %d: %s, want %s", i, ev, w.op)
		}
		check := func(field string, want bson.Raw) {
			v, err := ev.LookupErr(field)
			switch {
			case err != nil:
				t.Errorf("event %d without %s: %s", i, field, ev)
			case want == nil && v.Type != bson.TypeNull:
				t.Errorf("event %d: %s is %s, want null", i, field, v)
			case want != nil && !bytes.Equal(v.Value, want):
				t.Errorf("event %d: %s is %s, want %s", i, field, v, want)
			}
		}
		check("fullDocumentBeforeChange", w.before)
		if w.op != "delete" {
			check("fullDocument", w.full)
		} else if _, err := ev.LookupErr("fullDocument"); err == nil {
			t.Errorf("delete event with fullDocument: %s", ev)
		}
	}

	for _, opt := range []string{"fullDocument", "fullDocumentBeforeChange"} {
		s, err := Open(spec(t, bson.D{start, {Key: opt, Value: "required"}}, "d", "c"), src)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := s.Next(context.Background(), 3, 1<<20, false)
		if err != nil || len(evs) != 3 {
			t.Fatalf("%s: required: events with images %v, %v", opt, evs, err)
		}
		if _, err := s.Next(context.Background(), 0, 1<<20, false); mongoerr.CodeOf(err) != mongoerr.NoMatchingDocument {
			t.Fatalf("%s: required without an image: %v", opt, err)
		}
	}
}

// TestExpireEventsFollowExpandedEvents: expire is an expanded event type,
// so a stream with showExpandedEvents gets expire events unless it says
// showExpireEvents: false (issue 17, item 23: the Node.js driver 6.x that
// mongoose 8 bundles passes showExpandedEvents but drops showExpireEvents).
func TestExpireEventsFollowExpandedEvents(t *testing.T) {
	for _, c := range []struct {
		opts bson.D
		want bool
	}{
		{bson.D{}, false},
		{bson.D{{Key: "showExpireEvents", Value: true}}, true},
		{bson.D{{Key: "showExpandedEvents", Value: true}}, true},
		{bson.D{{Key: "showExpandedEvents", Value: false}}, false},
		{bson.D{{Key: "showExpandedEvents", Value: true}, {Key: "showExpireEvents", Value: false}}, false},
		{bson.D{{Key: "showExpireEvents", Value: false}, {Key: "showExpandedEvents", Value: true}}, false},
	} {
		if got := spec(t, c.opts, "db", "c").ShowExpireEvents; got != c.want {
			t.Errorf("%v: ShowExpireEvents = %v, want %v", c.opts, got, c.want)
		}
	}
}
