package spill

import (
	"io"
	"os"
)

// FS is the file system temporary files are kept on.
type FS interface {
	// MkdirAll makes dir and its parents.
	MkdirAll(dir string) error
	// Create makes a new, empty file, truncating one of the same name.
	Create(name string) (io.WriteCloser, error)
	// Open opens a file to read.
	Open(name string) (io.ReadCloser, error)
	// RemoveAll removes name and, if it is a directory, all it holds; a
	// name that does not exist is no error.
	RemoveAll(name string) error
}

// OS is the operating system's file system.
var OS FS = osFS{}

type osFS struct{}

func (osFS) MkdirAll(dir string) error { return os.MkdirAll(dir, 0o700) }

func (osFS) Create(name string) (io.WriteCloser, error) {
	return os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
}

func (osFS) Open(name string) (io.ReadCloser, error) { return os.Open(name) }

func (osFS) RemoveAll(name string) error { return os.RemoveAll(name) }
