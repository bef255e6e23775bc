package oplog

import (
	"context"
	"sort"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// memBatch and memStore keep entries in a map, as the engine's store does.
type memStore struct{ entries map[uint64][]byte }

func (m *memStore) Set(k, v []byte) error {
	ts, err := KeyTS(k)
	if err != nil {
		return err
	}
	m.entries[ts.Uint64()] = append([]byte(nil), v...)
	return nil
}

func (m *memStore) keys() []uint64 {
	var ks []uint64
	for k := range m.entries {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	return ks
}

func (m *memStore) Scan(fn func(Timestamp, int64) bool) error {
	for _, k := range m.keys() {
		if !fn(FromUint64(k), int64(KeyLen+len(m.entries[k]))) {
			break
		}
	}
	return nil
}

func (m *memStore) DeleteBefore(ts Timestamp) error {
	for k := range m.entries {
		if k < ts.Uint64() {
			delete(m.entries, k)
		}
	}
	return nil
}

func doc(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := bson.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func insertEntry(t *testing.T, id int) Entry {
	return Entry{Op: Insert, NS: "db.c", O: doc(t, bson.D{{Key: "_id", Value: id}})}
}

func TestTimestampsIncrease(t *testing.T) {
	now := time.Unix(1000, 0)
	l := New(Options{Now: func() time.Time { return now }}, Timestamp{T: 2000, I: 7}, 0)
	s := &memStore{entries: map[uint64][]byte{}}
	// The clock is behind the last timestamp: the increment goes on.
	r, err := l.Append(s, []Entry{insertEntry(t, 1), insertEntry(t, 2)})
	if err != nil {
		t.Fatal(err)
	}
	if r.First != (Timestamp{T: 2000, I: 8}) || r.Last != (Timestamp{T: 2000, I: 9}) {
		t.Fatalf("reserved %v..%v", r.First, r.Last)
	}
	r.Finish(true)
	// The clock passes it: a new second starts at increment 1.
	now = time.Unix(3000, 0)
	r, _ = l.Append(s, []Entry{insertEntry(t, 3)})
	if r.First != (Timestamp{T: 3000, I: 1}) {
		t.Fatalf("reserved %v", r.First)
	}
	r.Finish(true)
	raw := s.entries[r.First.Uint64()]
	f, err := Parse(raw)
	if err != nil || f.TS != r.First || f.Op != Insert || f.NS != "db.c" {
		t.Fatalf("parsed %+v, %v", f, err)
	}
	var e struct {
		T    int64     `bson:"t"`
		V    int64     `bson:"v"`
		Wall time.Time `bson:"wall"`
	}
	if err := bson.Unmarshal(raw, &e); err != nil || e.T != 1 || e.V != 2 || !e.Wall.Equal(now) {
		t.Fatalf("entry %s: %+v, %v", bson.Raw(raw), e, err)
	}
}

func TestVisibilityWaitsForEarlierCommits(t *testing.T) {
	l := New(Options{Now: func() time.Time { return time.Unix(10, 0) }}, Timestamp{}, 0)
	s := &memStore{entries: map[uint64][]byte{}}
	a, _ := l.Append(s, []Entry{insertEntry(t, 1)})
	b, _ := l.Append(s, []Entry{insertEntry(t, 2)})
	c, _ := l.Append(s, []Entry{insertEntry(t, 3)})
	_, ch := l.Watch()
	// b commits before a: nothing is visible until a finishes.
	b.Finish(true)
	if v := l.Visible(); !v.IsZero() {
		t.Fatalf("visible %v before the first commit finished", v)
	}
	select {
	case <-ch:
		t.Fatal("woken before the visible point moved")
	default:
	}
	// a failed: a hole, and b becomes visible.
	a.Finish(false)
	if v := l.Visible(); v != b.Last {
		t.Fatalf("visible %v, want %v", v, b.Last)
	}
	<-ch
	done := make(chan Timestamp)
	go func() {
		v, _ := l.Wait(context.Background(), b.Last)
		done <- v
	}()
	c.Finish(true)
	if v := <-done; v != c.Last {
		t.Fatalf("wait returned %v, want %v", v, c.Last)
	}
	if got := l.Size(); got != b.bytes+c.bytes {
		t.Fatalf("size %d, want %d", got, b.bytes+c.bytes)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Wait(ctx, c.Last); err == nil {
		t.Fatal("wait past the last entry returned without a write")
	}
}

func TestTrimKeepsNewest(t *testing.T) {
	now := time.Unix(100, 0)
	s := &memStore{entries: map[uint64][]byte{}}
	l := New(Options{Now: func() time.Time { return now }, MaxBytes: 1}, Timestamp{}, 0)
	for i := range 10 {
		r, _ := l.Append(s, []Entry{insertEntry(t, i)})
		r.Finish(true)
	}
	last := l.Last()
	if _, err := l.Trim(s); err != nil {
		t.Fatal(err)
	}
	if ks := s.keys(); len(ks) != 1 || ks[0] != last.Uint64() {
		t.Fatalf("kept %v, want only %v", ks, last)
	}
	if l.Size() != int64(KeyLen+len(s.entries[last.Uint64()])) {
		t.Fatalf("size %d after trim", l.Size())
	}
}

func TestTrimByAge(t *testing.T) {
	now := time.Unix(100, 0)
	s := &memStore{entries: map[uint64][]byte{}}
	l := New(Options{Now: func() time.Time { return now }, MaxAge: time.Minute}, Timestamp{}, 0)
	for i := range 3 {
		r, _ := l.Append(s, []Entry{insertEntry(t, i)})
		r.Finish(true)
	}
	now = now.Add(2 * time.Minute)
	r, _ := l.Append(s, []Entry{insertEntry(t, 9)})
	r.Finish(true)
	if n, err := l.Trim(s); err != nil || n != 3 {
		t.Fatalf("trimmed %d, %v", n, err)
	}
	if ks := s.keys(); len(ks) != 1 || ks[0] != r.First.Uint64() {
		t.Fatalf("kept %v", ks)
	}
}

func TestUpdateDiff(t *testing.T) {
	old := doc(t, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}, {Key: "b", Value: bson.D{{Key: "c", Value: 1}}}, {Key: "gone", Value: true}})
	nw := doc(t, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: int64(1)}, {Key: "b", Value: bson.D{{Key: "c", Value: 1}}}, {Key: "new", Value: "x"}})
	got := bson.Raw(UpdateDiff(old, nw))
	want := doc(t, bson.D{{Key: "$v", Value: int32(2)}, {Key: "diff", Value: bson.D{
		{Key: "d", Value: bson.D{{Key: "gone", Value: false}}},
		{Key: "u", Value: bson.D{{Key: "a", Value: int64(1)}}},
		{Key: "i", Value: bson.D{{Key: "new", Value: "x"}}},
	}}})
	if string(got) != string(want) {
		t.Fatalf("diff %s, want %s", got, bson.Raw(want))
	}
}
