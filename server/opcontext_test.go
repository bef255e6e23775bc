package server

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestOpContext: a connection's context ends at the command's deadline
// with DeadlineExceeded, for itself and the contexts made from it, and
// when canceled with its cause, which contextCause finds under them; a
// command that finishes takes its deadline with it, and one that never
// asks for Done or Err sets no timer.
func TestOpContext(t *testing.T) {
	parent, stop := context.WithCancel(context.Background())
	defer stop()
	c := newOpContext(parent)
	defer c.release()

	c.setDeadline(time.Now().Add(20 * time.Millisecond))
	if c.timerSet {
		t.Error("a deadline set its timer before anyone asked")
	}
	if d, ok := c.Deadline(); !ok || time.Until(d) > 20*time.Millisecond {
		t.Errorf("Deadline = %v, %v", d, ok)
	}
	child, cancelChild := context.WithCancel(context.WithValue(c, struct{}{}, 1))
	defer cancelChild()
	select {
	case <-child.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the deadline did not end the context made from it")
	}
	if !errors.Is(c.Err(), context.DeadlineExceeded) || !errors.Is(child.Err(), context.DeadlineExceeded) {
		t.Errorf("Err = %v, child's %v", c.Err(), child.Err())
	}
	if !c.finish() {
		t.Error("finish did not report the deadline's cancellation")
	}

	// The next context: no deadline once a command finished, and a
	// cancellation's cause.
	c2 := newOpContext(parent)
	defer c2.release()
	c2.setDeadline(time.Now().Add(time.Hour))
	if c2.Err() != nil || c2.finish() {
		t.Fatal("canceled early")
	}
	if _, ok := c2.Deadline(); ok {
		t.Error("the deadline outlived its command")
	}
	direct, cancelDirect := context.WithCancel(c2)
	defer cancelDirect()
	c2.cancel(context.Canceled, errKilled)
	<-direct.Done()
	if got := contextCause(context.WithValue(c2, struct{}{}, 1)); got != errKilled {
		t.Errorf("cause %v, want %v", got, errKilled)
	}
	if !c2.finish() {
		t.Error("finish did not report the cancellation")
	}

	// The server's context ending cancels the connection's.
	c3 := newOpContext(parent)
	defer c3.release()
	stop()
	select {
	case <-c3.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the server's context ending did not cancel the connection's")
	}
}
