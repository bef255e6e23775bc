package engine

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe/clock"
)

// Model test knobs; the flags win over the environment.
//
//	go test ./engine -run '^TestModel' -v -model.seed=N       replay one seed
//	LETHE_MODEL_STEPS=200000 go test ./engine -run TestModelSequential
//	LETHE_MODEL_DURATION=5m  go test ./engine -run '^TestModel' -timeout 0
var (
	modelSeedFlag     = flag.Int64("model.seed", 0, "run the model tests with this seed only (also LETHE_MODEL_SEED)")
	modelStepsFlag    = flag.Int("model.steps", 0, "total steps of the sequential model test (also LETHE_MODEL_STEPS)")
	modelDurationFlag = flag.Duration("model.duration", 0, "run the model tests for this long (also LETHE_MODEL_DURATION)")
)

type modelConfig struct {
	seed     int64 // 0: random seeds
	steps    int   // total steps
	duration time.Duration
}

func modelSettings(t *testing.T, defaultSteps int) modelConfig {
	cfg := modelConfig{seed: *modelSeedFlag, steps: *modelStepsFlag, duration: *modelDurationFlag}
	if v := os.Getenv("LETHE_MODEL_SEED"); v != "" && cfg.seed == 0 {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("LETHE_MODEL_SEED: %v", err)
		}
		cfg.seed = n
	}
	if v := os.Getenv("LETHE_MODEL_STEPS"); v != "" && cfg.steps == 0 {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("LETHE_MODEL_STEPS: %v", err)
		}
		cfg.steps = n
	}
	if v := os.Getenv("LETHE_MODEL_DURATION"); v != "" && cfg.duration == 0 {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("LETHE_MODEL_DURATION: %v", err)
		}
		cfg.duration = d
	}
	if cfg.steps == 0 {
		cfg.steps = defaultSteps
	}
	return cfg
}

// stepsPerSeed keeps each sequence short enough that a failure's log reads
// in one screen and the collection stays small.
const stepsPerSeed = 400

func newModelRun(t testing.TB, backend, dir string, timeout time.Duration) *modelRun {
	clock := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e, err := openModelEngine(backend, dir, Options{Clock: clock, NoReaper: true, Oplog: true})
	if err != nil {
		t.Fatal(err)
	}
	r := &modelRun{e: e, backend: backend, dir: dir, clock: clock, m: &refModel{}, timeout: timeout, validateEvery: 5, counts: map[string]int{}}
	r.m.tally = func(what string) { r.counts[what]++ }
	return r
}

// TestModelSequential runs random operation sequences against the engine
// and the reference model, comparing every reply and the whole state
// after every step.
func TestModelSequential(t *testing.T) {
	for _, backend := range modelBackends() {
		t.Run(backend, func(t *testing.T) { testModelSequential(t, backend) })
	}
}

func testModelSequential(t *testing.T, backend string) {
	cfg := modelSettings(t, 8000)
	start := time.Now()
	counts := map[string]int{}
	steps, seeds := 0, 0
	seed := cfg.seed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	if cfg.seed != 0 && cfg.duration == 0 {
		// A replay: one sequence of the given length.
		if !runModelSeed(t, backend, seed, cfg.steps, counts) {
			return
		}
		steps, seeds = cfg.steps, 1
	}
	for cfg.seed == 0 || cfg.duration > 0 {
		if cfg.duration > 0 && time.Since(start) >= cfg.duration || cfg.duration == 0 && steps >= cfg.steps {
			break
		}
		n := stepsPerSeed
		if cfg.duration == 0 {
			n = min(n, cfg.steps-steps)
		}
		if !runModelSeed(t, backend, seed, n, counts) {
			return
		}
		steps += n
		seeds++
		seed++
	}
	t.Logf("model summary: sequential backend=%s seeds=%d steps=%d duration=%v ops: %s", backend, seeds, steps, time.Since(start).Round(time.Millisecond), formatCounts(counts))
}

func formatCounts(counts map[string]int) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, counts[k])
	}
	return strings.Join(parts, " ")
}

