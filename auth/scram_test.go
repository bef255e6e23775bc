package auth

import (
	"bytes"
	"encoding/base64"
	"errors"
	"testing"

	"github.com/xdg-go/scram"
)

// users is a credential lookup over a fixed set of passwords, derived the
// way the store derives them.
func users(t testing.TB, mech Mechanism, passwords map[string]string) func(string) (ScramCredential, error) {
	creds := make(map[string]ScramCredential)
	for user, pw := range passwords {
		c, err := NewScramCredential(mech, user, pw, minIterations(mech))
		if err != nil {
			t.Fatal(err)
		}
		creds[user] = c
	}
	return func(user string) (ScramCredential, error) {
		c, ok := creds[user]
		if !ok {
			return ScramCredential{}, ErrUnknownUser
		}
		return c, nil
	}
}

func minIterations(mech Mechanism) int {
	if mech == ScramSHA1 {
		return MinSHA1Iterations
	}
	return MinSHA256Iterations
}

// clientFor is the client side as the drivers run it: SCRAM-SHA-1 over
// MongoDB's password digest without SASLprep, SCRAM-SHA-256 over the
// password with SASLprep.
func clientFor(t testing.TB, mech Mechanism, user, password string) *scram.ClientConversation {
	var c *scram.Client
	var err error
	if mech == ScramSHA1 {
		c, err = scram.SHA1.NewClientUnprepped(user, mongoPasswordDigest(user, password), "")
	} else {
		c, err = scram.SHA256.NewClient(user, password, "")
	}
	if err != nil {
		t.Fatal(err)
	}
	return c.NewConversation()
}

// exchange runs a whole conversation, including the optional empty final
// message, and returns the server's error (nil on success).
func exchange(t *testing.T, conv *Conversation, client *scram.ClientConversation) error {
	t.Helper()
	msg, err := client.Step("")
	if err != nil {
		t.Fatal(err)
	}
	for !conv.Done() {
		reply, err := conv.Step([]byte(msg))
		if err != nil {
			if !conv.Done() || conv.Valid() {
				t.Fatalf("after error %v: Done %v Valid %v", err, conv.Done(), conv.Valid())
			}
			return err
		}
		msg, err = client.Step(string(reply))
		if err != nil {
			t.Fatalf("client refused the server's message %q: %v", reply, err)
		}
	}
	if !client.Done() || !client.Valid() {
		t.Fatal("client did not verify the server's signature")
	}
	if !conv.Valid() {
		t.Fatal("server done without error but not valid")
	}
	// The drivers' third, empty message without skipEmptyExchange.
	reply, err := conv.Step(nil)
	if err != nil || len(reply) != 0 {
		t.Fatalf("empty final message: %q, %v", reply, err)
	}
	if _, err := conv.Step(nil); err == nil {
		t.Fatal("a second empty final message was accepted")
	}
	if !conv.Valid() {
		t.Fatal("a message after the end undid the authentication")
	}
	return nil
}

func TestConversation(t *testing.T) {
	for _, mech := range []Mechanism{ScramSHA1, ScramSHA256} {
		lookup := users(t, mech, map[string]string{"alice": "secret", "bob,=x": "pw"})
		cases := []struct {
			user, password string
			ok             bool
		}{
			{"alice", "secret", true},
			{"bob,=x", "pw", true}, // names with SCRAM's escaped characters
			{"alice", "Secret", false},
			{"alice", "", false},
			{"carol", "secret", false},
		}
		for _, tc := range cases {
			conv, err := NewConversation(mech, lookup)
			if err != nil {
				t.Fatal(err)
			}
			err = exchange(t, conv, clientFor(t, mech, tc.user, tc.password))
			if tc.ok != (err == nil) {
				t.Errorf("%s %s/%q: err %v", mech, tc.user, tc.password, err)
			}
			if !tc.ok && err != ErrAuthenticationFailed {
				t.Errorf("%s %s: error %v, want ErrAuthenticationFailed", mech, tc.user, err)
			}
			if conv.Username() != tc.user {
				t.Errorf("%s: Username %q, want %q", mech, conv.Username(), tc.user)
			}
		}
	}
}

