package spill

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// memFS is a file system in memory that can fail writes past a number of
// bytes.
type memFS struct {
	mu        sync.Mutex
	files     map[string]*bytes.Buffer
	dirs      map[string]bool
	failAfter int64 // fail writes once this many bytes were written; 0 never
	written   int64
}

func newMemFS() *memFS { return &memFS{files: map[string]*bytes.Buffer{}, dirs: map[string]bool{}} }

func (m *memFS) MkdirAll(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dirs[dir] = true
	return nil
}

type memFile struct {
	m *memFS
	b *bytes.Buffer
}

func (f memFile) Write(p []byte) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.m.failAfter > 0 && f.m.written+int64(len(p)) > f.m.failAfter {
		return 0, errors.New("injected write failure")
	}
	f.m.written += int64(len(p))
	return f.b.Write(p)
}

func (memFile) Close() error { return nil }

func (m *memFS) Create(name string) (io.WriteCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirs[filepath.Dir(name)] {
		return nil, fmt.Errorf("create %s: %w", name, os.ErrNotExist)
	}
	b := &bytes.Buffer{}
	m.files[name] = b
	return memFile{m: m, b: b}, nil
}

func (m *memFS) Open(name string) (io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.files[name]
	if !ok {
		return nil, fmt.Errorf("open %s: %w", name, os.ErrNotExist)
	}
	return io.NopCloser(bytes.NewReader(b.Bytes())), nil
}

func (m *memFS) RemoveAll(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for f := range m.files {
		if f == name || strings.HasPrefix(f, name+"/") {
			delete(m.files, f)
		}
	}
	delete(m.dirs, name)
	return nil
}

func (m *memFS) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.files)
}

// byFirstByte orders records by their first byte alone, so that many
// compare equal and stability shows.
func byFirstByte(a, b []byte) int { return int(a[0]) - int(b[0]) }

func records(n int, seed uint64) [][]byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	recs := make([][]byte, n)
	for i := range recs {
		recs[i] = fmt.Appendf([]byte{byte(rng.IntN(16))}, "rec %d %s", i, strings.Repeat("x", rng.IntN(200)))
	}
	return recs
}

func drain(t *testing.T, it *Iter) [][]byte {
	t.Helper()
	var out [][]byte
	for {
		rec, err := it.Next(context.Background())
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec)
	}
}

func sortThrough(t *testing.T, sc *Scratch, recs [][]byte, budget int64) ([][]byte, *Sorter) {
	t.Helper()
	ctx := context.Background()
	s := NewSorter(sc, byFirstByte, budget)
	for _, r := range recs {
		if err := s.Add(ctx, slices.Clone(r)); err != nil {
			t.Fatal(err)
		}
	}
	spilled := s.Spilled()
	it, err := s.Iter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := drain(t, it)
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if !spilled && budget < 1<<20 {
		t.Fatalf("a budget of %d bytes did not spill", budget)
	}
	return out, s
}

func TestSortIsStableAcrossRuns(t *testing.T) {
	// Budgets from a few records per run to enough runs for merge passes.
	for _, budget := range []int64{300, 4 << 10, 64 << 10, 1 << 30} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			fs := newMemFS()
			sc := New(Config{FS: fs, Dir: "/tmp/req"})
			recs := records(5000, uint64(budget))
			out, _ := sortThrough(t, sc, recs, budget)
			want := slices.Clone(recs)
			slices.SortStableFunc(want, byFirstByte)
			if len(out) != len(want) {
				t.Fatalf("%d records, want %d", len(out), len(want))
			}
			for i := range want {
				if !bytes.Equal(out[i], want[i]) {
					t.Fatalf("record %d: %q, want %q", i, out[i], want[i])
				}
			}
			if n := fs.count(); n != 0 {
				t.Errorf("%d files left after the iterator's end", n)
			}
			if used, _ := sc.Used(); used != 0 {
				t.Errorf("%d bytes still counted after the end", used)
			}
			if err := sc.Close(); err != nil {
				t.Fatal(err)
			}
			if len(fs.dirs) != 0 {
				t.Errorf("directories left after Close: %v", fs.dirs)
			}
		})
	}
}

