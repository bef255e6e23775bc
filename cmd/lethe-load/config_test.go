package main

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

func TestSelectWorkloads(t *testing.T) {
	tests := []struct {
		list    string
		want    string
		wantErr bool
	}{
		{list: "basic", want: "ping,pebble-sync,insert,findone,update,find100"},
		{list: "all", want: "ping,pebble-sync,insert,oplog-cost,oplog-full,retry-cost,txn,findone,update,find100,index,text,agg-group,agg-lookup,collated-sort,changestream,auth-connect,auth-failures,auth-overhead,tls,ycsb-a,ycsb-b,ycsb-c,ycsb-e,ycsb-f"},
		{list: "index, ping", want: "ping,index"},
		{list: "all,growth", want: "ping,pebble-sync,insert,oplog-cost,oplog-full,retry-cost,txn,findone,update,find100,index,text,agg-group,agg-lookup,collated-sort,changestream,auth-connect,auth-failures,auth-overhead,tls,growth,ycsb-a,ycsb-b,ycsb-c,ycsb-e,ycsb-f"},
		{list: "findone,findone", want: "findone"},
		{list: "", want: ""},
		{list: "ping,bogus", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.list, func(t *testing.T) {
			got, err := selectWorkloads(tt.list)
			if (err != nil) != tt.wantErr {
				t.Fatalf("selectWorkloads(%q) error = %v, want error: %v", tt.list, err, tt.wantErr)
			}
			var names []string
			for _, w := range got {
				names = append(names, w.name)
			}
			if s := strings.Join(names, ","); s != tt.want {
				t.Errorf("selectWorkloads(%q) = %s, want %s", tt.list, s, tt.want)
			}
		})
	}
}

func TestParseFlags(t *testing.T) {
	cfg, err := parseFlags([]string{"--clients=4", "--duration=2s", "--ttl-docs=1000000", "--json"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.clients != 4 || cfg.duration != 2*time.Second || cfg.ttlDocs != 1000000 || !cfg.json || cfg.docs != 10000 || cfg.failedLogins != 10000 || len(cfg.workloads) != 6 {
		t.Errorf("parseFlags = %+v", cfg)
	}
	if cfg.ycsbRecords != 20000 || cfg.ycsbDist != "zipfian" || cfg.rounds != 3 || cfg.compare != nil {
		t.Errorf("parseFlags YCSB and compare defaults = %+v", cfg)
	}
	for _, args := range [][]string{{"--clients=0"}, {"--duration=0s"}, {"--docs=0"}, {"--ttl-docs=-1"}, {"--failed-logins=0"}, {"extra"}, {"--workloads=nope"},
		{"--ycsb-records=0"}, {"--ycsb-dist=latest"}, {"--server-pid=12"}, {"--uri=mongodb://x", "--server-bin=lethe"},
		{"--compare=a"}, {"--compare=a,b,c"}, {"--compare=a,b", "--uri=mongodb://x"}, {"--compare=a,b", "--ttl-docs=10"}, {"--rounds=0"},
		{"--growth-docs=0"}, {"--server-args=--store tikv-mock"}} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) succeeded, want an error", args)
		}
	}
}

// --server-args are the child servers' extra flags.
func TestParseServerArgs(t *testing.T) {
	cfg, err := parseFlags([]string{"--server-bin=bin/lethe", "--server-args= --store  tikv-mock "}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprintf("%q", cfg.serverArgs) != `["--store" "tikv-mock"]` {
		t.Errorf("--server-args = %q", cfg.serverArgs)
	}
}

// --compare leaves out the workloads that measure servers or a store of
// their own, so that "basic" and "all" can be compared, but keeps txn,
// whose own server comes from each side's binary.
func TestParseFlagsCompare(t *testing.T) {
	cfg, err := parseFlags([]string{"--compare=binA,binB", "--workloads=basic,oplog-cost,txn,ycsb-a"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, w := range cfg.workloads {
		names = append(names, w.name)
	}
	if got := strings.Join(names, ","); got != "ping,insert,txn,findone,update,find100,ycsb-a" {
		t.Errorf("--compare workloads = %s", got)
	}
	if len(cfg.compare) != 2 || cfg.compare[0] != "binA" || cfg.compare[1] != "binB" {
		t.Errorf("--compare = %q", cfg.compare)
	}
}
