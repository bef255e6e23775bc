package server

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/session"
)

func lsidBody(t *testing.T, lsid bson.D) bson.Raw {
	t.Helper()
	b, err := bson.Marshal(bson.D{{Key: "find", Value: "c"}, {Key: "lsid", Value: lsid}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A command's session is its lsid's UUID with the connection user's
// digest, or the uid the lsid names, which is foreign when not the
// user's; with access control an unauthenticated client has none.
func TestRequestSession(t *testing.T) {
	id := session.ID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	idOnly := bson.D{{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: id[:]}}}
	uidA := session.UserUID("a", "app")
	withUID := func(uid session.UID) bson.D {
		return append(append(bson.D{}, idOnly...), bson.E{Key: "uid", Value: bson.Binary{Data: uid[:]}})
	}
	srv := &Server{}
	c := &Conn{srv: srv}
	for _, tc := range []struct {
		name    string
		auth    bool
		user    *authedUser
		lsid    bson.D
		want    string
		foreign bool
	}{
		{"no access control", false, nil, idOnly, packKey(session.Key{ID: id, UID: session.NoUser}), false},
		{"no access control, a uid", false, nil, withUID(uidA), packKey(session.Key{ID: id, UID: uidA}), true},
		{"unauthenticated", true, nil, idOnly, "", false},
		{"a", true, &authedUser{name: "a", db: "app"}, idOnly, packKey(session.Key{ID: id, UID: uidA}), false},
		{"a naming its uid", true, &authedUser{name: "a", db: "app"}, withUID(uidA), packKey(session.Key{ID: id, UID: uidA}), false},
		{"b naming a's uid", true, &authedUser{name: "b", db: "app"}, withUID(uidA), packKey(session.Key{ID: id, UID: uidA}), true},
		{"b", true, &authedUser{name: "b", db: "app"}, idOnly, packKey(session.Key{ID: id, UID: session.UserUID("b", "app")}), false},
		{"not a UUID", false, nil, bson.D{{Key: "id", Value: "x"}}, "", false},
	} {
		srv.cfg.Auth, c.auth.user = tc.auth, tc.user
		got, foreign := c.requestSession(lsidBody(t, tc.lsid).Lookup("lsid"))
		if got != tc.want || foreign != tc.foreign {
			k, _ := lsidOf(got)
			t.Errorf("%s: session %v (foreign %v), want foreign %v", tc.name, k, foreign, tc.foreign)
		}
	}
	c.auth.user = &authedUser{name: "b", db: "app"}
	if name := c.userName(); name != "b@app" {
		t.Errorf("user name %q", name)
	}
	c.auth.user = nil
	if uid, name := c.ownerOf(); uid != session.NoUser || name != "" {
		t.Errorf("no user: %v %q", uid, name)
	}
}

// The unauthenticated user's retry records are kept under the UUID, as
// before sessions had owners; each other user's under a digest of its own.
func TestRetrySession(t *testing.T) {
	id := session.ID{1}
	if got := retrySession(session.Key{ID: id, UID: session.NoUser}); got != id {
		t.Errorf("no user: %x, want the UUID", got)
	}
	a := retrySession(session.Key{ID: id, UID: session.UserUID("a", "app")})
	b := retrySession(session.Key{ID: id, UID: session.UserUID("b", "app")})
	if a == b || a == id || b == id {
		t.Errorf("a %x, b %x, UUID %x: want three", a, b, id)
	}
}

// The kill commands' patterns match sessions by key, by user or all.
func TestSessionMatch(t *testing.T) {
	a := session.Key{ID: session.ID{1}, UID: session.UserUID("a", "app")}
	b := session.Key{ID: session.ID{1}, UID: session.UserUID("b", "app")}
	for _, tc := range []struct {
		name         string
		m            sessionMatch
		wantA, wantB bool
	}{
		{"all", sessionMatch{all: true}, true, true},
		{"a's key", sessionMatch{keys: map[session.Key]bool{a: true}}, true, false},
		{"b's user", sessionMatch{uids: map[session.UID]bool{b.UID: true}}, false, true},
		{"none", sessionMatch{}, false, false},
	} {
		if got := tc.m.match(packKey(a)); got != tc.wantA {
			t.Errorf("%s: a %v", tc.name, got)
		}
		if got := tc.m.match(packKey(b)); got != tc.wantB {
			t.Errorf("%s: b %v", tc.name, got)
		}
		if tc.m.match("") {
			t.Errorf("%s matches no session", tc.name)
		}
	}
}
