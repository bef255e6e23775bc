package auth

import (
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/xdg-go/scram"
)

// Iteration counts MongoDB uses unless told otherwise
// (scramIterationCount and scramSHA256IterationCount), and the lowest it
// accepts for each.
const (
	DefaultSHA1Iterations   = 10000
	DefaultSHA256Iterations = 15000
	MinSHA1Iterations       = 5000
	MinSHA256Iterations     = 4096
)

// Salt lengths MongoDB generates: the digest size of each hash less four
// bytes (RFC 5802 leaves the length to the server).
const (
	sha1SaltLen   = 16
	sha256SaltLen = 28
)

// NewScramCredential derives the stored keys of password for user under
// mech with a fresh random salt. iterations of 0 means the mechanism's
// default.
//
// The secret SCRAM is run over differs by mechanism, as in MongoDB: for
// SCRAM-SHA-1 it is the hex MD5 digest of "user:mongo:password" (the
// drivers do the same digest on their side), for SCRAM-SHA-256 the
// password itself after SASLprep.
func NewScramCredential(mech Mechanism, user, password string, iterations int) (ScramCredential, error) {
	hash, secret, saltLen, err := scramSecret(mech, user, password)
	if err != nil {
		return ScramCredential{}, err
	}
	if iterations == 0 {
		iterations = DefaultIterations(mech)
	}
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return ScramCredential{}, fmt.Errorf("auth: salt for %s: %w", mech, err)
	}
	return deriveCredential(hash, user, secret, salt, iterations)
}

// DefaultIterations is mech's iteration count when none is configured.
func DefaultIterations(mech Mechanism) int {
	if mech == ScramSHA1 {
		return DefaultSHA1Iterations
	}
	return DefaultSHA256Iterations
}

func deriveCredential(hash scram.HashGeneratorFcn, user, secret string, salt []byte, iterations int) (ScramCredential, error) {
	client, err := hash.NewClient(user, secret, "")
	if err != nil {
		// SASLprep refused the password (prohibited characters).
		return ScramCredential{}, fmt.Errorf("auth: password cannot be used: %w", err)
	}
	stored := client.GetStoredCredentials(scram.KeyFactors{Salt: string(salt), Iters: iterations})
	return ScramCredential{
		IterationCount: iterations,
		Salt:           salt,
		StoredKey:      stored.StoredKey,
		ServerKey:      stored.ServerKey,
	}, nil
}

// scramSecret returns the hash of mech, the secret its keys derive from,
// and the salt length to generate.
func scramSecret(mech Mechanism, user, password string) (scram.HashGeneratorFcn, string, int, error) {
	switch mech {
	case ScramSHA1:
		return scram.SHA1, mongoPasswordDigest(user, password), sha1SaltLen, nil
	case ScramSHA256:
		return scram.SHA256, password, sha256SaltLen, nil
	}
	return nil, "", 0, fmt.Errorf("auth: %q is not a SCRAM mechanism", mech)
}

// mongoPasswordDigest is MongoDB's pre-SCRAM password digest, which
// SCRAM-SHA-1 runs over instead of the password.
func mongoPasswordDigest(user, password string) string {
	sum := md5.Sum([]byte(user + ":mongo:" + password))
	return hex.EncodeToString(sum[:])
}
