package engine

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/oplogstore"
	"github.com/lethedb/lethe/engine/update"
	"github.com/lethedb/lethe/oplog"
)

// preImagesAt returns the pre-image of each update and delete entry after
// ts, in order.
func preImagesAt(t *testing.T, e *Engine, after oplog.Timestamp) []bson.Raw {
	t.Helper()
	var out []bson.Raw
	_, err := e.ReadOplog(context.Background(), after, func(ts oplog.Timestamp, raw bson.Raw) (bool, error) {
		if op := raw.Lookup("op").StringValue(); op == "u" || op == "d" {
			pre, err := e.PreImage(context.Background(), ts)
			out = append(out, pre)
			return err == nil, err
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPreImagesTTLPurgeAndOff: a TTL purge keeps its pre-image, as MongoDB
// does, and once collMod turns the option off writes keep none.
func TestPreImagesTTLPurgeAndOff(t *testing.T) {
	clock := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := openOplogEngine(t, t.TempDir(), clock, Options{})
	defer e.Close()
	opts := mustRaw(t, bson.D{{Key: PreImagesOption, Value: bson.D{{Key: "enabled", Value: true}}}})
	if err := e.CreateCollection(context.Background(), "db", "c", CreateOptions{Raw: opts}); err != nil {
		t.Fatal(err)
	}
	spec := mustRaw(t, bson.D{{Key: "key", Value: bson.D{{Key: "_ts", Value: 1}}}, {Key: "name", Value: "_ts_1"}, {Key: "expireAfterSeconds", Value: 5}})
	if _, err := e.CreateIndexes(context.Background(), "db", "c", []bson.Raw{spec}); err != nil {
		t.Fatal(err)
	}
	doc := mustRaw(t, bson.D{{Key: "_id", Value: 7}, {Key: "x", Value: "a"}})
	if _, err := e.Insert(context.Background(), "db", "c", []bson.Raw{doc, mustRaw(t, bson.D{{Key: "_id", Value: 8}, {Key: "ttl", Value: -1}})}, true); err != nil {
		t.Fatal(err)
	}
	_, _, last := oplogSince(t, e, oplog.Timestamp{})
	clock.Advance(5 * time.Second)
	if n, err := e.Reaper().Pass(); err != nil || n != 1 {
		t.Fatalf("pass: %d, %v", n, err)
	}
	pres := preImagesAt(t, e, last)
	if len(pres) != 1 || !bytesEqual(pres[0], doc) {
		t.Fatalf("pre-images of the purge: %v, want [%s]", pres, doc)
	}
	_, _, last = oplogSince(t, e, oplog.Timestamp{})
	if err := e.SetPreAndPostImages(context.Background(), "db", "c", false); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Delete(context.Background(), "db", "c", mustRaw(t, bson.D{}), 0, bson.RawValue{}); err != nil {
		t.Fatal(err)
	}
	if pres := preImagesAt(t, e, last); len(pres) != 1 || pres[0] != nil {
		t.Fatalf("pre-images with the option off: %v", pres)
	}
}

// TestPreImagesTrimmedWithOplog: pre-images go when the entries they
// belong to are trimmed, and no sooner.
func TestPreImagesTrimmedWithOplog(t *testing.T) {
	clock := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	const bound = 64 << 10
	e := openOplogEngine(t, t.TempDir(), clock, Options{OplogMaxBytes: bound})
	defer e.Close()
	opts := mustRaw(t, bson.D{{Key: PreImagesOption, Value: bson.D{{Key: "enabled", Value: true}}}})
	if err := e.CreateCollection(context.Background(), "db", "c", CreateOptions{Raw: opts}); err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 1000)
	for i := range 200 {
		d := mustRaw(t, bson.D{{Key: "_id", Value: i}, {Key: "p", Value: pad}})
		if _, err := e.Insert(context.Background(), "db", "c", []bson.Raw{d}, true); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Delete(context.Background(), "db", "c", mustRaw(t, bson.D{{Key: "_id", Value: i}}), 1, bson.RawValue{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.TrimOplog(context.Background()); err != nil {
		t.Fatal(err)
	}
	oldest, err := e.OldestOplog(context.Background())
	if err != nil || oldest.IsZero() {
		t.Fatalf("oldest %v, %v", oldest, err)
	}
	lo, hi := oplog.PreImageRange()
	it, err := rawIter(e, lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	kept := 0
	for ok := it.First(); ok; ok = it.Next() {
		ts := oplog.FromUint64(binary.BigEndian.Uint64(it.Key()[1:]))
		if ts.Less(oldest) {
			t.Fatalf("pre-image at %v outlived the oldest entry %v", ts, oldest)
		}
		kept++
	}
	// Every delete entry still stored keeps its pre-image.
	if pres := preImagesAt(t, e, oldest.Prev()); len(pres) != kept || kept == 0 || kept == 200 {
		t.Fatalf("%d pre-images kept for %d delete entries", kept, len(pres))
	}
}

// TestPreImagesBoundedWithOplog: small updates of a large document write
// small entries and large pre-images; the oplog's size bound counts both,
// so together they stay within it, and a restart counts them again.
func TestPreImagesBoundedWithOplog(t *testing.T) {
	clock := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	const bound = 256 << 10
	dir := t.TempDir()
	e := openOplogEngine(t, dir, clock, Options{OplogMaxBytes: bound})
	opts := mustRaw(t, bson.D{{Key: PreImagesOption, Value: bson.D{{Key: "enabled", Value: true}}}})
	if err := e.CreateCollection(context.Background(), "db", "c", CreateOptions{Raw: opts}); err != nil {
		t.Fatal(err)
	}
	big := mustRaw(t, bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 0}, {Key: "p", Value: strings.Repeat("x", 64<<10)}})
	if _, err := e.Insert(context.Background(), "db", "c", []bson.Raw{big}, true); err != nil {
		t.Fatal(err)
	}
	inc, err := update.Compile(mustRaw(t, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}), update.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stored := func() int64 {
		t.Helper()
		lo, hi := oplog.Range()
		entries, err := oplogstore.RangeSize(context.Background(), e.store, lo, hi)
		if err != nil {
			t.Fatal(err)
		}
		plo, phi := oplog.PreImageRange()
		images, err := oplogstore.RangeSize(context.Background(), e.store, plo, phi)
		if err != nil {
			t.Fatal(err)
		}
		return entries + images
	}
	for range 100 {
		if _, err := e.Update(context.Background(), "db", "c", UpdateSpec{Filter: mustRaw(t, bson.D{{Key: "_id", Value: 1}}), Update: inc}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.TrimOplog(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// 100 pre-images of 64 KiB would be 25 times the bound.
	if n := stored(); n > bound || n != e.Oplog().Size() {
		t.Fatalf("oplog and pre-images hold %d bytes (the log counts %d), bound %d", n, e.Oplog().Size(), bound)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openOplogEngine(t, dir, clock, Options{OplogMaxBytes: bound})
	defer e.Close()
	if n := stored(); n != e.Oplog().Size() {
		t.Fatalf("after a restart the log counts %d bytes, %d stored", e.Oplog().Size(), n)
	}
}

// TestPreImagesExpireAfterSeconds: with changeStreamOptions'
// expireAfterSeconds, a pre-image is gone once it is older than that, for
// reads at once and from the store when the expiry runs, and the setting
// survives a restart.
func TestPreImagesExpireAfterSeconds(t *testing.T) {
	clock := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	dir := t.TempDir()
	e := openOplogEngine(t, dir, clock, Options{})
	opts := mustRaw(t, bson.D{{Key: PreImagesOption, Value: bson.D{{Key: "enabled", Value: true}}}})
	if err := e.CreateCollection(context.Background(), "db", "c", CreateOptions{Raw: opts}); err != nil {
		t.Fatal(err)
	}
	if got := e.ChangeStreamOptions(); got.ExpireAfterSeconds != 0 || !got.Time.IsZero() {
		t.Fatalf("default options %+v", got)
	}
	if err := e.SetChangeStreamOptions(context.Background(), 10); err != nil {
		t.Fatal(err)
	}
	set := e.ChangeStreamOptions()
	if set.ExpireAfterSeconds != 10 || set.Time.IsZero() {
		t.Fatalf("options %+v", set)
	}
	_, _, last := oplogSince(t, e, oplog.Timestamp{})
	for i := range 2 {
		if _, err := e.Insert(context.Background(), "db", "c", []bson.Raw{mustRaw(t, bson.D{{Key: "_id", Value: i}})}, true); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Delete(context.Background(), "db", "c", mustRaw(t, bson.D{{Key: "_id", Value: i}}), 1, bson.RawValue{}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(6 * time.Second)
	}
	// 12 s after the first delete and 6 s after the second.
	pres := preImagesAt(t, e, last)
	if len(pres) != 2 || pres[0] != nil || pres[1] == nil {
		t.Fatalf("pre-images 12 s and 6 s old under a 10 s expiry: %v", pres)
	}
	if err := e.ExpirePreImages(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openOplogEngine(t, dir, clock, Options{})
	defer e.Close()
	if got := e.ChangeStreamOptions(); got != set {
		t.Fatalf("options after restart %+v, want %+v", got, set)
	}
	lo, hi := oplog.PreImageRange()
	it, err := rawIter(e, lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	it.Close()
	if n != 1 {
		t.Fatalf("%d pre-images stored after the expiry, want 1", n)
	}
	// Turned off, the oplog's bound alone applies again.
	if err := e.SetChangeStreamOptions(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	if pres := preImagesAt(t, e, last); len(pres) != 2 || pres[1] == nil {
		t.Fatalf("pre-images with the expiry off: %v", pres)
	}
}
