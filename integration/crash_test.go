package integration

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// buildLethe compiles cmd/lethe into a temporary directory.
func buildLethe(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lethe")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/lethedb/lethe/cmd/lethe")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("build lethe: %v", err)
	}
	return bin
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startChild runs the server binary, with extra flags, and waits until it
// answers ping.
func startChild(t *testing.T, bin, dir string, extra ...string) (*exec.Cmd, *mongo.Client) {
	t.Helper()
	addr := freePort(t)
	cmd := exec.Command(bin, append([]string{"--listen", addr, "--data-dir", dir, "--log-level", "warn"}, extra...)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + addr + "/?directConnection=true").SetServerSelectionTimeout(20 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := client.Ping(pctx, nil); err != nil {
		cmd.Process.Kill()
		t.Fatalf("child server did not come up: %v", err)
	}
	return cmd, client
}

// TestCrashKeepsAcknowledgedWrites kills a server with SIGKILL while
// clients insert, then checks that every acknowledged insert survived.
func TestCrashKeepsAcknowledgedWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	bin := buildLethe(t)
	dir := t.TempDir()
	cmd, client := startChild(t, bin, dir)
	coll := client.Database("crash").Collection("c")

	var mu sync.Mutex
	var acked []int32
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := int32(w*1_000_000 + i)
				if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "pad", Value: "0123456789abcdef"}}); err != nil {
					return
				}
				mu.Lock()
				acked = append(acked, id)
				mu.Unlock()
			}
		}(w)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 2000 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	close(stop)
	wg.Wait()
	client.Disconnect(ctx)
	if len(acked) == 0 {
		t.Fatal("no insert was acknowledged before the kill")
	}

	cmd, client = startChild(t, bin, dir)
	defer func() {
		client.Disconnect(ctx)
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	coll = client.Database("crash").Collection("c")
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	present := map[int32]bool{}
	for cur.Next(ctx) {
		present[cur.Current.Lookup("_id").Int32()] = true
	}
	if err := cur.Err(); err != nil {
		t.Fatal(err)
	}
	var lost []int32
	for _, id := range acked {
		if !present[id] {
			lost = append(lost, id)
		}
	}
	if len(lost) > 0 {
		t.Fatalf("%d of %d acknowledged inserts lost, e.g. %v", len(lost), len(acked), lost[:min(5, len(lost))])
	}
	t.Log(fmt.Sprintf("%d acknowledged inserts all present after SIGKILL", len(acked)))
}