func TestOnDisk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "_tmp", "1")
	sc := New(Config{Dir: dir})
	recs := records(2000, 7)
	s := NewSorter(sc, byFirstByte, 8<<10)
	ctx := context.Background()
	for _, r := range recs {
		if err := s.Add(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	it, err := s.Iter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Stop half way: Close of the Scratch removes what is left.
	for range 100 {
		if _, err := it.Next(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) == 0 {
		t.Fatalf("runs on disk mid-merge: %v, %v", ents, err)
	}
	if err := sc.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the scratch directory survives Close: %v", err)
	}
	if _, err := it.Next(ctx); err == nil {
		t.Error("reading on after Close succeeded")
	}
	_ = it.Close()
}

func TestBoundsAndChecks(t *testing.T) {
	ctx := context.Background()
	recs := records(3000, 3)
	tooBig := errors.New("too big")
	lowDisk := errors.New("disk low")
	cases := []struct {
		name string
		cfg  Config
		want error
	}{
		{"MaxBytes", Config{MaxBytes: 20 << 10, Exceeded: func(int64) error { return tooBig }}, tooBig},
		{"MaxBytes default error", Config{MaxBytes: 20 << 10}, ErrTooLarge},
		{"Check", Config{Check: func(n int64) error {
			if n <= 0 {
				t.Errorf("asked about %d bytes", n)
			}
			return lowDisk
		}}, lowDisk},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := newMemFS()
			c.cfg.FS, c.cfg.Dir = fs, "/tmp/req"
			sc := New(c.cfg)
			s := NewSorter(sc, byFirstByte, 4<<10)
			var err error
			for _, r := range recs {
				if err = s.Add(ctx, r); err != nil {
					break
				}
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("%v, want %v", err, c.want)
			}
			_ = sc.Close()
			if fs.count() != 0 {
				t.Errorf("%d files left", fs.count())
			}
		})
	}
}

func TestWriteFailure(t *testing.T) {
	fs := newMemFS()
	fs.failAfter = 50 << 10
	sc := New(Config{FS: fs, Dir: "/tmp/req"})
	s := NewSorter(sc, byFirstByte, 8<<10)
	var err error
	for _, r := range records(3000, 4) {
		if err = s.Add(context.Background(), r); err != nil {
			break
		}
	}
	if err == nil || !strings.Contains(err.Error(), "injected write failure") || !strings.Contains(err.Error(), "spill: write") {
		t.Fatalf("%v, want the injected failure with context", err)
	}
	if used, _ := sc.Used(); used >= fs.failAfter {
		t.Errorf("the failed run is still counted: %d bytes", used)
	}
	_ = sc.Close()
	if fs.count() != 0 {
		t.Errorf("%d files left", fs.count())
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	fs := newMemFS()
	sc := New(Config{FS: fs, Dir: "/tmp/req"})
	defer sc.Close()
	s := NewSorter(sc, byFirstByte, 8<<10)
	recs := records(3000, 5)
	for _, r := range recs {
		if err := s.Add(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	it, err := s.Iter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	for range len(recs) {
		if _, err = it.Next(ctx); err != nil {
			break
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("%v, want context.Canceled", err)
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if fs.count() != 0 {
		t.Errorf("%d files left after Close", fs.count())
	}
}

func TestCorruptRun(t *testing.T) {
	fs := newMemFS()
	sc := New(Config{FS: fs, Dir: "/tmp/req"})
	defer sc.Close()
	s := NewSorter(sc, byFirstByte, 4<<10)
	ctx := context.Background()
	for _, r := range records(500, 6) {
		if err := s.Add(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range fs.files {
		b.Truncate(b.Len() - 3)
	}
	it, err := s.Iter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for {
		if _, err = it.Next(ctx); err != nil {
			break
		}
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), "spill: read") {
		t.Fatalf("%v, want an unexpected EOF with context", err)
	}
}
