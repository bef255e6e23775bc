// Package usermgmt runs MongoDB's user management commands (createUser,
// grantRolesToUser, createRole, usersInfo, _mergeAuthzCollections, ...)
// and keeps what they write: users and user-defined roles as documents of
// admin.system.users and admin.system.roles, stored through the engine's
// exported API, with credentials and role checks from package auth. The
// server registers its Commands and reads users and roles back for
// authentication through Store; it is told of every change through
// Config.Changed.
//
// Locks: Service.umc, held by a user management command that writes for
// its whole run (serialized), around the engine's own locks. The server
// takes no lock of its own around it.
package usermgmt
