package auth

import (
	"bytes"
	"encoding/base64"
	"reflect"
	"testing"

	"github.com/xdg-go/scram"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/mongoerr"
)

func TestUserDocumentShape(t *testing.T) {
	c1, err := NewScramCredential(ScramSHA1, "alice", "secret", 0)
	if err != nil {
		t.Fatal(err)
	}
	c256, err := NewScramCredential(ScramSHA256, "alice", "secret", 0)
	if err != nil {
		t.Fatal(err)
	}
	u := &User{
		UserID:                     bson.Binary{Subtype: 4, Data: bytes.Repeat([]byte{7}, 16)},
		Name:                       "alice",
		DB:                         "test",
		Credentials:                map[Mechanism]ScramCredential{ScramSHA1: c1, ScramSHA256: c256},
		Roles:                      []RoleName{{"readWrite", "test"}, {"read", "reporting"}},
		CustomData:                 mustMarshal(bson.D{{Key: "employee", Value: int32(12)}}),
		AuthenticationRestrictions: bson.Raw(mustMarshal(bson.D{{Key: "0", Value: bson.D{{Key: "clientSource", Value: bson.A{"127.0.0.1"}}}}})),
	}
	raw := MarshalUser(u)
	// The keys MongoDB's user documents have, in its order.
	var keys []string
	elems, _ := raw.Elements()
	for _, e := range elems {
		keys = append(keys, e.Key())
	}
	if want := []string{"_id", "userId", "user", "db", "credentials", "authenticationRestrictions", "customData", "roles"}; !reflect.DeepEqual(keys, want) {
		t.Fatalf("keys %v, want %v", keys, want)
	}
	if got, _ := raw.Lookup("authenticationRestrictions", "0", "clientSource", "0").StringValueOK(); got != "127.0.0.1" {
		t.Errorf("authenticationRestrictions %s", raw.Lookup("authenticationRestrictions"))
	}
	if id := raw.Lookup("_id").StringValue(); id != "test.alice" {
		t.Errorf("_id %q", id)
	}
	sha256 := raw.Lookup("credentials", "SCRAM-SHA-256")
	if n := sha256.Document().Lookup("iterationCount").Int32(); n != DefaultSHA256Iterations {
		t.Errorf("iterationCount %d", n)
	}
	salt, err := base64.StdEncoding.DecodeString(sha256.Document().Lookup("salt").StringValue())
	if err != nil || !bytes.Equal(salt, c256.Salt) {
		t.Errorf("salt not the base64 of the credential's: %v", err)
	}

	back, err := ParseUser(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.ID = "test.alice"
	u.Mechanisms = []Mechanism{ScramSHA1, ScramSHA256}
	if !reflect.DeepEqual(back, u) {
		t.Errorf("round trip:\n got %+v\nwant %+v", back, u)
	}
}

func TestExternalUserHasNoPasswordCredentials(t *testing.T) {
	u := &User{Name: "CN=client", DB: ExternalDB, Roles: []RoleName{}}
	raw := MarshalUser(u)
	if ext, _ := raw.Lookup("credentials", "external").BooleanOK(); !ext {
		t.Fatalf("credentials %s", raw.Lookup("credentials"))
	}
	back, err := ParseUser(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Credentials) != 0 || !reflect.DeepEqual(back.Mechanisms, []Mechanism{X509}) {
		t.Errorf("credentials %v mechanisms %v", back.Credentials, back.Mechanisms)
	}
}

func TestRoleRoundTrip(t *testing.T) {
	r := &Role{
		Name:  "auditor",
		DB:    "admin",
		Roles: []RoleName{{"read", "sales"}},
		Privileges: []Privilege{
			{Resource: Resource{DB: "sales", Collection: "orders"}, Actions: []Action{"find", "update"}},
			{Resource: Resource{Cluster: true}, Actions: []Action{"serverStatus"}},
			{Resource: Resource{AnyResource: true}, Actions: []Action{"anyAction"}},
		},
	}
	raw := MarshalRole(r)
	if got := raw.Lookup("privileges", "1", "resource").String(); got != `{"cluster": true}` {
		t.Errorf("cluster resource %s", got)
	}
	back, err := ParseRole(raw)
	if err != nil {
		t.Fatal(err)
	}
	r.ID = "admin.auditor"
	if !reflect.DeepEqual(back, r) {
		t.Errorf("round trip:\n got %+v\nwant %+v", back, r)
	}
}

func rawValue(t *testing.T, v any) bson.RawValue {
	t.Helper()
	typ, data, err := bson.MarshalValue(v)
	if err != nil {
		t.Fatal(err)
	}
	return bson.RawValue{Type: typ, Value: data}
}

func TestParseRoleNames(t *testing.T) {
	got, err := ParseRoleNames(rawValue(t, bson.A{"read", bson.D{{Key: "role", Value: "dbAdmin"}, {Key: "db", Value: "other"}}}), "test")
	if err != nil {
		t.Fatal(err)
	}
	if want := []RoleName{{"read", "test"}, {"dbAdmin", "other"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v", got)
	}
	for _, tc := range []struct {
		arg  any
		code mongoerr.Code
	}{
		{bson.A{int32(1)}, mongoerr.BadValue},
		{bson.A{bson.D{{Key: "role", Value: "read"}}}, mongoerr.NoSuchKey},
		{bson.A{bson.D{{Key: "role", Value: "read"}, {Key: "db", Value: int32(1)}}}, mongoerr.TypeMismatch},
	} {
		_, err := ParseRoleNames(rawValue(t, tc.arg), "test")
		if mongoerr.CodeOf(err) != tc.code {
			t.Errorf("%v: err %v, want code %d", tc.arg, err, tc.code)
		}
	}
}

func TestParsePrivilegesRefusesMalformed(t *testing.T) {
	res := bson.D{{Key: "db", Value: "d"}, {Key: "collection", Value: ""}}
	for name, arg := range map[string]bson.A{
		"no actions":      {bson.D{{Key: "resource", Value: res}}},
		"empty actions":   {bson.D{{Key: "resource", Value: res}, {Key: "actions", Value: bson.A{}}}},
		"no resource":     {bson.D{{Key: "actions", Value: bson.A{"find"}}}},
		"db only":         {bson.D{{Key: "resource", Value: bson.D{{Key: "db", Value: "d"}}}, {Key: "actions", Value: bson.A{"find"}}}},
		"cluster false":   {bson.D{{Key: "resource", Value: bson.D{{Key: "cluster", Value: false}}}, {Key: "actions", Value: bson.A{"find"}}}},
		"unknown field":   {bson.D{{Key: "resource", Value: res}, {Key: "actions", Value: bson.A{"find"}}, {Key: "x", Value: 1}}},
		"not an object":   {"find"},
		"non-string verb": {bson.D{{Key: "resource", Value: res}, {Key: "actions", Value: bson.A{int32(1)}}}},
		"unknown action":  {bson.D{{Key: "resource", Value: res}, {Key: "actions", Value: bson.A{"find", "fly"}}}},
	} {
		if _, err := ParsePrivileges(rawValue(t, arg)); mongoerr.CodeOf(err) != mongoerr.FailedToParse {
			t.Errorf("%s: err %v, want FailedToParse", name, err)
		}
	}
}

// A client-digested SCRAM-SHA-1 password gives the keys of the password
// digested here, under a fresh salt.
func TestScramSHA1FromDigest(t *testing.T) {
	digest := mongoPasswordDigest("user", "pencil")
	got, err := NewScramSHA1CredentialFromDigest("user", digest, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Salt) != sha1SaltLen || got.IterationCount != 4096 {
		t.Fatalf("salt %d bytes, %d iterations", len(got.Salt), got.IterationCount)
	}
	want, err := deriveCredential(scram.SHA1, "user", digest, got.Salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want.StoredKey, got.StoredKey) || !bytes.Equal(want.ServerKey, got.ServerKey) {
		t.Error("keys differ from those of the password")
	}
}
