package main

import (
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
		{list: "all", want: "ping,pebble-sync,insert,oplog-cost,oplog-full,retry-cost,txn,findone,update,find100,index,agg-group,agg-lookup,changestream,auth-connect,auth-failures,auth-overhead,tls"},
		{list: "index, ping", want: "ping,index"},
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
	for _, args := range [][]string{{"--clients=0"}, {"--duration=0s"}, {"--docs=0"}, {"--ttl-docs=-1"}, {"--failed-logins=0"}, {"extra"}, {"--workloads=nope"}} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) succeeded, want an error", args)
		}
	}
}
