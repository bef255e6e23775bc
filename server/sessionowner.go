package server

// Who owns a session. As in MongoDB, a session is the pair of the UUID a
// client names and the digest of the user it is authenticated as
// (session.Key): with access control one user cannot use, end or kill
// another's sessions, nor read their cursors or replay their retryable
// writes, by naming their UUIDs. Without it every client is the
// unauthenticated user, whose digest is session.NoUser.
//
// A request carries its session packed in a string (Request.lsid), which
// the cursors opened in it and its entry in currentOp keep, so that the
// kill commands can match them.

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/auth"
	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/session"
)

// packedKeyLen is the length of a packed session key: the id, then the
// user's digest.
const packedKeyLen = len(session.ID{}) + len(session.UID{})

// packKey packs k as Request.lsid carries it.
func packKey(k session.Key) string {
	var b [packedKeyLen]byte
	packInto(&b, k)
	return string(b[:])
}

func packInto(b *[packedKeyLen]byte, k session.Key) {
	copy(b[:len(k.ID)], k.ID[:])
	copy(b[len(k.ID):], k.UID[:])
}

// lsidOf unpacks a session key packed by packKey; false for "" (no
// session).
func lsidOf(s string) (session.Key, bool) {
	var k session.Key
	if len(s) != packedKeyLen {
		return k, false
	}
	copy(k.ID[:], s)
	copy(k.UID[:], s[len(k.ID):])
	return k, true
}

// sessionOwner caches the digest and name of a connection's user, which
// every command with an lsid needs.
type sessionOwner struct {
	user *authedUser // whose they are; nil for none
	uid  session.UID
	name string
	// client is how principal names the user, and addr the connection's
	// address for when it has none.
	client, addr string
}

// ownerOf returns the connection's user's digest and name ("user@db"),
// computed again only when the user changed; session.NoUser and "" for
// none.
func (c *Conn) ownerOf() (session.UID, string) {
	u := c.auth.user
	if u == nil {
		return session.NoUser, ""
	}
	o := &c.owner
	if o.user != u {
		if o.user == nil || o.user.name != u.name || o.user.db != u.db {
			o.uid, o.name = session.UserUID(u.name, u.db), u.name+"@"+u.db
			o.client = "user " + o.name
		}
		o.user = u
	}
	return o.uid, o.name
}

// uid is the digest of the connection's user, session.NoUser for none.
func (c *Conn) uid() session.UID {
	uid, _ := c.ownerOf()
	return uid
}

// userName names the connection's user as sessions show it, "user@db";
// "" for none.
func (c *Conn) userName() string {
	_, name := c.ownerOf()
	return name
}

// requestSession reads the session of a command's lsid, packed, "" for
// none: its id, and the uid the lsid gives or else the connection user's
// digest. foreign reports a uid given that is not the connection user's,
// which only a client allowed to impersonate may give (see useSession).
// With access control a client that has not authenticated has no session,
// as in MongoDB: no user digest makes sense for it. v is the lsid's value,
// Type 0 for none.
func (c *Conn) requestSession(v bson.RawValue) (lsid string, foreign bool) {
	doc, ok := v.DocumentOK()
	if !ok || c.srv.cfg.Auth && c.auth.user == nil {
		return "", false
	}
	// One pass finds both fields; the first of a name counts, as for a
	// lookup.
	var id, uid bson.RawValue
	for key, f := range command.Fields(doc) {
		switch {
		case string(key) == "id" && id.Type == 0:
			id = f
		case string(key) == "uid" && uid.Type == 0:
			uid = f
		}
	}
	var k session.Key
	_, data, ok := id.BinaryOK()
	if !ok || len(data) != len(k.ID) {
		return "", false
	}
	copy(k.ID[:], data)
	k.UID = c.uid()
	if uid.Type != 0 {
		if subtype, data, ok := uid.BinaryOK(); ok && subtype == bson.TypeBinaryGeneric && len(data) == len(k.UID) {
			foreign = string(data) != string(k.UID[:])
			copy(k.UID[:], data)
		}
	}
	// A connection's commands mostly come in the same session: the last
	// packed key spares a string per command.
	var b [packedKeyLen]byte
	packInto(&b, k)
	if string(b[:]) != c.lastLsid {
		c.lastLsid = string(b[:])
	}
	return c.lastLsid, foreign
}

