package auth

import (
	"crypto/rand"
	"testing"
)

// FuzzConversation feeds arbitrary client messages to a conversation. It
// must never panic, and never authenticate anyone but "user", the one user
// whose password a client could know: "locked" has a password nobody
// keeps, and other names do not exist.
func FuzzConversation(f *testing.F) {
	const serverNonce = "fixedServerNonce"
	creds := map[Mechanism]map[string]ScramCredential{}
	for _, mech := range []Mechanism{ScramSHA1, ScramSHA256} {
		user, err := NewScramCredential(mech, "user", "pencil", minIterations(mech))
		if err != nil {
			f.Fatal(err)
		}
		locked, err := NewScramCredential(mech, "locked", rand.Text(), minIterations(mech))
		if err != nil {
			f.Fatal(err)
		}
		creds[mech] = map[string]ScramCredential{"user": user, "locked": locked}

		// A valid exchange as seed: with both nonces fixed it replays.
		conv, _ := newConversation(mech, lookupIn(creds[mech]), func() string { return serverNonce })
		client := clientFor(f, mech, "user", "pencil")
		first, _ := client.Step("")
		reply, err := conv.Step([]byte(first))
		if err != nil {
			f.Fatal(err)
		}
		final, _ := client.Step(string(reply))
		f.Add(mech == ScramSHA1, first, final, []byte{})
		f.Add(mech == ScramSHA1, "n,,n=locked,r=abc", "c=biws,r=abc"+serverNonce+",p=AAAA", []byte("x"))
	}
	f.Add(false, "y,,n=user,r=", "c=,r=,p=", []byte(nil))
	f.Add(true, "n,a=user,n=user,r=a,m=x", "c=biws,r=a"+serverNonce+",e=x,p=AAAA", []byte{0})

	f.Fuzz(func(t *testing.T, sha1 bool, first, final string, extra []byte) {
		mech := ScramSHA256
		if sha1 {
			mech = ScramSHA1
		}
		conv, err := newConversation(mech, lookupIn(creds[mech]), func() string { return serverNonce })
		if err != nil {
			t.Fatal(err)
		}
		for _, msg := range [][]byte{[]byte(first), []byte(final), extra} {
			if _, err := conv.Step(msg); err != nil {
				if err != ErrAuthenticationFailed {
					t.Fatalf("error %v is not ErrAuthenticationFailed", err)
				}
				if !conv.Done() || conv.Valid() {
					t.Fatal("failed conversation not done, or valid")
				}
				break
			}
		}
		if conv.Valid() && conv.Username() != "user" {
			t.Fatalf("authenticated %q", conv.Username())
		}
	})
}

func lookupIn(creds map[string]ScramCredential) func(string) (ScramCredential, error) {
	return func(user string) (ScramCredential, error) {
		if c, ok := creds[user]; ok {
			return c, nil
		}
		return ScramCredential{}, ErrUnknownUser
	}
}
