package integration

import (
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

var ciCollation = &options.Collation{Locale: "en", Strength: 2}

// TestCollationThroughTheDriver runs the commands that take a collation
// through the Go driver's own options, with the expectations of
// jstests/core/collation.js: matching under strength 2 ignores case, the
// simple collation does not, a collection's default applies to commands
// that name none, and indexes keep their collation.
func TestCollationThroughTheDriver(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	db := ts.Client.Database("coll")
	coll := db.Collection("c")
	mustInsert(t, coll,
		bson.D{{Key: "_id", Value: 1}, {Key: "str", Value: "foo"}},
		bson.D{{Key: "_id", Value: 2}, {Key: "str", Value: "bar"}},
		bson.D{{Key: "_id", Value: 3}, {Key: "str", Value: "FOO"}})
	foo := bson.D{{Key: "str", Value: "Foo"}}

	// find, with the driver's collation option.
	idsOfCursor := func(cur *mongo.Cursor, err error) []int32 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var docs []struct {
			ID int32 `bson:"_id"`
		}
		if err := cur.All(ctx, &docs); err != nil {
			t.Fatal(err)
		}
		out := []int32{}
		for _, d := range docs {
			out = append(out, d.ID)
		}
		return out
	}
	if got := idsOfCursor(coll.Find(ctx, foo, options.Find().SetCollation(ciCollation).SetSort(bson.D{{Key: "_id", Value: 1}}))); !slices.Equal(got, []int32{1, 3}) {
		t.Errorf("find under strength 2: %v", got)
	}
	if got := idsOfCursor(coll.Find(ctx, foo)); len(got) != 0 {
		t.Errorf("find under simple: %v", got)
	}
	// A sort under en puts bar before both foos, lower case first.
	got := idsOfCursor(coll.Find(ctx, bson.D{}, options.Find().SetCollation(&options.Collation{Locale: "en"}).SetSort(bson.D{{Key: "str", Value: 1}})))
	if !slices.Equal(got, []int32{2, 1, 3}) {
		t.Errorf("sort under en: %v", got)
	}
	// count and distinct.
	if n, err := coll.CountDocuments(ctx, foo, options.Count().SetCollation(ciCollation)); err != nil || n != 2 {
		t.Errorf("countDocuments: %d %v", n, err)
	}
	n := run(t, db, bson.D{{Key: "count", Value: "c"}, {Key: "query", Value: foo}, {Key: "collation", Value: ciCollation}}).Lookup("n").AsInt64()
	if n != 2 {
		t.Errorf("count command: %d", n)
	}
	var vals []string
	if err := coll.Distinct(ctx, "str", bson.D{}, options.Distinct().SetCollation(ciCollation)).Decode(&vals); err != nil || len(vals) != 2 {
		t.Errorf("distinct under strength 2: %v %v, want bar and one foo", vals, err)
	}
	// aggregate: $match and $sort.
	cur, err := coll.Aggregate(ctx, mongo.Pipeline{{{Key: "$match", Value: foo}}, {{Key: "$sort", Value: bson.D{{Key: "_id", Value: -1}}}}},
		options.Aggregate().SetCollation(ciCollation))
	if got := idsOfCursor(cur, err); !slices.Equal(got, []int32{3, 1}) {
		t.Errorf("aggregate under strength 2: %v", got)
	}
	// updateMany, findOneAndUpdate, deleteMany.
	up, err := coll.UpdateMany(ctx, foo, bson.D{{Key: "$set", Value: bson.D{{Key: "seen", Value: true}}}}, options.UpdateMany().SetCollation(ciCollation))
	if err != nil || up.MatchedCount != 2 {
		t.Errorf("updateMany: %+v %v", up, err)
	}
	var doc bson.Raw
	err = coll.FindOneAndUpdate(ctx, bson.D{{Key: "str", Value: "BAR"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}},
		options.FindOneAndUpdate().SetCollation(ciCollation)).Decode(&doc)
	if err != nil || doc.Lookup("_id").Int32() != 2 {
		t.Errorf("findOneAndUpdate: %s %v", doc, err)
	}
	del, err := coll.DeleteMany(ctx, foo, options.DeleteMany().SetCollation(ciCollation))
	if err != nil || del.DeletedCount != 2 {
		t.Errorf("deleteMany: %+v %v", del, err)
	}
	// Refusals with mongod's codes.
	_, err = coll.Find(ctx, foo, options.Find().SetCollation(&options.Collation{Locale: "xx"}))
	wantCode(t, err, 2)
	_, err = coll.CountDocuments(ctx, foo, options.Count().SetCollation(&options.Collation{Locale: "en", Strength: 9}))
	wantCode(t, err, 2)
	err = db.RunCommand(ctx, bson.D{{Key: "find", Value: "c"}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "en"}, {Key: "bogus", Value: 1}}}}).Err()
	wantCode(t, err, 40415)
}

