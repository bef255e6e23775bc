//go:build !unix

package server

func fdConnLimit() int { return 0 }
