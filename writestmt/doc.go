// Package writestmt parses the statements of update and delete, and
// findAndModify's arrayFilters, as mongod's parsers do.
//
// The statements are parsed in two steps, as mongod does. What its IDL
// parser checks (write_ops.idl: UpdateOpEntry and DeleteOpEntry are strict
// structs; update_modification and multi_delete_bool have their own
// deserializers in write_ops_parsers.cpp and write_ops.cpp) is checked for
// every statement before any runs: a statement that fails it fails the
// command, and nothing is written. That is ParseUpdate and ParseDelete.
// Everything else (the query, update operators, pipeline stages, let and
// c, the collation's content) is parsed when the statement runs, in
// performUpdates/performDeletes of write_ops_exec.cpp, and its error is
// that statement's write error: the statements before it stay applied.
// The server runs that second step.
//
// It holds no state and no locks.
package writestmt
