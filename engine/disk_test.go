package engine

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap/zaptest"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/kv/pebblekv"
	"github.com/lethedb/lethe/mongoerr"
)

const (
	testDiskSize = 16 << 20
	testMinFree  = 2 << 20
)

func openOnDisk(t *testing.T, d *pebblekv.MemDisk) *Engine {
	t.Helper()
	return openOnDiskOplog(t, d, false)
}

func openOnDiskOplog(t *testing.T, d *pebblekv.MemDisk, oplog bool) *Engine {
	t.Helper()
	e, err := Open("/db", Options{
		Clock:       clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		Logger:      zaptest.NewLogger(t),
		NoReaper:    true,
		MinFreeDisk: testMinFree,
		Disk:        d,
		Oplog:       oplog,
	})
	if err != nil {
		t.Fatalf("open on a disk with %d of %d bytes used: %v", d.Used(), testDiskSize, err)
	}
	return e
}

// padded is a document of about 1 KiB with _id id; its padding does not
// compress, so that documents take their size on disk.
func padded(id int) bson.Raw {
	pad := make([]byte, 1000)
	_, _ = rand.NewChaCha8([32]byte{byte(id), byte(id >> 8), byte(id >> 16)}).Read(pad)
	raw, err := bson.Marshal(bson.D{{Key: "_id", Value: int32(id)}, {Key: "pad", Value: bson.Binary{Data: pad}}})
	if err != nil {
		panic(err)
	}
	return raw
}

// fill inserts documents from next on until the engine refuses one; it
// returns the next unused id. Every refusal must be OutOfDiskSpace.
func fill(t *testing.T, e *Engine, next int) int {
	t.Helper()
	for ; ; next++ {
		if next > 100_000 {
			t.Fatal("the disk never filled up")
		}
		res, err := e.Insert(context.Background(), "test", "c", []bson.Raw{padded(next)}, true)
		if err = insertErr(res, err); err != nil {
			wantOutOfDisk(t, err)
			return next
		}
		if res.N != 1 {
			t.Fatalf("insert %d: %+v", next, res)
		}
	}
}

// insertErr is the failure of an insert: the command's error, or else the
// first document's write error.
func insertErr(res InsertResult, err error) error {
	if err == nil && len(res.Errors) > 0 {
		err = res.Errors[0].Err
	}
	return err
}

func wantOutOfDisk(t *testing.T, err error) {
	t.Helper()
	me, ok := mongoerr.As(err)
	if !ok || me.Code != mongoerr.OutOfDiskSpace {
		t.Fatalf("want OutOfDiskSpace (14031), got %v", err)
	}
}

// countDocs counts test.c and checks that ids [lo, hi) are all there.
func countDocs(t *testing.T, e *Engine, lo, hi int) int64 {
	t.Helper()
	n, err := e.Count(context.Background(), "test", "c", nil, 0, 0, bson.RawValue{})
	if err != nil {
		t.Fatalf("count: %v", err)
	}
	f, _ := bson.Marshal(bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: lo}, {Key: "$lt", Value: hi}}}})
	in, err := e.Count(context.Background(), "test", "c", f, 0, 0, bson.RawValue{})
	if err != nil {
		t.Fatalf("count: %v", err)
	}
	if in != int64(hi-lo) {
		t.Fatalf("%d of the %d acknowledged documents [%d, %d) are present", in, hi-lo, lo, hi)
	}
	return n
}

// TestDiskFull fills a simulated disk and checks that writes are refused
// with OutOfDiskSpace while reads and deletes work, that deleting lets
// writes resume without a restart, and that a restart on the full disk
// serves reads; with the oplog too, whose entries of deletes and drops
// are let through with them.
func TestDiskFull(t *testing.T) {
	t.Run("oplog off", func(t *testing.T) { testDiskFull(t, false) })
	t.Run("oplog on", func(t *testing.T) { testDiskFull(t, true) })
}

