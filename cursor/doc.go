// Package cursor holds the server's open cursors: the table that keeps
// them between batches (Table), within the limits that keep one client
// from exhausting the server (Limits), the sources a cursor reads from (an
// engine cursor, documents already computed in a SliceSource), the reply
// that opens one (Table.Reply) and the commands that go on with one or
// close it, getMore and killCursors. A source that can (an engine cursor,
// an Appender) appends its batch straight into the reply buffer, so that
// each document is copied once between the store and the reply; a source
// is closed only after its batch is in the reply.
//
// Who opens a cursor is the server's business: a command names its
// connection, client, session and user through an Opener.
//
// Locks, outermost first: a cursor's own mutex, held by a getMore for its
// batch; then the table's mutex. Idle cursors are swept lazily, whenever
// cursors are used, so no goroutine is needed.
package cursor
