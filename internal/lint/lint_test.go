// Package lint holds the project's architecture rules as tests: which
// package may import which. They read the import lists of every package
// in the module (go/build), so a change that breaks a rule fails `make
// test` with the offending file named. ARCHITECTURE.md explains the layers
// these rules keep apart.
package lint

import (
	"go/build"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/lethedb/lethe"

// pkg is one package of the module with the imports of each of its files.
type pkg struct {
	path    string            // relative to the module root, e.g. "engine/kv"
	imports map[string]string // import path -> a file that imports it
}

// kernel are the leaves every layer may use: error codes, BSON helpers,
// the clock, the key encoding, and the wire and oplog formats.
var kernel = []string{"mongoerr", "bsonvalue", "clock", "internal/invariants", "engine/keycodec", "engine/geo", "engine/collation", "engine/spill", "engine/internal/conformance", "oplog", "wire", "tlsnet"}

// languages are the engine's query, update, expression and aggregation
// languages; the aggregation language is pipeline with its accumulators
// (accum), its window functions (window) and the value helpers they share.
var languages = []string{"engine/expr", "engine/query", "engine/project", "engine/update", "engine/pipeline",
	"engine/pipeline/accum", "engine/pipeline/window", "engine/pipeline/internal/values", "engine/text"}

// engineParts are the packages cut from the engine by concept: the engine
// imports them and hands them what they need through small interfaces or
// plain data, so they never import it back.
var engineParts = []string{"engine/record", "engine/letvars", "engine/validation", "engine/usage", "engine/namespace", "engine/viewdef", "engine/preimage", "engine/retry", "engine/reclaim", "engine/writestage", "engine/storagecheck", "engine/oplogstore", "engine/expiryscan", "engine/collstats", "engine/distinct", "engine/members", "engine/reapshare"}

// handlerPackages serve commands for the server with the command kit;
// the server registers them.
var handlerPackages = []string{"usermgmt", "replset", "router", "storeadmin", "expiry", "shutdown", "params", "failpoint", "catalog"}

func loadPackages(t *testing.T) []pkg {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var out []pkg
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
			return filepath.SkipDir
		}
		bp, err := build.ImportDir(path, build.ImportComment)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(root, path)
		p := pkg{path: filepath.ToSlash(rel), imports: map[string]string{}}
		add := func(imps []string, pos map[string][]tokenPos) {
			for _, imp := range imps {
				file := ""
				if ps := pos[imp]; len(ps) > 0 {
					file = filepath.Base(ps[0].Filename)
				}
				p.imports[imp] = file
			}
		}
		add(bp.Imports, positions(bp.ImportPos))
		add(bp.TestImports, positions(bp.TestImportPos))
		add(bp.XTestImports, positions(bp.XTestImportPos))
		out = append(out, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 20 {
		t.Fatalf("found only %d packages: is the test run from internal/lint?", len(out))
	}
	return out
}

type tokenPos struct{ Filename string }

func positions[P interface{ String() string }](m map[string][]P) map[string][]tokenPos {
	out := map[string][]tokenPos{}
	for k, ps := range m {
		for _, p := range ps {
			out[k] = append(out[k], tokenPos{Filename: strings.Split(p.String(), ":")[0]})
		}
	}
	return out
}

// internal returns the module packages p imports, relative to the root.
func (p pkg) internal() map[string]string {
	out := map[string]string{}
	for imp, file := range p.imports {
		if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
			out[rel] = file
		}
	}
	return out
}

func in(list []string, p string) bool { return slices.Contains(list, p) }

func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// TestPebbleOnlyInItsBackend: pebble is the embedded backend's business,
// reached by everything else through engine/kv. The load tool keeps a raw
// pebble workload as the ceiling it measures against.
func TestPebbleOnlyInItsBackend(t *testing.T) {
	for _, p := range loadPackages(t) {
		if p.path == "engine/kv/pebblekv" || p.path == "cmd/lethe-load" {
			continue
		}
		for imp, file := range p.imports {
			if strings.HasPrefix(imp, "github.com/cockroachdb/pebble") {
				t.Errorf("%s/%s imports %s: only engine/kv/pebblekv may", p.path, file, imp)
			}
		}
	}
}

// TestClientGoOnlyInItsBackend: TiKV's client and what comes with it
// (kvproto, PD's client, pingcap's logger and failpoints) are the TiKV
// backend's business, as pebble is the embedded one's.
func TestClientGoOnlyInItsBackend(t *testing.T) {
	for _, p := range loadPackages(t) {
		if p.path == "engine/kv/tikvkv" {
			continue
		}
		for imp, file := range p.imports {
			if strings.HasPrefix(imp, "github.com/tikv/") || strings.HasPrefix(imp, "github.com/pingcap/") {
				t.Errorf("%s/%s imports %s: only engine/kv/tikvkv may", p.path, file, imp)
			}
		}
	}
}

