// Package failpoint holds the fail points with which drivers' tests
// exercise their error handling: configureFailPoint sets them, and the
// server registers that command only when started with
// --enable-test-commands (Config.EnableTestCommands), as mongod's
// enableTestCommands; otherwise the command does not exist. The one fail
// point is MongoDB's failCommand, which the server's dispatch consults
// before each command runs (FailCommand.Before) and after it succeeds
// (Data.AddWriteConcernError).
//
// Locks: FailCommand's mutex is a leaf, held only while a command's
// activation is decided and counted, never while a command blocks.
package failpoint
