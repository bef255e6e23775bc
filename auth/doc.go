// Package auth is Lethe's access control: who a client is (SCRAM-SHA-1,
// SCRAM-SHA-256 and MONGODB-X509 authentication) and what it may do
// (MongoDB's role model: built-in and user-defined roles, privileges as
// actions on resources, and the privileges each command needs).
//
// The package knows nothing of the engine or the wire (it shares only the
// error codes of mongoerr and the type names of bsonvalue,
// leaves that stand alone): the server keeps
// users and roles in its store (admin.system.users and admin.system.roles,
// in MongoDB's document shapes) and hands them to this package through
// Store; it carries each SASL conversation's payloads to a Conversation and
// asks Grants whether a command's Required privileges are held.
package auth