// TestUnknownUserLooksLikeWrongPassword: a client learns nothing about
// which names exist — the exchange for an unknown name fails at the same
// step with the same error, and its salt and iteration count look like a
// real user's and stay the same when asked again.
func TestUnknownUserLooksLikeWrongPassword(t *testing.T) {
	for _, mech := range []Mechanism{ScramSHA1, ScramSHA256} {
		lookup := users(t, mech, map[string]string{"alice": "secret"})
		decoy := Decoy{Key: NewDecoyKey()} // the server's, for its lifetime
		first := func(user string) (string, *Conversation) {
			conv, _ := NewConversation(mech, lookup)
			conv.WithDecoy(decoy)
			client := clientFor(t, mech, user, "wrong")
			msg, _ := client.Step("")
			reply, err := conv.Step([]byte(msg))
			if err != nil {
				t.Fatalf("%s %s: first step refused: %v", mech, user, err)
			}
			final, err := client.Step(string(reply))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := conv.Step([]byte(final)); err != ErrAuthenticationFailed {
				t.Fatalf("%s %s: final step: %v", mech, user, err)
			}
			return string(reply), conv
		}
		known, kc := first("alice")
		unknown, uc := first("nobody")
		again, _ := first("nobody")
		if !bytes.Equal(saltOf(t, unknown), saltOf(t, again)) {
			t.Errorf("%s: the decoy salt changed between attempts", mech)
		}
		if len(saltOf(t, known)) != len(saltOf(t, unknown)) {
			t.Errorf("%s: decoy salt length differs from a real one", mech)
		}
		if kc.Reason() == "" {
			t.Errorf("%s: no reason for the log", mech)
		}
		if uc.Reason() == kc.Reason() {
			t.Errorf("%s: the log cannot tell an unknown user (%q)", mech, uc.Reason())
		}
	}
}

