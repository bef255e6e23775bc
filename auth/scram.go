package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"

	"github.com/xdg-go/scram"
)

// ErrUnknownUser is what a credential lookup returns when no such user
// exists (or the user has no credential for the mechanism).
var ErrUnknownUser = errors.New("auth: unknown user")

// ErrAuthenticationFailed is the one error a Conversation reports for every
// way authentication can fail — an unknown user, a wrong password, a
// malformed message — so that a client learns nothing about which users
// exist. The server answers it with MongoDB's code 18 AuthenticationFailed
// and the message "Authentication failed."; Conversation.Reason says what
// happened, for the log.
var ErrAuthenticationFailed = errors.New("Authentication failed.")

// Conversation is the server side of one SASL SCRAM exchange (RFC 5802,
// RFC 7677) as MongoDB runs it over saslStart and saslContinue.
//
// MongoDB's exchange has an optional third step: after the server-final
// message (which proves the server knows the keys) a client that did not
// ask for skipEmptyExchange sends an empty message, which the server
// answers with an empty payload and done: true. Done reports true as soon
// as the SCRAM messages are exchanged; Step with an empty payload after a
// success returns an empty reply, so the server can serve both forms.
type Conversation struct {
	mech     Mechanism
	conv     *scram.ServerConversation
	lookup   func(user string) (ScramCredential, error)
	nonceGen func() string // nil: xdg's default, crypto/rand

	decoy Decoy // what stands in for unknown users

	username   string
	unknown    bool   // the user did not exist: a decoy credential stood in
	lookupErr  error  // the lookup failed for another reason than ErrUnknownUser
	reason     string // why authentication failed, for the log
	failed     bool
	emptyTaken bool // the optional empty final message was answered
}

// NewConversation starts the server side of a SCRAM exchange for mech.
// lookup finds a user's stored credential for mech by the user name the
// client sends, returning ErrUnknownUser when there is none.
func NewConversation(mech Mechanism, lookup func(user string) (ScramCredential, error)) (*Conversation, error) {
	return newConversation(mech, lookup, nil)
}

// newConversation is NewConversation with a chosen server nonce, so tests
// can replay published example exchanges.
func newConversation(mech Mechanism, lookup func(user string) (ScramCredential, error), nonceGen func() string) (*Conversation, error) {
	var hash scram.HashGeneratorFcn
	switch mech {
	case ScramSHA1:
		hash = scram.SHA1
	case ScramSHA256:
		hash = scram.SHA256
	default:
		return nil, fmt.Errorf("auth: %q is not a SCRAM mechanism", mech)
	}
	c := &Conversation{mech: mech, lookup: lookup, nonceGen: nonceGen}
	server, err := hash.NewServer(c.credential)
	if err != nil {
		return nil, fmt.Errorf("auth: %s server: %w", mech, err)
	}
	if nonceGen != nil {
		server = server.WithNonceGenerator(nonceGen)
	}
	c.conv = server.NewConversation()
	return c, nil
}

// Decoy is what a server shows for users that do not exist, kept by the
// server for its lifetime: Key (NewDecoyKey) derives each unknown name's
// salt, so that a client asking twice about one name gets the same salt,
// as it would for a real user, and cannot compute it to tell decoys from
// real salts; Iterations, when not 0, is the count the server gives new
// credentials, so that decoys do not stand out by MongoDB's default.
type Decoy struct {
	Key        []byte
	Iterations int
}

// NewDecoyKey draws a key for Decoy.
func NewDecoyKey() []byte {
	k := make([]byte, 32)
	rand.Read(k) // never fails (crypto/rand panics instead)
	return k
}

// WithDecoy sets what stands in for unknown users. Without it, each
// conversation draws its own key, which lets a client that asks twice
// tell an unknown user by its changing salt. Call it before the first Step.
func (c *Conversation) WithDecoy(d Decoy) *Conversation {
	c.decoy = d
	return c
}