// mayImpersonate reports whether the client may name other users'
// sessions: always without access control, and with it when it holds
// impersonate on the cluster or one of also's actions there.
func (s *Server) mayImpersonate(ctx context.Context, req *Request, also ...auth.Action) (bool, error) {
	if !s.cfg.Auth {
		return true, nil
	}
	u, err := s.currentUser(ctx, req.Conn)
	if err != nil || u == nil {
		return false, err
	}
	cluster := auth.Resource{Cluster: true}
	if u.grants.Allows(cluster, "impersonate") {
		return true, nil
	}
	for _, a := range also {
		if u.grants.Allows(cluster, a) {
			return true, nil
		}
	}
	return false, nil
}

// errSpoofedUID refuses a session id naming another user's digest.
var errSpoofedUID = mongoerr.New(mongoerr.Unauthorized, "Unauthorized to set user digest in LogicalSessionId")

// sessionKeys resolves the sessions a command lists to the caller's:
// each id with the uid it gives, which must be the caller's own unless the
// caller may impersonate (or holds one of spoof's actions on the
// cluster), or else with the caller's digest. With access control a
// client that has not authenticated has no sessions to name (endSessions
// needs no authentication).
func (s *Server) sessionKeys(ctx context.Context, req *Request, ids []lsidArg, spoof ...auth.Action) ([]session.Key, error) {
	if len(ids) > 0 && s.cfg.Auth && req.Conn.auth.user == nil {
		return nil, mongoerr.New(mongoerr.Unauthorized, "Logical sessions require authentication")
	}
	own := req.Conn.uid()
	keys := make([]session.Key, len(ids))
	checked := false
	for i, id := range ids {
		keys[i] = session.Key{ID: id.id, UID: own}
		if id.uid == nil {
			continue
		}
		copy(keys[i].UID[:], id.uid)
		if keys[i].UID == own || checked {
			continue
		}
		ok, err := s.mayImpersonate(ctx, req, spoof...)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, errSpoofedUID
		}
		checked = true
	}
	return keys, nil
}

// retrySession is the session under which the engine records a session's
// retryable writes: the unauthenticated user's sessions by their UUID, as
// before sessions had owners, so that records written then stay valid;
// every other user's by 16 bytes of SHA-256(id, uid), so that two users
// naming the same UUID never share records.
func retrySession(k session.Key) [16]byte {
	if k.UID == session.NoUser {
		return k.ID
	}
	h := sha256.New()
	h.Write(k.ID[:])
	h.Write(k.UID[:])
	var out [16]byte
	copy(out[:], h.Sum(nil))
	return out
}

// lsidDoc is the session's LogicalSessionId document, {id, uid}, as
// MongoDB's oplog entries carry it.
func lsidDoc(k session.Key) []byte {
	idx, dst := bsoncore.AppendDocumentStart(nil)
	dst = bsoncore.AppendBinaryElement(dst, "id", bson.TypeBinaryUUID, k.ID[:])
	dst = bsoncore.AppendBinaryElement(dst, "uid", bson.TypeBinaryGeneric, k.UID[:])
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// formatLsid writes a packed session key as MongoDB does in messages: the
// UUID, the user's digest and two empty parts for transactions.
func formatLsid(lsid string) string {
	k, ok := lsidOf(lsid)
	if !ok {
		return fmt.Sprintf("%x - %s -  - ", lsid, base64.StdEncoding.EncodeToString(session.NoUser[:]))
	}
	return fmt.Sprintf("%s - %s -  - ", k.ID, k.UID)
}
