package integration

import (
	"path/filepath"
	"strings"
	"testing"
)

// runMongoshScript runs a script of integration/clients through mongosh and
// requires it to print OK and nothing on stderr.
func runMongoshScript(t *testing.T, ts *testServer, script string) {
	t.Helper()
	runMongoshScriptWith(t, ts.URI+"test", nil, script)
}

// runMongoshScriptWith is runMongoshScript against uri with more mongosh
// options, such as --tls or -u.
func runMongoshScriptWith(t *testing.T, uri string, opts []string, script string) {
	t.Helper()
	requireClient(t, exists(mongoshPath), "mongosh", "npm ci --prefix integration/clients (make test does it)")
	args := append(append([]string{uri}, opts...), "--quiet", filepath.Join("clients", script))
	stdout, stderr := runClient(t, mongoshPath, args...)
	if strings.TrimSpace(stdout) != "OK" {
		t.Errorf("mongosh %s printed:\n%s", script, stdout)
	}
	if stderr != "" {
		t.Errorf("mongosh %s wrote to stderr:\n%s", script, stderr)
	}
}

func TestMongoshCRUD(t *testing.T) {
	runMongoshScript(t, startServer(t), "crud.js")
}

func TestMongoshShowCommands(t *testing.T) {
	ts := startServer(t)
	requireClient(t, exists(mongoshPath), "mongosh", "npm ci --prefix integration/clients (make test does it)")
	runClient(t, mongoshPath, ts.URI+"shop", "--quiet", "--eval", "db.things.insertOne({a: 1})")
	stdout, stderr := runClient(t, mongoshPath, ts.URI+"shop", "--quiet", "--eval", "show dbs")
	if !strings.Contains(stdout, "shop") || stderr != "" {
		t.Errorf("show dbs printed %q, stderr %q", stdout, stderr)
	}
	stdout, stderr = runClient(t, mongoshPath, ts.URI+"shop", "--quiet", "--eval", "show collections")
	if strings.TrimSpace(stdout) != "things" || stderr != "" {
		t.Errorf("show collections printed %q, stderr %q", stdout, stderr)
	}
}

// TestMongoshAggregate runs what a reporting user does in the shell: joins,
// facets, dates in a time zone, window functions, views, $merge, explain.
func TestMongoshAggregate(t *testing.T) {
	runMongoshScript(t, startServer(t), "aggregate.js")
}

func TestMongoshTTLSeedExample(t *testing.T) {
	runMongoshScript(t, startServer(t), "ttl_seed.js")
}

// TestMongoshUserMgmt runs the shell's user and role helpers (createUser,
// getUsers, getUser, updateUser, grantRolesToUser, createRole, getRoles,
// dropRole, dropUser) against the user management commands.
func TestMongoshUserMgmt(t *testing.T) {
	runMongoshScript(t, startServer(t), "usermgmt.js")
}

// TestMongoshCaseInsensitiveLogin is a case-insensitive login in the shell:
// a unique index under {locale: "en", strength: 2} refuses "alice" after
// "Alice", and a find with that collation uses the index.
func TestMongoshCaseInsensitiveLogin(t *testing.T) {
	runMongoshScript(t, startServer(t), "login_collation.js")
}
