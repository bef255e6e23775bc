package integration

import "testing"

// TestTransactionClients: mongoose's session.withTransaction, the Node.js
// driver's withTransaction and pymongo's with_transaction commit, abort
// and retry a write conflict against a one-member replica set.
func TestTransactionClients(t *testing.T) {
	uri := startServer(t, withReplSet("rs0")).URI + "test?replicaSet=rs0"
	t.Run("mongoose", func(t *testing.T) { runNodeScript(t, "txn_mongoose.mjs", uri) })
	t.Run("pymongo", func(t *testing.T) { runPythonScript(t, "txn.py", uri) })
}
