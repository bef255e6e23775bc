//go:build !unix

package conn

func fdConnLimit() int { return 0 }
