package integration

import (
	"fmt"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

func zapString(key, value string) zapcore.Field { return zap.String(key, value) }

// dumpLogs formats the server's log for a failure message.
func dumpLogs(ts *testServer) string {
	var b strings.Builder
	for _, e := range ts.Logs.All() {
		fmt.Fprintf(&b, "%s %s %v\n", e.Level, e.Message, e.ContextMap())
	}
	return b.String()
}
