// Package catalog serves the commands on the catalog: the definition
// commands (create, drop, dropDatabase, renameCollection, collMod,
// createIndexes, dropIndexes), the lists (listDatabases, listCollections,
// listIndexes), and validate, collStats and dbStats, with serverStatus'
// catalogStats. Create of a view is here; reads through views and the
// guards that keep collection commands off views are the server's.
//
// The work is the engine's; this package parses the arguments and builds
// the replies. What a command needs of the connection that runs it (its
// cursors' owner, the databases its user may list) comes in a Caller.
//
// It holds no locks of its own.
package catalog
