package oplog

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/zap"
)

// memBatch and memStore keep entries in a map, as the engine's store does.
type memStore struct {
	entries map[uint64][]byte
	images  map[uint64][]byte // pre-images, by their entries' timestamps
}

func (m *memStore) Set(k, v []byte) error {
	if len(k) > 0 && k[0] == PreImagePrefix {
		if m.images == nil {
			m.images = map[uint64][]byte{}
		}
		m.images[binary.BigEndian.Uint64(k[1:])] = append([]byte(nil), v...)
		return nil
	}
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

func (m *memStore) imageSize(k uint64) int64 {
	if v, ok := m.images[k]; ok {
		return int64(len(AppendPreImageKey(nil, FromUint64(k))) + len(v))
	}
	return 0
}

func (m *memStore) Scan(from Timestamp, fn func(Timestamp, int64) bool) error {
	for _, k := range m.keys() {
		if k < from.Uint64() {
			continue
		}
		if !fn(FromUint64(k), int64(KeyLen+len(m.entries[k]))+m.imageSize(k)) {
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
	_, err := m.DeletePreImagesBefore(ts)
	return err
}

func (m *memStore) DeletePreImagesBefore(ts Timestamp) (int64, error) {
	var n int64
	for k := range m.images {
		if k < ts.Uint64() {
			n += m.imageSize(k)
			delete(m.images, k)
		}
	}
	return n, nil
}

// TestPreImagesCountTowardSize: a small update of a large document writes
// a small entry and a large pre-image; the size bound counts both, so the
// pre-images cannot outgrow it, and expiring pre-images gives their size
// back.
func TestPreImagesCountTowardSize(t *testing.T) {
	now := time.Unix(100, 0)
	s := &memStore{entries: map[uint64][]byte{}}
	const bound = 64 << 10
	l := New(Options{Now: func() time.Time { return now }, MaxBytes: bound}, Timestamp{}, 0)
	image := doc(t, bson.D{{Key: "_id", Value: 1}, {Key: "big", Value: strings.Repeat("x", 16<<10)}})
	for i := range 100 {
		e := insertEntry(t, i)
		e.PreImage = image
		r, _ := l.Append(s, []Entry{e})
		r.Finish(true)
		if _, err := l.Trim(s); err != nil {
			t.Fatal(err)
		}
	}
	var stored int64
	if err := s.Scan(Timestamp{}, func(_ Timestamp, n int64) bool { stored += n; return true }); err != nil {
		t.Fatal(err)
	}
	if stored > bound || stored != l.Size() {
		t.Fatalf("stored %d bytes (log counts %d), bound %d", stored, l.Size(), bound)
	}
	if len(s.images) == 0 || len(s.images) > bound/(16<<10) {
		t.Fatalf("%d pre-images kept under a %d-byte bound", len(s.images), bound)
	}
	if err := l.ExpirePreImages(s, l.Last().Next()); err != nil {
		t.Fatal(err)
	}
	var entries int64
	for k := range s.entries {
		entries += int64(KeyLen + len(s.entries[k]))
	}
	if len(s.images) != 0 || l.Size() != entries {
		t.Fatalf("after expiry: %d pre-images, size %d, want %d", len(s.images), l.Size(), entries)
	}
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
	// Readers start at the oldest entry kept, not behind the deleted ones.
	if l.Floor() != last {
		t.Fatalf("floor %v after the trim, want the entry kept, %v", l.Floor(), last)
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
	D := func(e ...bson.E) bson.D { return bson.D(e) }
	E := func(k string, v any) bson.E { return bson.E{Key: k, Value: v} }
	A := func(v ...any) bson.A { return bson.A(v) }
	for _, c := range []struct {
		name     string
		old, new bson.D
		want     any // the diff, or the whole new document
	}{
		{"top level", D(E("_id", 1), E("a", 1), E("gone", true)), D(E("_id", 1), E("a", int64(1)), E("new", "x")),
			D(E("d", D(E("gone", false))), E("u", D(E("a", int64(1)))), E("i", D(E("new", "x"))))},
		{"nested field", D(E("_id", 1), E("a", D(E("b", 1), E("c", 2)))), D(E("_id", 1), E("a", D(E("b", 5), E("c", 2)))),
			D(E("sa", D(E("u", D(E("b", 5))))))},
		{"nested unset and add", D(E("_id", 1), E("a", D(E("b", 1), E("c", 2)))), D(E("_id", 1), E("a", D(E("c", 2), E("z", 0)))),
			D(E("sa", D(E("d", D(E("b", false))), E("i", D(E("z", 0))))))},
		{"push", D(E("_id", 1), E("arr", A(1, 2))), D(E("_id", 1), E("arr", A(1, 2, 3))),
			D(E("sarr", D(E("a", true), E("u2", 3))))},
		{"pop truncates", D(E("_id", 1), E("arr", A(1, 2, 3))), D(E("_id", 1), E("arr", A(1))),
			D(E("sarr", D(E("a", true), E("l", int32(1)))))},
		{"array element field", D(E("_id", 1), E("arr", A(D(E("x", 1)), D(E("x", 2))))), D(E("_id", 1), E("arr", A(D(E("x", 1)), D(E("x", 3))))),
			D(E("sarr", D(E("a", true), E("s1", D(E("u", D(E("x", 3))))))))},
		{"type change", D(E("_id", 1), E("a", D(E("b", 1)))), D(E("_id", 1), E("a", A(1))),
			D(E("u", D(E("a", A(1)))))},
		{"reordered fields replace", D(E("_id", 1), E("a", 1), E("b", 2)), D(E("_id", 1), E("b", 2), E("a", 1)), nil},
		{"new field before a kept one replaces", D(E("_id", 1), E("b", 2)), D(E("_id", 1), E("a", 1), E("b", 2)), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			old, nw := doc(t, c.old), doc(t, c.new)
			got := UpdateDiff(old, nw)
			want := nw
			if c.want != nil {
				want = doc(t, D(E("$v", int32(2)), E("diff", c.want)))
			}
			if string(got) != string(want) {
				t.Fatalf("o = %s, want %s", bson.Raw(got), bson.Raw(want))
			}
			applied, err := ApplyUpdate(old, got)
			if err != nil || string(applied) != string(nw) {
				t.Fatalf("applied: %s, %v; want %s", bson.Raw(applied), err, bson.Raw(nw))
			}
		})
	}
}

// signalStore tells the test when the trimmer has deleted.
type signalStore struct {
	*memStore
	deleted chan Timestamp
}

func (s signalStore) DeleteBefore(ts Timestamp) error {
	err := s.memStore.DeleteBefore(ts)
	s.deleted <- ts
	return err
}

func TestTrimmerRunsWhenOverBound(t *testing.T) {
	now := time.Unix(100, 0)
	s := signalStore{&memStore{entries: map[uint64][]byte{}}, make(chan Timestamp, 16)}
	// Two entries stored by an unbounded log; reopened with a bound they
	// are over, the trimmer starts at once.
	first := New(Options{Now: func() time.Time { return now }}, Timestamp{}, 0)
	r0, _ := first.Append(s, []Entry{insertEntry(t, 0), insertEntry(t, 1)})
	r0.Finish(true)
	r1 := r0.Last
	l := New(Options{Now: func() time.Time { return now }, MaxBytes: 1}, r1, first.Size())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.RunTrimmer(ctx, s, zap.NewNop())
	}()
	if ts := <-s.deleted; ts != r1 {
		t.Fatalf("trimmed before %v, want %v", ts, r1)
	}
	// A commit that passes the bound wakes it again.
	r, _ := l.Append(s, []Entry{insertEntry(t, 5)})
	r.Finish(true)
	if ts := <-s.deleted; ts != r.Last {
		t.Fatalf("trimmed before %v, want %v", ts, r.Last)
	}
	cancel()
	<-done
	if ks := s.keys(); len(ks) != 1 || ks[0] != r.Last.Uint64() {
		t.Fatalf("kept %v", ks)
	}
}

func TestUpdateDescription(t *testing.T) {
	old := doc(t, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: bson.D{{Key: "b", Value: 1}, {Key: "c", Value: 1}}}, {Key: "arr", Value: bson.A{1, bson.D{{Key: "x", Value: 1}}, 3}}, {Key: "gone", Value: 1}})
	nw := doc(t, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: bson.D{{Key: "b", Value: 2}}}, {Key: "arr", Value: bson.A{1, bson.D{{Key: "x", Value: 2}}}}, {Key: "n", Value: "new"}})
	desc, ok, err := UpdateDescription(UpdateDiff(old, nw))
	if err != nil || !ok {
		t.Fatalf("%v, %v", ok, err)
	}
	want := doc(t, bson.D{{Key: "n", Value: "new"}, {Key: "a.b", Value: 2}, {Key: "arr.1.x", Value: 2}})
	if string(desc.Updated) != string(want) {
		t.Errorf("updatedFields %s, want %s", bson.Raw(desc.Updated), bson.Raw(want))
	}
	if fmt.Sprint(desc.Removed) != "[gone a.c]" {
		t.Errorf("removedFields %v", desc.Removed)
	}
	if fmt.Sprint(desc.Truncated) != "[{arr 2}]" {
		t.Errorf("truncatedArrays %v", desc.Truncated)
	}
	// Array indexes alone leave no path ambiguous.
	if string(desc.Disambiguated) != string(doc(t, bson.D{})) {
		t.Errorf("disambiguatedPaths %s, want {}", bson.Raw(desc.Disambiguated))
	}
	if _, ok, err := UpdateDescription(nw); ok || err != nil {
		t.Errorf("a replacement described as an update: %v, %v", ok, err)
	}
}

