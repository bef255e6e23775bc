// Package queryargs parses the arguments of the query commands (find,
// count, distinct) apart from running them, so that explain checks the
// command it explains exactly as the command itself would: MongoDB's
// explain parses the inner command with the command's own parser
// (src/mongo/db/commands/find_cmd.cpp, count_cmd.cpp, parseExplain...).
// It also holds the checks of query options other commands share: a
// command's let, aggregate's cursor.batchSize, tailable cursors, min and
// max.
//
// It holds no state and no locks.
package queryargs
