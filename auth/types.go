package auth

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Mechanism names an authentication mechanism as clients spell it.
type Mechanism string

// The mechanisms Lethe accepts.
const (
	ScramSHA1   Mechanism = "SCRAM-SHA-1"
	ScramSHA256 Mechanism = "SCRAM-SHA-256"
	X509        Mechanism = "MONGODB-X509"
)

// ExternalDB is the database of users whose identity another party vouches
// for, such as a client certificate's subject.
const ExternalDB = "$external"

// ScramCredential is what the store keeps of a password for one SCRAM
// mechanism: never the password, only the salted keys RFC 5802 derives
// from it.
type ScramCredential struct {
	IterationCount int
	Salt           []byte
	StoredKey      []byte
	ServerKey      []byte
}

// RoleName names a role: roles are scoped to the database they are defined
// in.
type RoleName struct {
	Role string
	DB   string
}

// Action is one of MongoDB's privilege actions, such as "find" or
// "createIndex".
type Action string

// Resource is what a privilege applies to, in MongoDB's terms:
//
//	{cluster: true}                   Cluster
//	{anyResource: true}               AnyResource
//	{db: "d", collection: "c"}        one collection
//	{db: "d", collection: ""}         every non-system collection of d
//	{db: "", collection: "c"}         collection c of every database
//	{db: "", collection: ""}          every non-system collection
//	{system_buckets: ...}             not supported
type Resource struct {
	DB          string
	Collection  string
	Cluster     bool
	AnyResource bool
}

// Privilege grants actions on a resource.
type Privilege struct {
	Resource Resource
	Actions  []Action
}

// User is one entry of admin.system.users.
type User struct {
	// ID is the document's _id, "<db>.<name>".
	ID     string
	UserID bson.Binary // a UUID (subtype 4)
	Name   string
	DB     string
	// Credentials holds the SCRAM keys per mechanism; users of $external
	// have none.
	Credentials map[Mechanism]ScramCredential
	Roles       []RoleName
	CustomData  bson.Raw // nil when absent
	// Mechanisms are those the user may authenticate with.
	Mechanisms []Mechanism
	// AuthenticationRestrictions is kept and echoed as given.
	AuthenticationRestrictions bson.Raw
}

// Role is one entry of admin.system.roles: a user-defined role.
type Role struct {
	ID                         string // "<db>.<name>"
	Name                       string
	DB                         string
	Roles                      []RoleName
	Privileges                 []Privilege
	AuthenticationRestrictions bson.Raw
}

// Store is where users and user-defined roles live. The server implements
// it over its own collections. A missing user or role is (nil, nil).
type Store interface {
	User(ctx context.Context, db, name string) (*User, error)
	Role(ctx context.Context, db, name string) (*Role, error)
}