// TestDisambiguatedPaths: a numeric field name past the first part, or a
// field name with a dot, makes a path ambiguous from there on; its parts
// are listed with array indexes as ints.
func TestDisambiguatedPaths(t *testing.T) {
	old := doc(t, bson.D{{Key: "_id", Value: 1}, {Key: "m", Value: bson.D{{Key: "1", Value: bson.A{0, bson.D{{Key: "y", Value: 1}}}}}}, {Key: "0", Value: 1}, {Key: "d.t", Value: 1}, {Key: "arr", Value: bson.A{1, 2}}})
	nw := doc(t, bson.D{{Key: "_id", Value: 1}, {Key: "m", Value: bson.D{{Key: "1", Value: bson.A{0, bson.D{{Key: "y", Value: 2}}}}}}, {Key: "0", Value: 2}, {Key: "d.t", Value: 2}, {Key: "arr", Value: bson.A{1, 3}}})
	desc, ok, err := UpdateDescription(UpdateDiff(old, nw))
	if err != nil || !ok {
		t.Fatalf("%v, %v", ok, err)
	}
	want := doc(t, bson.D{
		{Key: "0", Value: 2}, // numeric, but first: unambiguous
		{Key: "d.t", Value: 2},
		{Key: "m.1.1.y", Value: 2},
		{Key: "arr.1", Value: 3},
	})
	wantDis := doc(t, bson.D{
		{Key: "d.t", Value: bson.A{"d.t"}},
		{Key: "m.1.1.y", Value: bson.A{"m", "1", int32(1), "y"}},
	})
	got := map[string]string{}
	for _, pair := range [][2][]byte{{desc.Updated, want}, {desc.Disambiguated, wantDis}} {
		gotEls, _ := bson.Raw(pair[0]).Elements()
		wantEls, _ := bson.Raw(pair[1]).Elements()
		if len(gotEls) != len(wantEls) {
			t.Fatalf("got %s, want %s", bson.Raw(pair[0]), bson.Raw(pair[1]))
		}
		for _, el := range gotEls {
			got[el.Key()] = el.Value().String()
		}
		for _, el := range wantEls {
			if got[el.Key()] != el.Value().String() {
				t.Errorf("%s: got %s, want %s (all: %s)", el.Key(), got[el.Key()], el.Value(), bson.Raw(pair[0]))
			}
		}
		clear(got)
	}
}

