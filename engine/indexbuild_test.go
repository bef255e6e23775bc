package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lethedb/lethe/engine/reclaim"
	"github.com/lethedb/lethe/engine/record"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestIndexBuildSurvivesItsBuilder: a server that dies after storing an
// index as building, before any entry is written, leaves the build to the
// others: once its lease on the roster has run out, another server claims
// the build, writes the entries and makes the index ready, and the index
// then finds what a collection scan does (issue 22: builds survive the
// builder's death).
func TestIndexBuildSurvivesItsBuilder(t *testing.T) {
	ctx := context.Background()
	const lease = 600 * time.Millisecond
	es := sharedEngines(t, 2, Options{NoReaper: true, Cluster: ClusterOptions{Lease: lease}})
	a, b := es[0], es[1]
	// a stores the index as building, the first step of a build, and dies.
	storeBuilding(t, a, 600, true)
	a.Halt()

	deadline := time.Now().Add(20 * lease)
	for {
		specs, err := b.ListIndexes(ctx, "db", "c")
		if err != nil {
			t.Fatal(err)
		}
		if len(specs) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the build of a dead server was not finished by the other: indexes %v", specs)
		}
		time.Sleep(lease / 10)
	}
	for k := 0; k < 7; k++ {
		find := func(hint bson.D) string {
			return fmt.Sprint(len(findHinted(t, b, bson.D{{Key: "k", Value: k}}, hint)))
		}
		if byIndex, byScan := find(bson.D{{Key: "k", Value: 1}}), find(bson.D{{Key: "$natural", Value: 1}}); byIndex != byScan || byScan == "0" {
			t.Fatalf("k=%d: the index finds %s documents, a scan %s", k, byIndex, byScan)
		}
	}
}

// TestCreateIndexesWaitsForTheBuildUnderWay: createIndexes of an index
// another server is building answers once that build is done, as mongod's
// createIndexes waits for a build already in progress and then looks again
// (src/mongo/db/commands/create_indexes_cmd.cpp, log 20450), rather than
// at once with an index that no query may use yet.
func TestCreateIndexesWaitsForTheBuildUnderWay(t *testing.T) {
	ctx := context.Background()
	es := sharedEngines(t, 2, Options{NoReaper: true})
	a, b := es[0], es[1]
	// a has stored the index as building, the first step of its build.
	im, c, st := storeBuilding(t, a, 300, true)
	a.awaitCatalog(ctx)

	answered := make(chan error, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		_, err := b.CreateIndexes(wctx, "db", "c", []bson.Raw{kSpec})
		answered <- err
	}()
	select {
	case err := <-answered:
		t.Fatalf("createIndexes answered (%v) while the build was under way", err)
	case <-time.After(300 * time.Millisecond):
	}
	// a finishes its build.
	defer a.cluster.running.Delete(im.ID)
	lo, hi := record.IndexRange(im.ID)
	if _, err := a.finishBuild(ctx, c, st, map[uint64]bool{im.ID: true}, []reclaim.Range{{Lo: lo, Hi: hi}}, nil, false); err != nil {
		t.Fatal(err)
	}
	c.ddl.Unlock()
	if err := <-answered; err != nil {
		t.Fatal(err)
	}
	specs, err := b.ListIndexes(ctx, "db", "c")
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 {
		t.Fatalf("indexes after createIndexes answered: %v, want _id_ and k_1", specs)
	}
}

// TestIndexBuildOfNoServerIsFinished: an index stored as building by a
// server that runs no build of it (its build failed and could not take it
// out) is finished by that server's own look for orphaned builds, so that
// it does not stay building, and createIndexes of it does not wait, for
// good.
func TestIndexBuildOfNoServerIsFinished(t *testing.T) {
	ctx := context.Background()
	a := sharedEngines(t, 1, Options{NoReaper: true})[0]
	storeBuilding(t, a, 300, false)
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, err := a.CreateIndexes(wctx, "db", "c", []bson.Raw{kSpec}); err != nil {
		t.Fatal(err)
	}
	specs, err := a.ListIndexes(ctx, "db", "c")
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 {
		t.Fatalf("indexes: %v, want _id_ and k_1", specs)
	}
	if err := validateStore(ctx, a, "db", "c"); err != nil {
		t.Fatal(err)
	}
}

// findHinted returns the documents of db.c that e finds for filter with
// the index hint.
func findHinted(t *testing.T, e *Engine, filter, hint bson.D) []bson.Raw {
	t.Helper()
	raw, _ := bson.Marshal(hint)
	got, err := findAll(t, e, "c", FindSpec{Filter: modelRaw(filter), Hint: bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: raw}})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// kSpec is the index the build tests build.
var kSpec = modelRaw(bson.D{{Key: "key", Value: bson.D{{Key: "k", Value: 1}}}, {Key: "name", Value: "k_1"}})

