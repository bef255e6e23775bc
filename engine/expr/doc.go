// Package expr compiles and evaluates MongoDB's aggregation expressions,
// the language of $expr, update pipelines, computed projections and every
// stage of an aggregation pipeline: field paths ("$a.b"), variables
// ("$$ROOT", "$$NOW", those of $let, $map, $filter and $reduce), literals,
// operator documents ({$gt: ["$a", 1]}), and documents and arrays built of
// those.
//
// It is a package of its own, rather than part of the filter language in
// package query, because four languages use it (filters through $expr,
// projections, update pipelines and aggregation) and because it is large:
// one file per operator family. Unlike filters, expressions compare values
// of any types in BSON order, and evaluating one can fail, as adding a
// string does, with MongoDB's code.
//
// An Expr is compiled once and is safe for concurrent use; evaluation reads
// documents as raw bytes and allocates only for the values it builds. What
// an evaluation may build is bounded (see MaxValueBytes and MaxHeldBytes).
package expr