// TestLayers: each layer imports only layers below it (see
// ARCHITECTURE.md).
func TestLayers(t *testing.T) {
	type rule struct {
		what    string
		applies func(p string) bool
		allow   func(imp string) bool
	}
	rules := []rule{{
		what:    "a kernel package imports only kernel packages",
		applies: func(p string) bool { return in(kernel, p) },
		allow:   func(imp string) bool { return in(kernel, imp) || strings.HasPrefix(imp, "tlsnet/") },
	}, {
		what:    "ttlindex, session, auth and changestream know nothing of the engine, the server or each other",
		applies: func(p string) bool { return in([]string{"ttlindex", "session", "auth", "changestream"}, p) },
		allow:   func(imp string) bool { return in(kernel, imp) },
	}, {
		what:    "engine/kv imports no backend and nothing above it",
		applies: func(p string) bool { return p == "engine/kv" },
		allow:   func(imp string) bool { return in(kernel, imp) },
	}, {
		what:    "a kv backend imports engine/kv and the kernel only",
		applies: func(p string) bool { return under(p, "engine/kv") && p != "engine/kv" },
		allow:   func(imp string) bool { return imp == "engine/kv" || under(imp, "engine/kv") || in(kernel, imp) },
	}, {
		what:    "the engine's languages import each other and the kernel, never the engine, its store or the server",
		applies: func(p string) bool { return in(languages, p) },
		allow:   func(imp string) bool { return in(languages, imp) || in(kernel, imp) },
	}, {
		what:    "the engine's parts import engine/kv, the kernel, the languages and ttlindex, never the engine or the server",
		applies: func(p string) bool { return in(engineParts, p) },
		allow: func(imp string) bool {
			return imp == "engine/kv" || in(kernel, imp) || in(languages, imp) || in(engineParts, imp) || imp == "ttlindex"
		},
	}, {
		what:    "the engine imports nothing above it",
		applies: func(p string) bool { return p == "engine" },
		allow: func(imp string) bool {
			return under(imp, "engine") || in(kernel, imp) || imp == "ttlindex"
		},
	}, {
		what:    "command, the handlers' kit, imports only the kernel",
		applies: func(p string) bool { return p == "command" },
		allow:   func(imp string) bool { return in(kernel, imp) },
	}, {
		what:    "diag, the process's diagnostics, imports only the kernel",
		applies: func(p string) bool { return p == "diag" },
		allow:   func(imp string) bool { return in(kernel, imp) },
	}, {
		what:    "sysns, the guards of system.* collections, imports the kernel, the command kit and the engine's API",
		applies: func(p string) bool { return p == "sysns" },
		allow:   func(imp string) bool { return in(kernel, imp) || imp == "command" || imp == "engine" },
	}, {
		what:    "writestmt, the parsing of update and delete statements, imports the kernel, the command kit and the engine's API",
		applies: func(p string) bool { return p == "writestmt" },
		allow:   func(imp string) bool { return in(kernel, imp) || imp == "command" || imp == "engine" },
	}, {
		what:    "queryargs, the parsing of the query commands' arguments, imports the kernel, the command kit, cursor and the engine's API",
		applies: func(p string) bool { return p == "queryargs" },
		allow: func(imp string) bool {
			return in(kernel, imp) || imp == "command" || imp == "cursor" || imp == "engine"
		},
	}, {
		what:    "apiversion, the Stable API's checks, imports only the kernel and the command kit",
		applies: func(p string) bool { return p == "apiversion" },
		allow:   func(imp string) bool { return in(kernel, imp) || imp == "command" },
	}, {
		what:    "cursor, the open cursors and getMore, imports the kernel, the command kit and the engine's API",
		applies: func(p string) bool { return p == "cursor" },
		allow:   func(imp string) bool { return in(kernel, imp) || imp == "command" || imp == "engine" },
	}, {
		what:    "transaction, the sessions' multi-document transactions, imports only the kernel and the engine's API",
		applies: func(p string) bool { return p == "transaction" },
		allow:   func(imp string) bool { return in(kernel, imp) || imp == "engine" },
	}, {
		what:    "concern, the read and write concerns of a replica-set member, imports only the kernel and the command kit",
		applies: func(p string) bool { return p == "concern" },
		allow:   func(imp string) bool { return in(kernel, imp) || imp == "command" },
	}, {
		what:    "stats, the server's counters, imports only the kernel and conn, whose traffic it counts",
		applies: func(p string) bool { return p == "stats" },
		allow:   func(imp string) bool { return in(kernel, imp) || imp == "conn" },
	}, {
		what:    "conn, the transport, imports only the kernel: no server, no engine; the server is its Dispatcher",
		applies: func(p string) bool { return p == "conn" },
		allow:   func(imp string) bool { return in(kernel, imp) },
	}, {
		what:    "the handler packages (handlerPackages) are below the server: they import no server, no transport and not each other",
		applies: func(p string) bool { return in(handlerPackages, p) },
		allow:   func(imp string) bool { return imp != "server" && imp != "conn" && !in(handlerPackages, imp) },
	}, {
		what: "the server and the handler packages hand the languages to the engine and compile none themselves (engine/compile.go)",
		applies: func(p string) bool {
			return under(p, "server") || in(handlerPackages, p) || p == "command" || p == "conn"
		},
		allow: func(imp string) bool { return !in(languages, imp) },
	}, {
		what:    "nothing but the commands imports the server",
		applies: func(p string) bool { return !under(p, "cmd") && p != "integration" && p != "server" },
		allow:   func(imp string) bool { return imp != "server" },
	}}
	for _, p := range loadPackages(t) {
		for _, r := range rules {
			if !r.applies(p.path) {
				continue
			}
			for imp, file := range p.internal() {
				if imp == p.path || r.allow(imp) {
					continue
				}
				t.Errorf("%s/%s imports %s, against the rule: %s", p.path, file, imp, r.what)
			}
		}
	}
}