func testDiskFull(t *testing.T, oplog bool) {
	d := pebblekv.NewMemDisk(testDiskSize)
	e := openOnDiskOplog(t, d, oplog)
	full := fill(t, e, 0)
	t.Logf("disk full after %d documents: %d of %d bytes used", full, d.Used(), testDiskSize)
	if full < 1000 {
		t.Fatalf("refused after only %d documents", full)
	}
	// Reads are served.
	n := countDocs(t, e, 0, full)
	if n != int64(full) {
		t.Fatalf("count %d, want %d", n, full)
	}
	if doc, err := e.FindByID(context.Background(), "test", "c", bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 7)}); err != nil || doc == nil {
		t.Fatalf("find _id 7 on a full disk: %v %v", doc, err)
	}

	// Delete the first half: it commits, and writes come back.
	half := full / 2
	f, _ := bson.Marshal(bson.D{{Key: "_id", Value: bson.D{{Key: "$lt", Value: half}}}})
	n, err := e.Delete(context.Background(), "test", "c", f, 0, bson.RawValue{})
	if err != nil || n != int64(half) {
		t.Fatalf("delete on a full disk: %d, %v", n, err)
	}
	next := waitWritable(t, e, full)
	t.Logf("writes resumed after deleting %d documents: %d bytes used", half, d.Used())
	countDocs(t, e, half, next)

	// Another program leaves less than the reserve free; a restart serves
	// reads and deletes, and refuses inserts.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	d.SetCapacity(d.Used() + 3*testMinFree/4)
	e = openOnDiskOplog(t, d, oplog)
	defer e.Close()
	t.Logf("restarted on a full disk: %d of %d bytes used", d.Used(), d.Capacity())
	countDocs(t, e, half, next)
	// Opening removed obsolete files, and compactions may free more; the
	// other program takes that space as it comes.
	d.TakeFreedSpace(3 * testMinFree / 4)
	err = insertErr(e.Insert(context.Background(), "test", "c", []bson.Raw{padded(next)}, true))
	wantOutOfDisk(t, err)
	n, err = e.Delete(context.Background(), "test", "c", f, 0, bson.RawValue{})
	if err != nil || n != 0 {
		t.Fatalf("delete on a full disk after restart: %d, %v", n, err)
	}

	// The user frees space elsewhere on the disk: writes resume.
	d.SetCapacity(2 * testDiskSize)
	if err := insertErr(e.Insert(context.Background(), "test", "c", []bson.Raw{padded(next)}, true)); err != nil {
		t.Fatalf("insert after the disk grew: %v", err)
	}
	countDocs(t, e, half, next+1)
	// The ballast, released at the start on a low disk, comes back.
	for deadline := time.Now().Add(10 * time.Second); !kv.Unwrap(e.store).(*pebblekv.Store).HasBallast(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the ballast was not restored once space came back")
		}
	}
}

// waitWritable retries an insert of id until the engine accepts it: space
// comes back when the background flush and compactions have run.
func waitWritable(t *testing.T, e *Engine, id int) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := insertErr(e.Insert(context.Background(), "test", "c", []bson.Raw{padded(id)}, true))
		if err == nil {
			return id + 1
		}
		wantOutOfDisk(t, err)
		if time.Now().After(deadline) {
			t.Fatalf("writes still refused 20s after deleting: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// reopenTooFullToReplay closes e, takes the ballast away and leaves not a
// byte free, with documents still in the WAL, then opens the store again: it
// must open, read-only, rather than wait for ever for the space to replay.
func reopenTooFullToReplay(t *testing.T, e *Engine, d *pebblekv.MemDisk) *Engine {
	t.Helper()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.RemoveBallast("/db"); err != nil {
		t.Fatal(err)
	}
	d.SetCapacity(d.Used())
	opened := make(chan *Engine)
	go func() { opened <- openOnDisk(t, d) }()
	select {
	case e = <-opened:
	case <-time.After(30 * time.Second):
		t.Fatal("open on a full disk did not return in 30 s")
	}
	return e
}

// TestOpenOnDiskTooFullToReplay fills the disk to the last byte after the
// ballast is gone, with documents still in the WAL: pebble cannot flush
// them, so the store opens read-only instead of waiting forever for space.
// Reads are served; every write is refused with OutOfDiskSpace.
func TestOpenOnDiskTooFullToReplay(t *testing.T) {
	d := pebblekv.NewMemDisk(testDiskSize)
	e := openOnDisk(t, d)
	const n = 500
	for i := 0; i < n; i++ {
		if err := insertErr(e.Insert(context.Background(), "test", "c", []bson.Raw{padded(i)}, true)); err != nil {
			t.Fatal(err)
		}
	}
	e = reopenTooFullToReplay(t, e, d)
	defer e.Close()
	countDocs(t, e, 0, n)
	err := insertErr(e.Insert(context.Background(), "test", "c", []bson.Raw{padded(n)}, true))
	wantOutOfDisk(t, err)
	f, _ := bson.Marshal(bson.D{{Key: "_id", Value: 1}})
	_, err = e.Delete(context.Background(), "test", "c", f, 0, bson.RawValue{})
	wantOutOfDisk(t, err)
	_, err = e.DropCollection(context.Background(), "test", "c")
	wantOutOfDisk(t, err)
	err = insertErr(e.Insert(context.Background(), "test", "other", []bson.Raw{padded(n)}, true))
	wantOutOfDisk(t, err)
	countDocs(t, e, 0, n)
}
