package spill

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// spoolAll adds recs to a Spool of budget bytes.
func spoolAll(t *testing.T, sc *Scratch, recs [][]byte, budget int64) *Spool {
	t.Helper()
	s := NewSpool(sc, budget)
	for _, r := range recs {
		if err := s.Add(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func readSpool(t *testing.T, s *Spool) [][]byte {
	t.Helper()
	var out [][]byte
	if err := s.Each(context.Background(), func(rec []byte) error {
		out = append(out, rec)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSpoolKeepsTheOrderEveryRead(t *testing.T) {
	recs := records(3000, 9)
	var total int64
	for _, r := range recs {
		total += int64(len(r)) + RecordOverhead
	}
	for _, budget := range []int64{0, 4 << 10, total - 1, total} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			fs := newMemFS()
			sc := New(Config{FS: fs, Dir: "/tmp/req"})
			defer sc.Close()
			s := spoolAll(t, sc, recs, budget)
			if want := budget < total; s.Spilled() != want {
				t.Fatalf("a budget of %d bytes for %d: spilled %v, want %v", budget, total, s.Spilled(), want)
			}
			if s.Spilled() && (s.Held() != 0 || fs.count() != 1) {
				t.Errorf("spilled, it holds %d bytes in memory and %d files", s.Held(), fs.count())
			}
			// Each read, as each pipeline of a $facet does, sees them all.
			for read := range 3 {
				out := readSpool(t, s)
				if len(out) != len(recs) {
					t.Fatalf("read %d: %d records, want %d", read, len(out), len(recs))
				}
				for i := range recs {
					if !bytes.Equal(out[i], recs[i]) {
						t.Fatalf("read %d, record %d: %q, want %q", read, i, out[i], recs[i])
					}
				}
			}
			used, _ := sc.Used()
			if s.Spilled() && used != int64(fs.written) {
				t.Errorf("the Scratch counts %d bytes for a file of %d", used, fs.written)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if used, _ := sc.Used(); used != 0 || fs.count() != 0 {
				t.Errorf("after Close, %d bytes counted and %d files left", used, fs.count())
			}
			if err := s.Each(context.Background(), func([]byte) error { return nil }); err == nil {
				t.Error("reading a closed Spool succeeded")
			}
		})
	}
}

func TestSpoolWithoutScratchKeepsAll(t *testing.T) {
	s := spoolAll(t, nil, records(100, 1), 10)
	if s.Spilled() || len(readSpool(t, s)) != 100 {
		t.Errorf("without a Scratch: spilled %v", s.Spilled())
	}
}

func TestSpoolOnDisk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "_tmp", "1")
	sc := New(Config{Dir: dir})
	recs := records(2000, 8)
	s := spoolAll(t, sc, recs, 8<<10)
	if out := readSpool(t, s); len(out) != len(recs) || !bytes.Equal(out[1999], recs[1999]) {
		t.Fatalf("%d records read back", len(out))
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 1 {
		t.Fatalf("the spool on disk: %v, %v", ents, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Errorf("after Close: %v, %v", ents, err)
	}
	if err := sc.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestSpoolBoundsAndFailures(t *testing.T) {
	ctx := context.Background()
	tooBig := errors.New("too big")
	lowDisk := errors.New("disk low")
	cases := []struct {
		name      string
		cfg       Config
		failAfter int64
		want      error
		wantText  string
	}{
		{name: "MaxBytes", cfg: Config{MaxBytes: 100 << 10, Exceeded: func(int64) error { return tooBig }}, want: tooBig},
		{name: "Check", cfg: Config{Check: func(n int64) error {
			if n <= 0 || n > bufSize {
				t.Errorf("asked about %d bytes, want a buffer's worth at most", n)
			}
			return lowDisk
		}}, want: lowDisk},
		{name: "write", failAfter: 50 << 10, wantText: "injected write failure"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := newMemFS()
			fs.failAfter = c.failAfter
			c.cfg.FS, c.cfg.Dir = fs, "/tmp/req"
			sc := New(c.cfg)
			s := NewSpool(sc, 4<<10)
			var err error
			for _, r := range records(3000, 3) {
				if err = s.Add(ctx, r); err != nil {
					break
				}
			}
			if err == nil {
				err = s.Each(ctx, func([]byte) error { return nil })
			}
			if c.want != nil && !errors.Is(err, c.want) || c.wantText != "" && !strings.Contains(fmt.Sprint(err), c.wantText) {
				t.Fatalf("%v, want %v%s", err, c.want, c.wantText)
			}
			if !strings.Contains(err.Error(), "spill: write /tmp/req/run-1") {
				t.Errorf("%v: no context", err)
			}
			if err2 := s.Each(ctx, func([]byte) error { return nil }); err2 == nil {
				t.Error("a failed Spool reads")
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if used, _ := sc.Used(); used != 0 || fs.count() != 0 {
				t.Errorf("after Close, %d bytes counted and %d files left", used, fs.count())
			}
			_ = sc.Close()
		})
	}
}

func TestSpoolCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	sc := New(Config{FS: newMemFS(), Dir: "/tmp/req"})
	defer sc.Close()
	s := spoolAll(t, sc, records(3000, 5), 8<<10)
	defer s.Close()
	cancel()
	if err := s.Each(ctx, func([]byte) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("%v, want context.Canceled", err)
	}
}