// storeBuilding inserts n documents into db.c through a, then stores kSpec
// as building with a its builder, the first step of a build, and returns
// the index, the collection and its state then. With running, a counts the
// build as one it runs; without, the build is an orphan of a's.
func storeBuilding(t *testing.T, a *Engine, n int, running bool) (record.IndexMeta, *Collection, *collState) {
	t.Helper()
	var docs []bson.Raw
	for i := 0; i < n; i++ {
		docs = append(docs, modelRaw(bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i % 7}}))
	}
	return storeBuildingSpec(t, a, docs, kSpec, running)
}

// storeBuildingSpec inserts docs into db.c through a, then stores the
// index spec as building, as storeBuilding does.
func storeBuildingSpec(t *testing.T, a *Engine, docs []bson.Raw, spec bson.Raw, running bool) (record.IndexMeta, *Collection, *collState) {
	t.Helper()
	ctx := context.Background()
	if _, err := a.Insert(ctx, "db", "c", docs, true); err != nil {
		t.Fatal(err)
	}
	im, err := parseIndexSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	if im.ID, err = a.allocIDs(ctx, 1); err != nil {
		t.Fatal(err)
	}
	c := a.collection("db", "c")
	if running {
		a.cluster.running.Store(im.ID, struct{}{})
	}
	c.ddl.Lock()
	st, err := a.changeStored(ctx, c, func(meta *collMeta) error {
		im.Building, im.Builder = true, a.cluster.member.ID()
		meta.Indexes = append(meta.Indexes, im)
		return nil
	}, nil)
	c.ddl.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	return im, c, st
}

// TestBuildingUniqueIndexKeepsAnothersEntry: while a unique index is
// being built, a document the backfill has not reached yet holds its key
// without an entry, so another document may take that key meanwhile. A
// write that then moves the first document off the key must leave the
// other's entry alone: the duplicate is gone by the end of the build,
// which therefore succeeds with every document indexed, as mongod's does
// (it records the duplicates writers meet during a build and fails only
// on those still there when the build commits: the manual's "Index Builds
// on Populated Collections", constraint violations during the build).
func TestBuildingUniqueIndexKeepsAnothersEntry(t *testing.T) {
	ctx := context.Background()
	a := sharedEngines(t, 1, Options{NoReaper: true})[0]
	spec := modelRaw(bson.D{{Key: "key", Value: bson.D{{Key: "u", Value: 1}}}, {Key: "name", Value: "u_1"}, {Key: "unique", Value: true}})
	docs := []bson.Raw{
		modelRaw(bson.D{{Key: "_id", Value: 1}, {Key: "u", Value: 1}}),
		modelRaw(bson.D{{Key: "_id", Value: 2}, {Key: "u", Value: 2}}),
	}
	im, c, st := storeBuildingSpec(t, a, docs, spec, true)
	defer a.cluster.running.Delete(im.ID)
	var build []*record.Index
	for _, ix := range st.indexes {
		if ix.Meta.ID == im.ID {
			build = append(build, ix)
		}
	}
	lo, hi := record.DocRange(st.meta.ID)
	keys, err := a.docKeys(ctx, lo, hi, 10)
	if err != nil || len(keys) != 2 {
		t.Fatalf("document keys: %x, %v", keys, err)
	}
	backfill := func(keys [][]byte) {
		t.Helper()
		if held, err := a.backfillKeys(ctx, st, build, keys, map[uint64]bool{}, true); err != nil || len(held) > 0 {
			t.Fatalf("backfill: held %x, %v", held, err)
		}
	}
	update := func(id, u int) {
		t.Helper()
		set := bson.D{{Key: "$set", Value: bson.D{{Key: "u", Value: u}}}}
		if _, err := a.Update(ctx, "db", "c", UpdateSpec{Filter: modelRaw(bson.D{{Key: "_id", Value: id}}), Update: mustCompileUpdate(t, set)}); err != nil {
			t.Fatal(err)
		}
	}
	// Document 1 takes u=2, which document 2 has, unindexed; the backfill
	// reaches document 1; document 2 moves to u=5; the backfill reaches it.
	update(1, 2)
	backfill(keys[:1])
	update(2, 5)
	backfill(keys[1:])
	// Ready without finishBuild, whose own backfill would index every
	// document again and hide a lost entry.
	c.ddl.Lock()
	_, err = a.changeStored(ctx, c, func(meta *collMeta) error {
		for i := range meta.Indexes {
			meta.Indexes[i].Building, meta.Indexes[i].Builder = false, ""
		}
		return nil
	}, nil)
	c.ddl.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := validateStore(ctx, a, "db", "c"); err != nil {
		t.Fatal(err)
	}
	for u, id := range map[int]int{2: 1, 5: 2} {
		got := findHinted(t, a, bson.D{{Key: "u", Value: u}}, bson.D{{Key: "u", Value: 1}})
		if len(got) != 1 || got[0].Lookup("_id").Int32() != int32(id) {
			t.Fatalf("find u=%d by the index: %v, want _id %d", u, got, id)
		}
	}
}
