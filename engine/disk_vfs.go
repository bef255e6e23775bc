package engine

import (
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
type logRetryFS struct {
	vfs.FS
	log *zap.Logger
}

func isLogFile(name string) bool {
	base := name[strings.LastIndexByte(name, '/')+1:]
	return strings.HasSuffix(base, ".log") || strings.HasPrefix(base, "MANIFEST-")
}

func (fs logRetryFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !isLogFile(name) {
		return f, err
	}
	return logRetryFile{File: f, name: name, log: fs.log}, nil
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
	name string
	log  *zap.Logger
}

func (f logRetryFile) Write(p []byte) (int, error) {
	var done int
	var deadline time.Time
	wait := 10 * time.Millisecond
	for {
		n, err := f.File.Write(p[done:])
		done += n
		if err == nil || !vfs.IsNoSpaceError(err) {
			return done, err
		}
		now := time.Now()
		if deadline.IsZero() {
			deadline = now.Add(logWriteRetry)
			f.log.Warn("disk full: a log write waits for space", zap.String("file", f.name))
		} else if now.After(deadline) {
			return done, err
		}
		time.Sleep(wait)
		wait = min(2*wait, time.Second)
	}
}