// runModelSeed runs one sequence; on failure it reports the seed, the step,
// the operation log and a shrunk log, and returns false.
func runModelSeed(t *testing.T, backend string, seed int64, steps int, counts map[string]int) bool {
	t.Helper()
	// Each seed's store goes as soon as the seed passes: a long run makes
	// thousands of them.
	dir, err := os.MkdirTemp(t.TempDir(), "seed")
	if err != nil {
		t.Fatal(err)
	}
	r := newModelRun(t, backend, dir, 10*time.Second)
	g := &modelGen{r: rand.New(rand.NewSource(seed)), now: r.clock.Now, views: true, txns: true}
	ctx := context.Background()
	var ops []*modelOp
	for i := 0; i < steps; i++ {
		op := g.next()
		ops = append(ops, op)
		err := r.step(ctx, op)
		if err == nil {
			err = r.checkState(ctx)
		}
		if err != nil {
			reportModelFailure(t, backend, seed, i, ops, err, r.hung)
			return false
		}
	}
	for k, v := range r.counts {
		counts[k] += v
	}
	if err := r.txnAbortAll("endOfSeed"); err != nil {
		t.Fatal(err)
	}
	if err := r.e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	return true
}

func reportModelFailure(t *testing.T, backend string, seed int64, step int, ops []*modelOp, err error, hung bool) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "model: seed %d failed at step %d on %s (replay: go test ./engine -run TestModelSequential -v -model.backend=%s -model.seed=%d -model.steps=%d)\n%v\n", seed, step, backend, backend, seed, step+1, err)
	from := max(0, len(ops)-150)
	fmt.Fprintf(&b, "operation log (steps %d..%d):\n", from, len(ops)-1)
	for i := from; i < len(ops); i++ {
		fmt.Fprintf(&b, "  %4d %s\n", i, ops[i])
	}
	if !hung || !errors.Is(err, errModelHang) {
		if short, serr := shrinkModelOps(t, backend, ops, 45*time.Second); len(short) < len(ops) {
			fmt.Fprintf(&b, "shrunk to %d steps, failing with: %v\n", len(short), serr)
			for i, op := range short {
				fmt.Fprintf(&b, "  %4d %s\n", i, op)
			}
		}
	}
	t.Error(b.String())
}

// replayModelOps runs ops on a fresh engine and model and returns the first
// failure, if any.
func replayModelOps(t *testing.T, backend string, ops []*modelOp, timeout time.Duration) error {
	dir, err := os.MkdirTemp(t.TempDir(), "shrink")
	if err != nil {
		t.Fatal(err)
	}
	r := newModelRun(t, backend, dir, timeout)
	r.validateEvery = 1
	ctx := context.Background()
	for _, op := range ops {
		cp := *op
		err := r.step(ctx, &cp)
		if err == nil {
			err = r.checkState(ctx)
		}
		if err != nil {
			if !r.hung {
				r.txnAbortAll("endOfSeed")
				r.e.Close()
				os.RemoveAll(dir)
			}
			return err
		}
	}
	if err := r.txnAbortAll("endOfSeed"); err != nil {
		return err
	}
	r.e.Close()
	os.RemoveAll(dir)
	return nil
}

// shrinkModelOps removes chunks of operations, then single ones, as long
// as the sequence still fails, within the time budget.
func shrinkModelOps(t *testing.T, backend string, ops []*modelOp, budget time.Duration) ([]*modelOp, error) {
	deadline := time.Now().Add(budget)
	cur := slices.Clone(ops)
	lastErr := replayModelOps(t, backend, cur, 2*time.Second)
	if lastErr == nil {
		return ops, nil // not reproducible by replay
	}
	for chunk := len(cur) / 2; chunk >= 1 && time.Now().Before(deadline); chunk /= 2 {
		for i := 0; i+chunk <= len(cur) && time.Now().Before(deadline); {
			try := append(slices.Clone(cur[:i]), cur[i+chunk:]...)
			if err := replayModelOps(t, backend, try, 2*time.Second); err != nil {
				cur, lastErr = try, err
				continue
			}
			i += chunk
		}
	}
	return cur, lastErr
}
