package pebblekv

import (
	"fmt"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"
)

// logWriteRetry bounds how long a write to the WAL or MANIFEST waits for
// space before its error reaches pebble, which then ends the process.
const logWriteRetry = 10 * time.Second

// logRetryFS retries writes to pebble's logs (the WAL and the MANIFEST)
// that fail with ENOSPC. Pebble cannot survive a failed log write: the WAL
// writer keeps its first error and the commit ends the process, and a
// failed WAL close at rotation panics. But a full disk is often full for a
// moment only: a flush or compaction that ran out of space deletes its
// output right after. Waiting for that is better than dying.
//
// Only write(2) is retried: a failed fsync may have dropped the dirty pages,
// so a retried fsync could report success for lost data. Table and blob
// writes fail at once, so that their jobs give their space back.
//
// A WAL that still cannot be written or synced ends the process through
// walFailed, before pebble sees the error: pebble cannot go on either, and
// where it meets the error while closing the previous WAL at a rotation it
// panics with its mutex released, which Go turns into an unrecoverable
// "unlock of unlocked mutex" instead of a clear exit.
type logRetryFS struct {
	vfs.FS
	log       *zap.Logger
	walFailed func(msg string) // nil: the error goes to pebble
}

func isLogFile(name string) bool {
	base := name[strings.LastIndexByte(name, '/')+1:]
	return strings.HasSuffix(base, ".log") || strings.HasPrefix(base, "MANIFEST-")
}

func (fs logRetryFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil && fs.walFailed != nil && strings.HasSuffix(name, ".log") {
		// Pebble panics when it cannot make the next WAL at a rotation.
		fs.walFailed(fmt.Sprintf("creating the write-ahead log %s failed: %v", name, err))
	}
	if err != nil || !isLogFile(name) {
		return f, err
	}
	lf := logRetryFile{File: f, name: name, log: fs.log}
	if strings.HasSuffix(name, ".log") {
		lf.File = &walAllocFile{File: f}
		lf.walFailed = fs.walFailed
	}
	return lf, nil
}

func (fs logRetryFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	return fs.wrap(name, f, err)
}

func (fs logRetryFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, c)
	return fs.wrap(newname, f, err)
}

func (fs logRetryFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, c, opts...)
	return fs.wrap(name, f, err)
}

func (fs logRetryFS) Unwrap() vfs.FS { return fs.FS }

type logRetryFile struct {
	vfs.File
	name      string
	log       *zap.Logger
	walFailed func(msg string) // set for WAL files only
}

// failed hands a WAL error to walFailed, which does not return, or returns
// it for pebble to handle.
func (f logRetryFile) failed(op string, err error) error {
	if err != nil && f.walFailed != nil {
		f.walFailed(fmt.Sprintf("%s of the write-ahead log %s failed: %v", op, f.name, err))
	}
	return err
}

func (f logRetryFile) Sync() error { return f.failed("sync", f.File.Sync()) }

func (f logRetryFile) SyncData() error { return f.failed("sync", f.File.SyncData()) }

func (f logRetryFile) SyncTo(length int64) (bool, error) {
	full, err := f.File.SyncTo(length)
	return full, f.failed("sync", err)
}

func (f logRetryFile) Close() error { return f.failed("close", f.File.Close()) }

func (f logRetryFile) Write(p []byte) (int, error) {
	var done int
	var deadline time.Time
	wait := 10 * time.Millisecond
	for {
		n, err := f.File.Write(p[done:])
		done += n
		if err == nil || !vfs.IsNoSpaceError(err) {
			return done, f.failed("write", err)
		}
		now := time.Now()
		if deadline.IsZero() {
			deadline = now.Add(logWriteRetry)
			f.log.Warn("disk full: a log write waits for space", zap.String("file", f.name))
		} else if now.After(deadline) {
			return done, f.failed("write", err)
		}
		time.Sleep(wait)
		wait = min(2*wait, time.Second)
	}
}
