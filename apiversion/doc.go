// Package apiversion checks the Stable API parameters of a command: a
// client may declare apiVersion "1" on each command and, with apiStrict:
// true, ask the server to refuse anything outside that version, so that an
// application cannot come to depend on it. The checks and their order are
// MongoDB's validateAPIParameters
// (src/mongo/db/validate_api_parameters.cpp); the commands and stages of
// version 1 are those of the Stable API changelog
// (docs/reference/stable-api-changelog) for MongoDB 7.0.
//
// It holds no state and no locks.
package apiversion
