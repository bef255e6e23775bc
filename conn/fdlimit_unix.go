//go:build unix

package conn

import "syscall"

// fdConnLimit is how many connections the process's file descriptor limit
// allows: 80% of it, as MongoDB reserves the rest for its files. 0 means
// unknown.
func fdConnLimit() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur == 0 || r.Cur > 1<<40 {
		return 0
	}
	return int(r.Cur * 8 / 10)
}
