// Package integration tests Lethe end to end: a server started in-process,
// driven through the official Go driver, raw wire connections, and the real
// clients people use (mongosh, the Node.js driver, pymongo).
package integration
