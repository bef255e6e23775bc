package engine

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/clock"
)

func stages(t testing.TB, ds ...bson.D) []bson.Raw {
	t.Helper()
	out := []bson.Raw{}
	for _, d := range ds {
		out = append(out, modelRaw(d))
	}
	return out
}

// readView runs pipeline over the view db.name the way the server does:
// the view's resolved pipeline first.
func readView(t testing.TB, e *Engine, db, name string, pipeline []bson.Raw) []bson.Raw {
	t.Helper()
	coll, vp, isView, err := e.ResolveView(context.Background(), db, name)
	if err != nil || !isView {
		t.Fatalf("resolve %s: %v (view %v)", name, err, isView)
	}
	docs, err := e.Aggregate(context.Background(), db, coll, append(vp, pipeline...), AggregateOptions{})
	if err != nil {
		t.Fatalf("read view %s: %v", name, err)
	}
	return docs
}

func wantCode(t testing.TB, what string, err error, code int) {
	t.Helper()
	if got := codeOf(err); got != code {
		t.Fatalf("%s: got %v (code %d), want code %d", what, err, got, code)
	}
}

func TestViewReadsThroughPipelines(t *testing.T) {
	e := openTestEngine(t)
	ctx := context.Background()
	var docs []bson.Raw
	for i := range 6 {
		docs = append(docs, modelRaw(bson.D{{Key: "_id", Value: int32(i)}, {Key: "a", Value: int32(i % 3)}}))
	}
	if _, err := e.Insert(context.Background(), "db", "c", docs, true); err != nil {
		t.Fatal(err)
	}
	if err := e.CreateView(ctx, "db", "v1", "c", stages(t, bson.D{{Key: "$match", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: 0}}}}}})); err != nil {
		t.Fatal(err)
	}
	if err := e.CreateView(ctx, "db", "v2", "v1", stages(t, bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: -1}}}}, bson.D{{Key: "$project", Value: bson.D{{Key: "a", Value: 0}}}})); err != nil {
		t.Fatal(err)
	}
	got := readView(t, e, "db", "v2", stages(t, bson.D{{Key: "$limit", Value: 3}}))
	if want := "[{\"_id\": {\"$numberInt\":\"5\"}}, {\"_id\": {\"$numberInt\":\"4\"}}, {\"_id\": {\"$numberInt\":\"2\"}}]"; rawList(got) != want {
		t.Fatalf("v2: got %s, want %s", rawList(got), want)
	}
	// The definitions are documents of system.views.
	cur, err := e.Find(ctx, "db", ViewsCollection, FindSpec{})
	if err != nil {
		t.Fatal(err)
	}
	defs, err := cur.All(ctx)
	if err != nil || len(defs) != 2 {
		t.Fatalf("system.views: %s, %v", rawList(defs), err)
	}
	if id := defs[1].Lookup("_id").StringValue(); id != "db.v2" || defs[1].Lookup("viewOn").StringValue() != "v1" {
		t.Fatalf("system.views holds %s", defs[1])
	}
	vals, err := DistinctOf(readView(t, e, "db", "v1", nil), "a")
	if err != nil || len(vals) != 2 {
		t.Fatalf("distinct a of v1: %v, %v", vals, err)
	}
}

func TestViewsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	clock := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e, err := Open(dir, Options{Clock: clock, NoReaper: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.CreateView(ctx, "db", "v", "c", stages(t, bson.D{{Key: "$match", Value: bson.D{{Key: "a", Value: 1}}}})); err != nil {
		t.Fatal(err)
	}
	if err := e.ModifyView(ctx, "db", "v", "d", nil); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if e, err = Open(dir, Options{Clock: clock, NoReaper: true}); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	v, ok := e.View(ctx, "db", "v")
	if !ok || v.ViewOn != "d" || len(v.Pipeline) != 1 || v.Pipeline[0].String() != `{"$match": {"a": {"$numberInt":"1"}}}` {
		t.Fatalf("after restart: %+v, %v", v, ok)
	}
}

func TestViewNamesAreNotCollections(t *testing.T) {
	e := openTestEngine(t)
	ctx := context.Background()
	if _, err := e.Insert(context.Background(), "db", "c", []bson.Raw{modelRaw(bson.D{{Key: "_id", Value: 1}})}, true); err != nil {
		t.Fatal(err)
	}
	p := stages(t, bson.D{{Key: "$match", Value: bson.D{}}})
	if err := e.CreateView(ctx, "db", "v", "c", p); err != nil {
		t.Fatal(err)
	}
	// Again with the same definition: nothing to do, as in MongoDB 7.
	wantCode(t, "same view again", e.CreateView(ctx, "db", "v", "c", p), 0)
	wantCode(t, "view on another source", e.CreateView(ctx, "db", "v", "d", p), 48)
	wantCode(t, "view with another pipeline", e.CreateView(ctx, "db", "v", "c", nil), 48)
	wantCode(t, "view named as a collection", e.CreateView(ctx, "db", "c", "x", nil), 48)
	wantCode(t, "collection named as a view", e.CreateCollection(ctx, "db", "v", CreateOptions{}), 48)

	res, err := e.Insert(context.Background(), "db", "v", []bson.Raw{modelRaw(bson.D{{Key: "x", Value: 1}}), modelRaw(bson.D{{Key: "x", Value: 2}})}, false)
	if err != nil || len(res.Errors) != 2 || codeOf(res.Errors[1].Err) != 166 {
		t.Fatalf("unordered insert into a view: %+v, %v", res, err)
	}
	res, err = e.Insert(context.Background(), "db", "v", []bson.Raw{modelRaw(bson.D{{Key: "x", Value: 1}}), modelRaw(bson.D{{Key: "x", Value: 2}})}, true)
	if err != nil || len(res.Errors) != 1 || res.Errors[0].Index != 0 || codeOf(res.Errors[0].Err) != 166 {
		t.Fatalf("ordered insert into a view: %+v, %v", res, err)
	}
	_, err = e.Delete(ctx, "db", "v", modelRaw(bson.D{}), 0, bson.RawValue{})
	wantCode(t, "delete from a view", err, 166)
	_, err = e.FindAndModify(ctx, "db", "v", FindAndModifySpec{Filter: modelRaw(bson.D{}), Remove: true})
	wantCode(t, "findAndModify of a view", err, 166)
	_, err = e.CreateIndexes(ctx, "db", "v", []bson.Raw{modelRaw(bson.D{{Key: "key", Value: bson.D{{Key: "x", Value: 1}}}, {Key: "name", Value: "x_1"}})})
	wantCode(t, "createIndexes on a view", err, 166)
	if e.CollectionExists(ctx, "db", "v") {
		t.Fatal("a write to a view created a collection")
	}

	wantCode(t, "rename a view", e.RenameCollection(ctx, "db", "v", "db", "w", false), 166)
	wantCode(t, "rename onto a view", e.RenameCollection(ctx, "db", "c", "db", "v", true), 48)
	wantCode(t, "rename system.views", e.RenameCollection(ctx, "db", ViewsCollection, "db", "w", false), 20)

	existed, err := e.DropView(ctx, "db", "v")
	if err != nil || !existed {
		t.Fatalf("drop view: %v, %v", existed, err)
	}
	if _, ok := e.View(ctx, "db", "v"); ok {
		t.Fatal("dropped view still resolves")
	}
	wantCode(t, "collection where a view was", e.CreateCollection(ctx, "db", "v", CreateOptions{}), 0)
}

func TestViewDefinitionsChecked(t *testing.T) {
	e := openTestEngine(t)
	ctx := context.Background()
	wantCode(t, "empty viewOn", e.CreateView(ctx, "db", "v", "", nil), 2)
	wantCode(t, "system name", e.CreateView(ctx, "db", "system.v", "c", nil), 73)
	wantCode(t, "$out", e.CreateView(ctx, "db", "v", "c", stages(t, bson.D{{Key: "$out", Value: "x"}})), 167)
	wantCode(t, "$merge", e.CreateView(ctx, "db", "v", "c", stages(t, bson.D{{Key: "$match", Value: bson.D{}}}, bson.D{{Key: "$merge", Value: "x"}})), 167)
	wantCode(t, "unknown stage", e.CreateView(ctx, "db", "v", "c", stages(t, bson.D{{Key: "$nope", Value: 1}})), 40324)
	wantCode(t, "two-field stage", e.CreateView(ctx, "db", "v", "c", stages(t, bson.D{{Key: "$match", Value: bson.D{}}, {Key: "$limit", Value: 1}})), 40323)
	wantCode(t, "$match of a number", e.CreateView(ctx, "db", "v", "c", stages(t, bson.D{{Key: "$match", Value: 1}})), 15959)
	if _, ok := e.View(ctx, "db", "v"); ok || e.CollectionExists(ctx, "db", ViewsCollection) {
		t.Fatal("a refused view was stored")
	}

	// A cycle, directly or through a $lookup.
	if err := e.CreateView(ctx, "db", "a", "b", nil); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "view on itself", e.CreateView(ctx, "db", "self", "self", nil), 5)
	wantCode(t, "b on a on b", e.CreateView(ctx, "db", "b", "a", nil), 5)
	if err := e.CreateView(ctx, "db", "b", "c", nil); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "collMod into a cycle", e.ModifyView(ctx, "db", "b", "a", nil), 5)

	// A chain of 20 views is the deepest allowed, from either end.
	for i := 1; i <= MaxViewDepth; i++ {
		if err := e.CreateView(ctx, "db", "chain"+strconv.Itoa(i), "chain"+strconv.Itoa(i-1), nil); err != nil {
			t.Fatalf("view %d of the chain: %v", i, err)
		}
	}
	wantCode(t, "21st view on the chain", e.CreateView(ctx, "db", "chain21", "chain20", nil), 165)
	// A read looks up at most 20 namespaces (resolveView in MongoDB's
	// view_catalog_helpers.cpp), the collection at the end included: the
	// top of a chain of 20 is one too many.
	if coll, p, _, err := e.ResolveView(ctx, "db", "chain19"); err != nil || coll != "chain0" || len(p) != 0 {
		t.Fatalf("resolve chain19: %s %v %v", coll, p, err)
	}
	_, _, _, err := e.ResolveView(ctx, "db", "chain20")
	wantCode(t, "read through 20 views", err, 165)
	wantCode(t, "chain over a view", e.ModifyView(ctx, "db", "chain1", "b", nil), 165)
	wantCode(t, "chain under a view", e.CreateView(ctx, "db", "chain0", "c", nil), 165)
}