// countingStore counts the trimmer's deletions.
type countingStore struct {
	*memStore
	deletes int
}

func (s *countingStore) DeleteBefore(ts Timestamp) error {
	s.deletes++
	return s.memStore.DeleteBefore(ts)
}

// TestTrimFreesBelowBound: a full log is trimmed an eighth below its bound,
// so that the writes after a trim do not each trim again (each trim is a
// range deletion every later oplog read steps over: one per write made a
// full oplog cost inserts 90% of their rate, measured with lethe-load's
// oplog-full workload).
func TestTrimFreesBelowBound(t *testing.T) {
	now := time.Unix(100, 0)
	s := &countingStore{memStore: &memStore{entries: map[uint64][]byte{}}}
	const bound = 64 << 10
	l := New(Options{Now: func() time.Time { return now }, MaxBytes: bound}, Timestamp{}, 0)
	write := func() {
		r, _ := l.Append(s, []Entry{insertEntry(t, 1)})
		r.Finish(true)
		if _, err := l.Trim(s); err != nil {
			t.Fatal(err)
		}
	}
	var written int64
	for s.deletes == 0 {
		if written > 2*bound {
			t.Fatalf("no trim after %d bytes written under a bound of %d", written, bound)
		}
		before := l.Size()
		write()
		if s.deletes == 0 && l.Size() > bound {
			t.Fatalf("the log holds %d bytes, over its bound of %d, untrimmed", l.Size(), bound)
		}
		written += l.Size() - before
	}
	if s.deletes != 1 || l.Size() > bound-bound/trimSlack {
		t.Fatalf("after the first trim: %d deletions, size %d; want 1 and at most %d", s.deletes, l.Size(), bound-bound/trimSlack)
	}
	// Writes that fill the slack again trim nothing.
	entry := l.Size() / int64(len(s.entries))
	for range (bound/trimSlack)/entry - 2 {
		write()
	}
	if s.deletes != 1 {
		t.Fatalf("%d trims while the log refilled its slack, want none after the first", s.deletes-1)
	}
}