// TestCollationDefaultAndIndexes: create's collation is the collection's
// default, reported normalised by listCollections and inherited by its
// indexes; a unique index under strength 2 refuses a second spelling.
func TestCollationDefaultAndIndexes(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	db := ts.Client.Database("coll")
	if err := db.CreateCollection(ctx, "fr", options.CreateCollection().SetCollation(&options.Collation{Locale: "fr_CA"})); err != nil {
		t.Fatal(err)
	}
	specs, err := db.ListCollectionSpecifications(ctx, bson.D{{Key: "name", Value: "fr"}})
	if err != nil || len(specs) != 1 {
		t.Fatal(specs, err)
	}
	// jstests/core/collation.js: every field, fr_CA's backwards default,
	// and the version.
	want := bson.D{{Key: "locale", Value: "fr_CA"}, {Key: "caseLevel", Value: false}, {Key: "caseFirst", Value: "off"},
		{Key: "strength", Value: int32(3)}, {Key: "numericOrdering", Value: false}, {Key: "alternate", Value: "non-ignorable"},
		{Key: "maxVariable", Value: "punct"}, {Key: "normalization", Value: false}, {Key: "backwards", Value: true},
		{Key: "version", Value: "57.1"}}
	wantRaw, _ := bson.Marshal(want)
	if got := specs[0].Options.Lookup("collation").Document(); !slices.Equal(got, bson.Raw(wantRaw)) {
		t.Errorf("listCollections collation %s, want %s", got, bson.Raw(wantRaw))
	}
	fr := db.Collection("fr")
	if _, err := fr.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	ixCur, err := fr.Indexes().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ixs []bson.Raw
	if err := ixCur.All(ctx, &ixs); err != nil || len(ixs) != 2 {
		t.Fatal(ixs, err)
	}
	for _, ix := range ixs {
		if loc, _ := ix.Lookup("collation", "locale").StringValueOK(); loc != "fr_CA" {
			t.Errorf("index %s: not under fr_CA", ix)
		}
	}
	// Canadian French order from the default collation.
	mustInsert(t, fr, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: "côté"}}, bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: "coté"}},
		bson.D{{Key: "_id", Value: 3}, {Key: "a", Value: "côte"}}, bson.D{{Key: "_id", Value: 4}, {Key: "a", Value: "cote"}})
	cur, err := fr.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "a", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var docs []struct {
		A string `bson:"a"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, d := range docs {
		order = append(order, d.A)
	}
	if want := []string{"cote", "côte", "coté", "côté"}; !slices.Equal(order, want) {
		t.Errorf("fr_CA order %q, want %q", order, want)
	}

	users := db.Collection("users")
	_, err = users.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "name", Value: 1}},
		Options: options.Index().SetUnique(true).SetCollation(ciCollation)})
	if err != nil {
		t.Fatal(err)
	}
	mustInsert(t, users, bson.D{{Key: "name", Value: "Alice"}})
	_, err = users.InsertOne(ctx, bson.D{{Key: "name", Value: "alice"}})
	wantCode(t, err, 11000)
	// A bad collation on create and createIndexes.
	wantCode(t, db.CreateCollection(ctx, "bad", options.CreateCollection().SetCollation(&options.Collation{Locale: "xx"})), 2)
	_, err = users.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "b", Value: 1}}, Options: options.Index().SetCollation(&options.Collation{Locale: "en", Strength: 9})})
	wantCode(t, err, 2)
}

// TestViewCollation: a view's collation is the one create names (a view
// does not take its collection's default), reads of the view run under
// it, another named by a read is OptionNotSupportedOnView (167), and a
// view on a view has that view's collation
// (https://www.mongodb.com/docs/manual/reference/method/db.createView/).
func TestViewCollation(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	db := ts.Client.Database("coll")
	if err := db.CreateCollection(ctx, "c", options.CreateCollection().SetCollation(ciCollation)); err != nil {
		t.Fatal(err)
	}
	mustInsert(t, db.Collection("c"), bson.D{{Key: "_id", Value: 1}, {Key: "s", Value: "foo"}}, bson.D{{Key: "_id", Value: 2}, {Key: "s", Value: "FOO"}})
	foo := bson.D{{Key: "s", Value: "foo"}}
	wantIDs(t, db.Collection("c"), foo, 1, 2)
	if err := db.CreateView(ctx, "plain", "c", mongo.Pipeline{}); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, db.Collection("plain"), foo, 1)
	if err := db.CreateView(ctx, "ci", "c", mongo.Pipeline{}, options.CreateView().SetCollation(ciCollation)); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, db.Collection("ci"), foo, 1, 2)
	if n, err := db.Collection("ci").CountDocuments(ctx, foo); err != nil || n != 2 {
		t.Errorf("count on the view: %d %v", n, err)
	}
	// The view's own collation may be named; another may not.
	if _, err := db.Collection("ci").Find(ctx, foo, options.Find().SetCollation(ciCollation)); err != nil {
		t.Errorf("find naming the view's collation: %v", err)
	}
	_, err := db.Collection("ci").Find(ctx, foo, options.Find().SetCollation(&options.Collation{Locale: "fr"}))
	wantCode(t, err, 167)
	err = db.RunCommand(ctx, bson.D{{Key: "create", Value: "onci"}, {Key: "viewOn", Value: "ci"}, {Key: "pipeline", Value: bson.A{}},
		{Key: "collation", Value: bson.D{{Key: "locale", Value: "fr"}}}}).Err()
	wantCode(t, err, 167)
	if err := db.CreateView(ctx, "onci", "ci", mongo.Pipeline{}); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, db.Collection("onci"), foo, 1, 2)
	specs, err := db.ListCollectionSpecifications(ctx, bson.D{{Key: "name", Value: bson.D{{Key: "$in", Value: bson.A{"ci", "onci", "plain"}}}}})
	if err != nil || len(specs) != 3 {
		t.Fatal(specs, err)
	}
	for _, s := range specs {
		_, has := s.Options.LookupErr("collation")
		if want := s.Name != "plain"; (has == nil) != want {
			t.Errorf("%s: options %s, collation listed %v, want %v", s.Name, s.Options, has == nil, want)
		}
	}
}

// TestCollationUpdateOperators: the operators of an update that compare
// values do so under its collation, or the collection's default
// (jstests/core/collation_update.js): $addToSet, $pull, $pullAll, $min,
// $max, $push's $sort, and array filters.
func TestCollationUpdateOperators(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	db := ts.Client.Database("collupd")
	coll := db.Collection("c")
	ci := options.UpdateOne().SetCollation(ciCollation)
	cs := options.UpdateOne().SetCollation(&options.Collation{Locale: "en_US", Strength: 3})
	num := options.UpdateOne().SetCollation(&options.Collation{Locale: "en_US", NumericOrdering: true})
	arrayOf := func() bson.A {
		t.Helper()
		var d struct {
			A bson.A `bson:"a"`
		}
		if err := coll.FindOne(ctx, bson.D{}).Decode(&d); err != nil {
			t.Fatal(err)
		}
		return d.A
	}
	reset := func(a any) {
		t.Helper()
		if _, err := coll.DeleteMany(ctx, bson.D{}); err != nil {
			t.Fatal(err)
		}
		mustInsert(t, coll, bson.D{{Key: "a", Value: a}})
	}
	update := func(u bson.D, opts *options.UpdateOneOptionsBuilder) {
		t.Helper()
		if _, err := coll.UpdateOne(ctx, bson.D{}, u, opts); err != nil {
			t.Fatal(err)
		}
	}
	want := func(what string, want ...any) {
		t.Helper()
		if got := arrayOf(); !slices.Equal([]any(got), want) {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}

	reset(bson.A{"foo"})
	update(bson.D{{Key: "$addToSet", Value: bson.D{{Key: "a", Value: "FOO"}}}}, ci)
	want("$addToSet FOO under strength 2", "foo")
	update(bson.D{{Key: "$addToSet", Value: bson.D{{Key: "a", Value: "FOO"}}}}, cs)
	want("$addToSet FOO under strength 3", "foo", "FOO")

	reset(bson.A{"foo", "FOO"})
	update(bson.D{{Key: "$pull", Value: bson.D{{Key: "a", Value: "foo"}}}}, cs)
	want("$pull foo under strength 3", "FOO")
	update(bson.D{{Key: "$pull", Value: bson.D{{Key: "a", Value: "foo"}}}}, ci)
	want("$pull foo under strength 2")

	reset(bson.A{"124", "1234"})
	update(bson.D{{Key: "$pull", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$lt", Value: "1234"}}}}}}, cs)
	want("$pull $lt under strength 3", "124", "1234")
	update(bson.D{{Key: "$pull", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$lt", Value: "1234"}}}}}}, num)
	want("$pull $lt under numericOrdering", "1234")

	reset(bson.A{"foo", "bar"})
	update(bson.D{{Key: "$pullAll", Value: bson.D{{Key: "a", Value: bson.A{"FOO", "BAR"}}}}}, ci)
	want("$pullAll under strength 2")

	reset(bson.A{"1234", "124"})
	update(bson.D{{Key: "$push", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$each", Value: bson.A{"1230"}}, {Key: "$sort", Value: 1}}}}}}, num)
	want("$push $sort under numericOrdering", "124", "1230", "1234")

	if _, err := coll.DeleteMany(ctx, bson.D{}); err != nil {
		t.Fatal(err)
	}
	mustInsert(t, coll, bson.D{{Key: "x", Value: "124"}})
	if _, err := coll.UpdateOne(ctx, bson.D{}, bson.D{{Key: "$min", Value: bson.D{{Key: "x", Value: "1234"}}}}, num); err != nil {
		t.Fatal(err)
	}
	if n, _ := coll.CountDocuments(ctx, bson.D{{Key: "x", Value: "124"}}); n != 1 {
		t.Errorf("$min under numericOrdering changed 124")
	}
	if _, err := coll.UpdateOne(ctx, bson.D{}, bson.D{{Key: "$max", Value: bson.D{{Key: "x", Value: "1234"}}}}, num); err != nil {
		t.Fatal(err)
	}
	if n, _ := coll.CountDocuments(ctx, bson.D{{Key: "x", Value: "1234"}}); n != 1 {
		t.Errorf("$max under numericOrdering left 124")
	}

	// Array filters compare under the collation too (derived: they are
	// queries of the statement).
	reset(bson.A{"foo", "bar"})
	_, err := coll.UpdateOne(ctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "a.$[e]", Value: "X"}}}},
		options.UpdateOne().SetCollation(ciCollation).SetArrayFilters([]any{bson.D{{Key: "e", Value: "FOO"}}}))
	if err != nil {
		t.Fatal(err)
	}
	want("array filter under strength 2", "X", "bar")

	// The collection's default collation applies to an update naming none.
	if err := db.CreateCollection(ctx, "ci", options.CreateCollection().SetCollation(ciCollation)); err != nil {
		t.Fatal(err)
	}
	coll = db.Collection("ci")
	mustInsert(t, coll, bson.D{{Key: "a", Value: bson.A{"foo", "FOO"}}})
	update(bson.D{{Key: "$pull", Value: bson.D{{Key: "a", Value: "foo"}}}}, options.UpdateOne())
	want("$pull under the default collation")
}
