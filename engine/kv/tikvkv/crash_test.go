package tikvkv

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pingcap/failpoint"
	"github.com/tikv/client-go/v2/tikv"
	"github.com/tikv/client-go/v2/util"

	"github.com/lethedb/lethe/engine/kv"
)

// Client-go evaluates its failpoints with failpoint.Eval, the runtime
// registry, so they work without failpoint's code rewriting; they fire
// only once enabled here, and the commit ones only for a commit whose
// context carries a session id.
func TestMain(m *testing.M) {
	tikv.EnableFailpoints()
	m.Run()
}

func enable(t *testing.T, name, expr string) {
	t.Helper()
	mustT(t, failpoint.Enable("tikvclient/"+name, expr))
	t.Cleanup(func() { _ = failpoint.Disable("tikvclient/" + name) })
}

// frontEnds opens two front-ends on one mock cluster: A, which will
// crash, and B, which goes on.
func frontEnds(t *testing.T) (a, b *Store) {
	c, err := NewMockCluster(FamilySplits("")...)
	mustT(t, err)
	t.Cleanup(func() { c.Close() })
	a, err = c.Open(testOptions(""))
	mustT(t, err)
	t.Cleanup(func() { a.Close() })
	b, err = c.Open(testOptions(""))
	mustT(t, err)
	t.Cleanup(func() { b.Close() })
	put(t, b, "d/1", "v0")
	return a, b
}

// crashCommit commits d/1 and i/1 on a in a context that fires the commit
// failpoints.
func crashCommit(t *testing.T, a *Store) error {
	tx, err := a.Begin(ctx, kv.TxnOptions{})
	mustT(t, err)
	mustT(t, tx.Set([]byte("d/1"), []byte("from-A")))
	mustT(t, tx.Set([]byte("i/1"), []byte("from-A")))
	_, err = tx.Commit(util.SetSessionID(context.Background(), 1), kv.Sync)
	return err
}

// TestCrashAfterPrewrite: front-end A dies between prewrite and commit,
// leaving its locks. B's reads go on at once (the locks are not
// committed), B's write succeeds once A's locks expire (client-go rolls
// them back), and none of A's writes is ever seen.
func TestCrashAfterPrewrite(t *testing.T) {
	a, b := frontEnds(t)
	enable(t, "beforeCommit", `return("fail")`)
	enable(t, "commitFailedSkipCleanup", `return(true)`)
	if err := crashCommit(t, a); err == nil {
		t.Fatal("the injected crash did not fail the commit")
	}
	// The crash skipped A's cleanup, which runs in the background: the
	// failpoint stays on until the test ends, lest the cleanup run after
	// all.
	mustT(t, failpoint.Disable("tikvclient/beforeCommit"))
	start := time.Now()
	if v, err := b.Get(ctx, []byte("d/1")); err != nil || string(v) != "v0" {
		t.Fatalf("B reads d/1 = %q, %v while A's lock is there", v, err)
	}
	var err error
	for time.Since(start) < 20*time.Second {
		err = tryPut(b, "d/1", "from-B")
		if err == nil || !kv.IsConflict(err) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	mustT(t, err)
	waited := time.Since(start)
	if waited < time.Second {
		t.Fatalf("B's write did not meet A's locks (committed after %v)", waited)
	}
	t.Logf("B committed over A's dead locks after %v", waited.Round(time.Millisecond))
	if v, err := b.Get(ctx, []byte("d/1")); err != nil || string(v) != "from-B" {
		t.Fatalf("d/1 = %q, %v", v, err)
	}
	if v, err := b.Get(ctx, []byte("i/1")); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("i/1 = %q, %v: half of A's transaction", v, err)
	}
}

// TestCrashAfterPrimaryCommit: A dies once its primary key is committed,
// before its secondaries are: the transaction is committed, and B, meeting
// the secondary's lock, commits it from the primary and reads A's value.
func TestCrashAfterPrimaryCommit(t *testing.T) {
	a, b := frontEnds(t)
	enable(t, "beforeCommitSecondaries", `return("skip")`)
	if err := crashCommit(t, a); err != nil {
		t.Fatalf("a commit whose primary committed: %v", err)
	}
	for _, k := range []string{"d/1", "i/1"} {
		if v, err := b.Get(ctx, []byte(k)); err != nil || string(v) != "from-A" {
			t.Fatalf("B reads %s = %q, %v; want A's committed value", k, v, err)
		}
	}
}

func tryPut(s kv.Store, key, value string) error {
	tx, err := s.Begin(ctx, kv.TxnOptions{})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := tx.Set([]byte(key), []byte(value)); err != nil {
		return err
	}
	_, err = tx.Commit(ctx, kv.Sync)
	return err
}
