package server

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/auth"
	"github.com/lethedb/lethe/usermgmt"
)

// TestAuthSchemaUpgradedAtOpen: a store whose users predate the schema
// version document gets it when the server opens, so that mongodump can
// carry its users at once.
func TestAuthSchemaUpgradedAtOpen(t *testing.T) {
	dir := t.TempDir()
	open := func() *Server {
		t.Helper()
		s, err := New(Config{Listen: "127.0.0.1:0", DataDir: dir, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	authSchema := bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, "authSchema")}
	s := open()
	// A user written as an older Lethe did: no admin.system.version.
	u := &auth.User{ID: "app.u", Name: "u", DB: "app", UserID: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: make([]byte, 16)},
		Roles: []auth.RoleName{{Role: "read", DB: "app"}}}
	if res, err := s.eng.Insert(context.Background(), usermgmt.DB, usermgmt.UsersCollection, []bson.Raw{auth.MarshalUser(u)}, true); err != nil || len(res.Errors) > 0 {
		t.Fatalf("insert: %v %v", err, res.Errors)
	}
	if doc, _ := s.eng.FindByID(context.Background(), usermgmt.DB, "system.version", authSchema); doc != nil {
		t.Fatalf("schema version already there: %v", doc)
	}
	s.Shutdown(context.Background())

	s = open()
	defer s.Shutdown(context.Background())
	doc, err := s.eng.FindByID(context.Background(), usermgmt.DB, "system.version", authSchema)
	if err != nil || doc == nil {
		t.Fatalf("no schema version after opening: %v %v", doc, err)
	}
	if v, ok := doc.Lookup("currentVersion").Int32OK(); !ok || v != usermgmt.SchemaVersion {
		t.Fatalf("schema version %v", doc)
	}
}
