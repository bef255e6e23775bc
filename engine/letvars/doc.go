// Package letvars binds a command's let variables (and an update
// statement's constants c) by substitution: ParseLet evaluates them once,
// before any document is read, and Let rewrites filters, projections and
// aggregation stages so that each reference "$$name" becomes the constant.
// The rewritten commands then compile as usual, which keeps the expression
// compiler unaware of command options. The server applies it to what it
// hands the engine; the engine, to the sub-pipelines of $lookup and $merge.
package letvars
