// Package namespace holds MongoDB's rules for database and collection
// names: what the engine refuses before it creates, renames or looks up a
// collection, and what the server checks of a command's namespace.
package namespace
