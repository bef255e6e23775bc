package engine

import (
	"context"
	"fmt"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/kv/pebblekv"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// assertNoLocksHeld fails if any key lock or collection lock is still
// held once every request has returned: a request must release all it takes.
func assertNoLocksHeld(t *testing.T, e *Engine) {
	t.Helper()
	if held := kv.Unwrap(e.store).(*pebblekv.Store).HeldLocks(); len(held) > 0 {
		t.Fatalf("key locks %q are held with no request running", held)
	}
	for _, c := range e.openCollections() {
		if !c.ddl.TryLock() {
			t.Fatalf("the ddl lock of %s is held with no request running", c.st().ns())
		}
		c.ddl.Unlock()
	}
	if !e.mu.TryLock() {
		t.Fatal("engine.mu is held with no request running")
	}
	e.mu.Unlock()
}

// Catalog changes and writes that take the engine's locks in every
// combination run together; each must return, which they cannot if two of
// them take the same locks in opposite orders.
func TestLockOrderUnderConcurrentDDLAndWrites(t *testing.T) {
	e := openTestEngine(t)
	ctx := context.Background()
	const rounds = 300
	set := mustCompileUpdate(t, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
	ixSpec := func(name string) []bson.Raw {
		return []bson.Raw{mustRaw(t, bson.D{{Key: "key", Value: bson.D{{Key: name, Value: 1}}}, {Key: "name", Value: name + "_1"}, {Key: "unique", Value: true}})}
	}
	workers := map[string]func(i int){
		"rename": func(i int) {
			from, to := "a", "b"
			if i%2 == 1 {
				from, to = to, from
			}
			_ = e.RenameCollection(ctx, "db", from, "db", to, true)
		},
		"createIndexes": func(i int) {
			_, _ = e.CreateIndexes(ctx, "db", []string{"a", "b"}[i%2], ixSpec(fmt.Sprint("k", i%3)))
		},
		"dropIndexes": func(i int) {
			_, _ = e.DropIndexes(ctx, "db", []string{"a", "b"}[i%2], bson.RawValue{Type: bson.TypeString, Value: bsoncore.AppendString(nil, "*")})
		},
		"drop": func(i int) {
			if i%10 == 0 {
				_, _ = e.DropCollection(ctx, "db", []string{"a", "b"}[i%2])
			}
		},
		"insert": func(i int) {
			_, _ = e.Insert(context.Background(), "db", []string{"a", "b"}[i%2], []bson.Raw{mustRaw(t, bson.D{{Key: "_id", Value: i}, {Key: "k0", Value: i}}), mustRaw(t, bson.D{{Key: "k1", Value: i % 7}})}, false)
		},
		"upsert": func(i int) {
			_, _ = e.Update(ctx, "db", []string{"a", "b"}[i%2], UpdateSpec{Filter: mustRaw(t, bson.D{{Key: "_id", Value: i % 5}}), Update: set, Upsert: true})
		},
		"findAndModify": func(i int) {
			_, _ = e.FindAndModify(ctx, "db", []string{"a", "b"}[i%2], FindAndModifySpec{Filter: mustRaw(t, bson.D{{Key: "_id", Value: i % 5}}), Update: set, Upsert: true, New: true})
		},
		"find": func(i int) {
			if cur, err := e.Find(ctx, "db", []string{"a", "b"}[i%2], FindSpec{}); err == nil {
				_, _ = cur.All(ctx)
			}
		},
		"reap": func(int) { _, _, _, _ = e.ReapBatch(ctx, e.clock.Now(), 100) },
	}
	var wg sync.WaitGroup
	for _, work := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				work(i)
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		var stacks strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&stacks, 1)
		t.Fatalf("concurrent catalog changes and writes deadlocked:\n%s", stacks.String())
	}
	assertNoLocksHeld(t, e)
}
