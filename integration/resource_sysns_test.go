package integration

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestSystemNamespaces: clients may not create or write system.*
// collections other than those MongoDB lets them (system.js, system.users,
// admin.system.version...): InvalidNamespace with MongoDB's messages. The
// users and roles of admin are written only by the user management
// commands (usermgmt_test.go).
func TestSystemNamespaces(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	wantErr := func(err error, code int, msg string) {
		t.Helper()
		var ce mongo.CommandError
		if !errors.As(err, &ce) || int(ce.Code) != code || ce.Message != msg {
			t.Errorf("got %v, want code %d %q", err, code, msg)
		}
	}
	test := ts.Client.Database("test")
	doc := bson.D{{Key: "_id", Value: 1}}
	_, err := test.Collection("system.foo").InsertOne(ctx, doc)
	wantErr(err, 73, "Invalid system namespace: test.system.foo")
	wantErr(test.CreateCollection(ctx, "system.foo"), 73, "Invalid system namespace: test.system.foo")
	_, err = test.Collection("system.foo").Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}})
	wantErr(err, 73, "Invalid system namespace: test.system.foo")
	_, err = test.Collection("system.foo").UpdateOne(ctx, doc, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}})
	wantErr(err, 73, "Invalid system namespace: test.system.foo")
	_, err = test.Collection("system.foo").DeleteMany(ctx, bson.D{})
	wantErr(err, 73, "Invalid system namespace: test.system.foo")
	err = test.Collection("system.foo").FindOneAndDelete(ctx, doc).Err()
	wantErr(err, 73, "Invalid system namespace: test.system.foo")
	_, err = test.Collection("system.profile").InsertOne(ctx, doc)
	wantErr(err, 73, "cannot write to test.system.profile")
	_, err = test.Collection("system.views").InsertOne(ctx, doc)
	wantErr(err, 73, "cannot write to test.system.views")
	_, err = test.Collection("foo.system.bar").InsertOne(ctx, doc)
	wantErr(err, 2, "Invalid namespace: test.foo.system.bar")

	// The ones clients may write.
	for _, ns := range []string{"test.system.js", "test.system.users", "admin.system.version", "local.system.replset", "config.system.sessions"} {
		db, coll, _ := strings.Cut(ns, ".")
		if _, err := ts.Client.Database(db).Collection(coll).InsertOne(ctx, doc); err != nil {
			t.Errorf("insert into %s: %v", ns, err)
		}
	}
	names, err := test.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(names, "system.foo") || !slices.Contains(names, "system.js") {
		t.Errorf("collections of test: %v", names)
	}
}