// credential is the lookup xdg's server calls with the client's user name.
// An unknown user gets a decoy credential instead of an error, so that the
// exchange goes on to fail at the proof exactly as a wrong password does,
// with a salt that stays the same for that name (see decoyCredential).
func (c *Conversation) credential(encoded string) (scram.StoredCredentials, error) {
	user, ok := decodeSaslName(encoded)
	if !ok {
		return scram.StoredCredentials{}, errors.New("badly escaped user name")
	}
	c.username = user
	cred, err := c.lookup(user)
	if errors.Is(err, ErrUnknownUser) {
		c.unknown = true
		if c.decoy.Key == nil {
			c.decoy.Key = NewDecoyKey()
		}
		cred = decoyCredential(c.mech, user, c.decoy)
	} else if err != nil {
		c.lookupErr = err
		return scram.StoredCredentials{}, err
	}
	return scram.StoredCredentials{
		KeyFactors: scram.KeyFactors{Salt: string(cred.Salt), Iters: cred.IterationCount},
		StoredKey:  cred.StoredKey,
		ServerKey:  cred.ServerKey,
	}, nil
}

// decodeSaslName undoes RFC 5802's escaping of ',' and '=' in a user name
// (as "=2C" and "=3D"); any other '=' makes the name invalid.
func decodeSaslName(s string) (string, bool) {
	if !strings.Contains(s, "=") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}

// Step takes the client's next message and returns the server's reply.
// Every authentication failure is ErrAuthenticationFailed; any other error
// is the lookup's own (the store could not be read), which the server
// reports as it would any internal error.
func (c *Conversation) Step(payload []byte) ([]byte, error) {
	if c.failed {
		return nil, ErrAuthenticationFailed
	}
	if c.conv.Done() {
		// The optional empty message after the server-final one.
		if len(payload) == 0 && !c.emptyTaken {
			c.emptyTaken = true
			return []byte{}, nil
		}
		// The exchange is over: refuse more, but a client that has
		// authenticated stays so.
		return nil, ErrAuthenticationFailed
	}
	reply, err := c.conv.Step(string(payload))
	if c.lookupErr != nil {
		c.failed = true
		return nil, fmt.Errorf("auth: looking up user %q: %w", c.username, c.lookupErr)
	}
	if err != nil {
		return nil, c.fail(err.Error())
	}
	if c.conv.Done() {
		if c.unknown {
			// Only a proof made from the decoy's random keys could pass,
			// and nobody has those; refuse whatever happened.
			return nil, c.fail("unknown user")
		}
		if !c.conv.Valid() {
			return nil, c.fail("invalid proof")
		}
	} else if authz := c.conv.AuthzID(); authz != "" && authz != c.conv.Username() {
		// MongoDB has no proxy authorization: a client may only act as
		// the user it authenticates as.
		return nil, c.fail("authorization identity differs from the user")
	}
	return []byte(reply), nil
}

func (c *Conversation) fail(reason string) error {
	c.failed = true
	if c.unknown && reason != "unknown user" {
		reason = "unknown user; " + reason
	}
	c.reason = reason
	return ErrAuthenticationFailed
}

// Done reports whether the SCRAM exchange is over, successfully or not.
// After a success the server either answers done: true at once (the client
// asked for skipEmptyExchange) or waits for the client's empty message.
func (c *Conversation) Done() bool { return c.failed || c.conv.Done() }

// Valid reports whether the client proved it knows the user's password.
func (c *Conversation) Valid() bool {
	return !c.failed && !c.unknown && c.conv.Done() && c.conv.Valid()
}

// Username is the user name from the client's first message, "" before it.
func (c *Conversation) Username() string { return c.username }

// Mechanism is the conversation's mechanism.
func (c *Conversation) Mechanism() Mechanism { return c.mech }

// Reason says why authentication failed, for the server's log; "" while
// nothing has failed. It never goes to the client.
func (c *Conversation) Reason() string { return c.reason }

// decoyCredential stands in for a user who does not exist: its salt is
// derived from the name under d.Key, its iteration count is d.Iterations
// (0: the mechanism's default), and its keys are random, so no proof
// matches.
func decoyCredential(mech Mechanism, user string, d Decoy) ScramCredential {
	iters := d.Iterations
	saltLen := sha256SaltLen
	keyLen := sha256.Size
	if mech == ScramSHA1 {
		saltLen = sha1SaltLen
		keyLen = 20
	}
	mac := hmac.New(sha256.New, d.Key)
	mac.Write([]byte(mech))
	mac.Write([]byte{0})
	mac.Write([]byte(user))
	salt := mac.Sum(nil)[:saltLen]
	keys := make([]byte, 2*keyLen)
	rand.Read(keys) // never fails (crypto/rand panics instead)
	if iters == 0 {
		iters = DefaultIterations(mech)
	}
	return ScramCredential{
		IterationCount: iters,
		Salt:           salt,
		StoredKey:      keys[:keyLen],
		ServerKey:      keys[keyLen:],
	}
}
