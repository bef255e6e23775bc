package main

import (
	"flag"
	"io"
	"testing"
)

// TestOplogFlagDefaultsToReplicaSetMode: the oplog is kept by default only
// in replica-set mode, as mongod keeps one only as a replica-set member
// (issue 17: the standalone oplog cost inserts about a tenth of their rate
// and nothing reads it, since a standalone refuses change streams); the
// flag given, alone or with a value, wins either way.
func TestOplogFlagDefaultsToReplicaSetMode(t *testing.T) {
	for _, c := range []struct {
		args    []string
		replSet bool
		want    bool
	}{
		{nil, false, false},
		{nil, true, true},
		{[]string{"--oplog"}, false, true},
		{[]string{"--oplog=true"}, false, true},
		{[]string{"--oplog=false"}, true, false},
	} {
		fs := flag.NewFlagSet("lethe", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var on optionalBool
		fs.Var(&on, "oplog", "")
		if err := fs.Parse(c.args); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if got := on.or(c.replSet); got != c.want {
			t.Errorf("%v with replica-set mode %v: oplog %v, want %v", c.args, c.replSet, got, c.want)
		}
	}
}
