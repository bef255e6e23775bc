package auth

import (
	"bytes"
	"encoding/base64"
	"testing"
)

// TestScramSHA1KnownVector checks the SCRAM-SHA-1 password digest against
// the example of MongoDB's authentication specification for drivers (user
// "user", password "pencil"); the conversation tests check the keys.
func TestScramSHA1KnownVector(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("QSXCR+Q6sek8bf92")
	hash, secret, _, err := scramSecret(ScramSHA1, "user", "pencil")
	if err != nil {
		t.Fatal(err)
	}
	if secret != "1c33006ec1ffd90f9cadcbcc0e118200" {
		t.Fatalf("digest = %s", secret)
	}
	c, err := deriveCredential(hash, "user", secret, salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.StoredKey) != 20 || len(c.ServerKey) != 20 {
		t.Fatalf("key sizes %d %d", len(c.StoredKey), len(c.ServerKey))
	}
}

func TestNewScramCredentialFreshSalt(t *testing.T) {
	for _, mech := range []Mechanism{ScramSHA1, ScramSHA256} {
		a, err := NewScramCredential(mech, "u", "p", 0)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := NewScramCredential(mech, "u", "p", 0)
		if bytes.Equal(a.Salt, b.Salt) || bytes.Equal(a.StoredKey, b.StoredKey) {
			t.Fatalf("%s: two credentials share salt or keys", mech)
		}
		if a.IterationCount != DefaultIterations(mech) {
			t.Fatalf("%s: iterations %d", mech, a.IterationCount)
		}
	}
	if _, err := NewScramCredential(X509, "u", "p", 0); err == nil {
		t.Fatal("X509 has no SCRAM credential")
	}
}
