package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/cockroachdb/pebble/v2"
)

// runPebbleSync measures the ceiling for durable writes: pebble, opened as
// the engine opens it, committing one docSize value per synced batch from
// the same number of concurrent writers. Concurrent synced commits share
// WAL syncs, so this ceiling rises with --clients exactly as the server's
// should. The store lives in the temporary directory, like the in-process
// server's, so both write to the same disk.
func runPebbleSync(ctx context.Context, e *env) (_ []result, err error) {
	dir, err := os.MkdirTemp("", "lethe-load-pebble-")
	if err != nil {
		return nil, fmt.Errorf("create pebble directory: %w", err)
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()

	db, err := pebble.Open(dir, &pebble.Options{Logger: pebbleLogger{e.progress}})
	if err != nil {
		return nil, fmt.Errorf("open pebble in %s: %w", dir, err)
	}
	defer func() {
		if cerr := db.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close pebble: %w", cerr))
		}
	}()

	value := bytes.Repeat([]byte("x"), docSize)
	s, err := measureFor(ctx, e.cfg.clients, e.cfg.duration, func(client int) op {
		// Keys are the client number then a counter: every write is a new
		// key, as an insert is.
		key := binary.BigEndian.AppendUint64(nil, uint64(client))
		var seq uint64
		return func(context.Context) error {
			seq++
			key = binary.BigEndian.AppendUint64(key[:8], seq)
			b := db.NewBatch()
			defer b.Close()
			if err := b.Set(key, value, nil); err != nil {
				return fmt.Errorf("pebble set: %w", err)
			}
			if err := b.Commit(pebble.Sync); err != nil {
				return fmt.Errorf("pebble commit: %w", err)
			}
			return nil
		}
	})
	if err != nil {
		return nil, err
	}
	return []result{{name: "pebble-sync", sample: s}}, nil
}

// pebbleLogger keeps pebble's informational chatter out of the report and
// passes its errors on.
type pebbleLogger struct{ w io.Writer }

func (pebbleLogger) Infof(string, ...any) {}

func (l pebbleLogger) Errorf(format string, args ...any) {
	fmt.Fprintf(l.w, "pebble: "+format+"\n", args...)
}

func (pebbleLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebble: "+format, args...))
}
