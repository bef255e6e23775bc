package integration

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/lethedb/lethe/engine/kv/pebblekv"
	"github.com/lethedb/lethe/server"
)

const (
	diskSize    = 16 << 20
	diskMinFree = 2 << 20
)

func withDisk(d *pebblekv.MemDisk, minFree int64) serverOption {
	return func(c *server.Config) { c.Disk, c.MinFreeDisk = d, minFree }
}

// diskDocs are n documents of about 1 KiB from _id first on, with padding
// that does not compress.
func diskDocs(first, n int) []any {
	docs := make([]any, n)
	rng := rand.NewChaCha8([32]byte{byte(first), byte(first >> 8), byte(first >> 16)})
	for i := range docs {
		pad := make([]byte, 1000)
		_, _ = rng.Read(pad)
		docs[i] = bson.D{{Key: "_id", Value: int32(first + i)}, {Key: "pad", Value: bson.Binary{Data: pad}}}
	}
	return docs
}

// wantOutOfDisk checks MongoDB's code, and its name when the error is a
// command error, for a write refused on a full disk.
func wantOutOfDisk(t *testing.T, err error) {
	t.Helper()
	wantCode(t, err, 14031)
	var ce mongo.CommandError
	if errors.As(err, &ce) && ce.Name != "OutOfDiskSpace" {
		t.Fatalf("want codeName OutOfDiskSpace, got %v", err)
	}
}

// wantRange checks that test.c holds exactly the _ids [lo, hi).
func wantRange(t *testing.T, coll *mongo.Collection, lo, hi int) {
	t.Helper()
	n, err := coll.CountDocuments(testCtx(t), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	in, err := coll.CountDocuments(testCtx(t), bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: lo}, {Key: "$lt", Value: hi}}}})
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(hi-lo) || in != n {
		t.Fatalf("%d documents, %d of them in [%d, %d); want exactly the %d acknowledged", n, in, lo, hi, hi-lo)
	}
}

// TestDiskFullThroughDriver fills a simulated disk through the driver:
// inserts are refused with OutOfDiskSpace (14031) and write nothing, reads
// and deletes work, writes resume once deletions have freed space, and a
// restart on a disk filled to the brim serves reads.
func TestDiskFullThroughDriver(t *testing.T) {
	disk := pebblekv.NewMemDisk(diskSize)
	ts := startServer(t, withDisk(disk, diskMinFree))
	coll := ts.Client.Database("test").Collection("c")

	const batch = 100
	next := 0
	var err error
	for ; next < 100_000; next += batch {
		if _, err = coll.InsertMany(testCtx(t), diskDocs(next, batch)); err != nil {
			break
		}
	}
	wantOutOfDisk(t, err)
	t.Logf("disk full after %d documents: %d of %d bytes used", next, disk.Used(), diskSize)
	wantRange(t, coll, 0, next)
	var doc bson.M
	if err := coll.FindOne(testCtx(t), bson.D{{Key: "_id", Value: 7}}).Decode(&doc); err != nil {
		t.Fatalf("findOne on a full disk: %v", err)
	}

	half := next / 2
	res, err := coll.DeleteMany(testCtx(t), bson.D{{Key: "_id", Value: bson.D{{Key: "$lt", Value: half}}}})
	if err != nil || res.DeletedCount != int64(half) {
		t.Fatalf("deleteMany on a full disk: %+v, %v", res, err)
	}
	// Space comes back as the engine flushes and compacts the deletions.
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := coll.InsertMany(testCtx(t), diskDocs(next, batch))
		if err == nil {
			next += batch
			break
		}
		wantOutOfDisk(t, err)
		if time.Now().After(deadline) {
			t.Fatalf("inserts still refused 20s after deleting half the documents: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	wantRange(t, coll, half, next)

	// Another program leaves less than the reserve free; the server
	// restarts, serves reads and deletes, and refuses inserts.
	ts.stop(t)
	disk.SetCapacity(disk.Used() + 3*diskMinFree/4)
	ts.start(t)
	coll = ts.Client.Database("test").Collection("c")
	wantRange(t, coll, half, next)
	// Opening removed obsolete files, and compactions may free more; the
	// other program takes that space as it comes.
	disk.TakeFreedSpace(3 * diskMinFree / 4)
	_, err = coll.InsertOne(testCtx(t), diskDocs(next, 1)[0])
	wantOutOfDisk(t, err)
	if _, err := coll.DeleteOne(testCtx(t), bson.D{{Key: "_id", Value: -1}}); err != nil {
		t.Fatalf("delete on a full disk after restart: %v", err)
	}

	// The other program frees its space: inserts resume without a restart.
	disk.SetCapacity(2 * diskSize)
	if _, err := coll.InsertMany(testCtx(t), diskDocs(next, batch)); err != nil {
		t.Fatalf("insert after space was freed: %v", err)
	}
	wantRange(t, coll, half, next+batch)
}

// TestDiskTooFullToReplayServesReads restarts the server on a disk with no
// byte free even once the ballast is gone: the store cannot replay its
// write-ahead log, so it opens read-only. The server listens, serves reads,
// and refuses every write, deletions included, with OutOfDiskSpace.
func TestDiskTooFullToReplayServesReads(t *testing.T) {
	disk := pebblekv.NewMemDisk(diskSize)
	ts := startServer(t, withDisk(disk, diskMinFree))
	coll := ts.Client.Database("test").Collection("c")
	if _, err := coll.InsertMany(testCtx(t), diskDocs(0, 300)); err != nil {
		t.Fatal(err)
	}
	ts.stop(t)
	disk.SetCapacity(disk.Used() - diskMinFree/2) // the ballast's space is taken too
	ts.start(t)
	coll = ts.Client.Database("test").Collection("c")
	wantRange(t, coll, 0, 300)
	_, err := coll.InsertOne(testCtx(t), diskDocs(300, 1)[0])
	wantOutOfDisk(t, err)
	_, err = coll.DeleteOne(testCtx(t), bson.D{{Key: "_id", Value: 1}})
	wantOutOfDisk(t, err)
	wantOutOfDisk(t, coll.Drop(testCtx(t)))
	wantRange(t, coll, 0, 300)
}