func saltOf(t *testing.T, serverFirst string) []byte {
	for _, f := range splitFields(serverFirst) {
		if len(f) > 2 && f[:2] == "s=" {
			b, err := base64.StdEncoding.DecodeString(f[2:])
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
	t.Fatalf("no salt in %q", serverFirst)
	return nil
}

func splitFields(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

// TestSASLprep: SCRAM-SHA-256 passwords go through SASLprep (RFC 4013) on
// both sides, so the RFC's equivalent spellings authenticate alike.
func TestSASLprep(t *testing.T) {
	cases := []struct{ stored, given string }{
		{"I\u00ADX", "IX"},     // soft hyphen maps to nothing
		{"IX", "I\u00ADX"},     // either way round
		{"\u2168", "IX"},       // ROMAN NUMERAL NINE, NFKC to "IX"
		{"\u00AA", "a"},        // FEMININE ORDINAL INDICATOR, NFKC to "a"
		{"a\u00A0b", "a b"},    // non-ASCII space maps to a space
		{"user", "USER"},       // but case is kept: these differ
		{"I\u00ADX", "I-X"},    // and a hyphen is not a soft hyphen
		{"pencil", "pencil\t"}, // nor is a tab nothing
	}
	for i, tc := range cases {
		want := i < 5
		lookup := users(t, ScramSHA256, map[string]string{"u": tc.stored})
		conv, _ := NewConversation(ScramSHA256, lookup)
		client, err := scram.SHA256.NewClient("u", tc.given, "")
		if err != nil {
			if want {
				t.Fatalf("%q: %v", tc.given, err)
			}
			continue // SASLprep refuses the password outright: also a refusal
		}
		err = exchange(t, conv, client.NewConversation())
		if want != (err == nil) {
			t.Errorf("stored %q, given %q: err %v", tc.stored, tc.given, err)
		}
	}
	if _, err := NewScramCredential(ScramSHA256, "u", "\u0007", 0); err == nil {
		t.Error("a password with a control character was accepted (RFC 4013 example 6)")
	}
}

// TestSpecExamples replays the SCRAM-SHA-1 example of MongoDB's driver
// authentication specification and the SCRAM-SHA-256 example of RFC 7677
// (which the specification also uses), with the server nonce fixed.
func TestSpecExamples(t *testing.T) {
	cases := []struct {
		mech                     Mechanism
		salt, iters, nonceTail   string
		clientFirst, serverFirst string
		clientFinal, serverFinal string
	}{
		{
			mech: ScramSHA1, salt: "rQ9ZY3MntBeuP3E1TDVC4w==", nonceTail: "Ho+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE",
			clientFirst: "n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL",
			serverFirst: "r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE,s=rQ9ZY3MntBeuP3E1TDVC4w==,i=10000",
			clientFinal: "c=biws,r=fyko+d2lbbFgONRv9qkxdawLHo+Vgk7qvUOKUwuWLIWg4l/9SraGMHEE,p=MC2T8BvbmWRckDw8oWl5IVghwCY=",
			serverFinal: "v=UMWeI25JD1yNYZRMpZ4VHvhZ9e0=",
		},
		{
			mech: ScramSHA256, salt: "W22ZaJ0SNY7soEsUEjb6gQ==", nonceTail: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
			clientFirst: "n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
			serverFirst: "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
			clientFinal: "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
			serverFinal: "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
		},
	}
	for _, tc := range cases {
		salt, _ := base64.StdEncoding.DecodeString(tc.salt)
		iters := 10000
		if tc.mech == ScramSHA256 {
			iters = 4096
		}
		hash, secret, _, err := scramSecret(tc.mech, "user", "pencil")
		if err != nil {
			t.Fatal(err)
		}
		cred, err := deriveCredential(hash, "user", secret, salt, iters)
		if err != nil {
			t.Fatal(err)
		}
		lookup := func(string) (ScramCredential, error) { return cred, nil }
		conv, err := newConversation(tc.mech, lookup, func() string { return tc.nonceTail })
		if err != nil {
			t.Fatal(err)
		}
		got, err := conv.Step([]byte(tc.clientFirst))
		if err != nil || string(got) != tc.serverFirst {
			t.Fatalf("%s server-first %q, %v", tc.mech, got, err)
		}
		got, err = conv.Step([]byte(tc.clientFinal))
		if err != nil || string(got) != tc.serverFinal {
			t.Fatalf("%s server-final %q, %v", tc.mech, got, err)
		}
		if !conv.Done() || !conv.Valid() || conv.Username() != "user" {
			t.Fatalf("%s: Done %v Valid %v", tc.mech, conv.Done(), conv.Valid())
		}
	}
}

func TestConversationRefusals(t *testing.T) {
	lookup := users(t, ScramSHA256, map[string]string{"alice": "secret"})
	steps := [][]string{
		{""},                      // empty first message
		{"garbage"},               // not SCRAM
		{"n,a=bob,n=alice,r=abc"}, // acting as another user
		{"p=tls-unique,,n=alice,r=abc"},
		{"n,,n=ali=ZZce,r=abc"}, // bad escape in the name
	}
	for _, msgs := range steps {
		conv, _ := NewConversation(ScramSHA256, lookup)
		var err error
		for _, m := range msgs {
			_, err = conv.Step([]byte(m))
		}
		if err != ErrAuthenticationFailed || !conv.Done() || conv.Valid() {
			t.Errorf("%q: err %v Done %v Valid %v", msgs, err, conv.Done(), conv.Valid())
		}
		if _, err := conv.Step(nil); err != ErrAuthenticationFailed {
			t.Errorf("%q: step after failure: %v", msgs, err)
		}
	}
	if _, err := NewConversation(X509, lookup); err == nil {
		t.Error("a SCRAM conversation for MONGODB-X509")
	}
}

// A store failure is not an authentication failure: the server reports it
// as an error of its own, not as a wrong password.
func TestConversationLookupError(t *testing.T) {
	broken := errors.New("disk on fire")
	conv, _ := NewConversation(ScramSHA256, func(string) (ScramCredential, error) {
		return ScramCredential{}, broken
	})
	_, err := conv.Step([]byte("n,,n=alice,r=abc"))
	if !errors.Is(err, broken) || conv.Valid() || !conv.Done() {
		t.Fatalf("err %v", err)
	}
}

func TestDecoyIterations(t *testing.T) {
	lookup := users(t, ScramSHA256, nil)
	for _, tc := range []struct {
		set  int
		want string
	}{{0, ",i=15000"}, {20000, ",i=20000"}} {
		conv, _ := NewConversation(ScramSHA256, lookup)
		reply, err := conv.WithDecoy(Decoy{Iterations: tc.set}).Step([]byte("n,,n=ghost,r=abc"))
		if err != nil || !bytes.HasSuffix(reply, []byte(tc.want)) {
			t.Errorf("decoy iterations %d: %q %v", tc.set, reply, err)
		}
	}
}
