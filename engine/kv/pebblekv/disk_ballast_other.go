//go:build !linux

package pebblekv

import "github.com/cockroachdb/pebble/v2/vfs"

// allocate reports that f's space must be written to be reserved.
func allocate(vfs.File, int64) bool { return false }