func TestDroppingSystemViewsDropsViews(t *testing.T) {
	e := openTestEngine(t)
	ctx := context.Background()
	for _, db := range []string{"db", "other"} {
		for i := range 3 {
			if err := e.CreateView(ctx, db, fmt.Sprint("v", i), "c", nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if existed, err := e.DropCollection(ctx, "db", ViewsCollection); err != nil || !existed {
		t.Fatalf("drop system.views: %v, %v", existed, err)
	}
	if vs := e.Views(ctx, "db"); len(vs) != 0 {
		t.Fatalf("views left in db: %+v", vs)
	}
	if err := e.DropDatabase(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	if vs := e.Views(ctx, "other"); len(vs) != 0 {
		t.Fatalf("views left after dropDatabase: %+v", vs)
	}
	if err := e.CreateView(ctx, "db", "v0", "c", nil); err != nil {
		t.Fatalf("create a view after system.views was dropped: %v", err)
	}
}

// A name is a view or a collection, never both, however creations race:
// a view, a write that creates the collection, and an explicit create.
func TestViewAndCollectionCreationsRace(t *testing.T) {
	e := openTestEngine(t)
	ctx := context.Background()
	for i := range 50 {
		name := fmt.Sprint("x", i)
		done := make(chan error, 3)
		go func() { done <- e.CreateView(ctx, "db", name, "c", nil) }()
		go func() {
			_, err := e.Insert(context.Background(), "db", name, []bson.Raw{modelRaw(bson.D{{Key: "_id", Value: 1}})}, true)
			done <- err
		}()
		go func() { done <- e.CreateCollection(ctx, "db", name, CreateOptions{}) }()
		for range 3 {
			if err := <-done; err != nil && codeOf(err) != 48 {
				t.Fatalf("%s: %v", name, err)
			}
		}
		_, isView := e.View(ctx, "db", name)
		if isView == e.CollectionExists(ctx, "db", name) {
			t.Fatalf("%s: view %v, collection %v", name, isView, e.CollectionExists(ctx, "db", name))
		}
	}
}
