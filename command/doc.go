// Package command is the kit every package of command handlers shares: the
// Request a handler receives, the Command it registers (the server keeps
// the registry), the argument readers (args.go), which fail with the codes
// and messages of MongoDB's command parsers, and the reply builders
// (reply.go), which build replies in the connection's reused buffer.
//
// It holds no state and no locks; it imports only the kernel.
package command
