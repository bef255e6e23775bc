package conn

import (
	"errors"
	"net"
	"os"
	"time"
)

// A command that runs long ends early when its client goes away. The
// transport notices: while the Handler serves, the connection's goroutine
// does not read, so after a moment a timer lends the reader to watchPeer,
// which waits on the socket and tells the Handler if it closes. Most
// commands finish sooner and never pay for the watch.
//
// The timer is not set and stopped around every command, which would cost
// two updates of the runtime's timers per request, nor does a command read
// the clock, which is slow on some virtual machines: a command only counts
// itself, and the timer, once armed, fires every watchPeerAfter while
// commands run. The watch starts when it finds the command it found the
// last time still running, between one and two watchPeerAfter into it
// (one for a command that armed the timer itself), and the timer stops
// when no command runs. A busy connection's timer thus fires about once
// per watchPeerAfter, however many commands it runs.

// watchPeerAfter is how long a command runs, at least, before the
// connection starts watching its socket for the client going away.
const watchPeerAfter = 20 * time.Millisecond

// The states of a connection's watch, in Conn.watchState.
const (
	watchIdle    int32 = iota // no command runs
	watchRunning              // a command runs; the socket is not watched
	watchOn                   // watchPeer has the reader
)

func (c *Conn) startWatch() {
	c.watchDone = make(chan struct{}, 1)
	c.watch = time.AfterFunc(time.Hour, c.watchTick)
	c.watch.Stop()
}

// stopWatch ends the watch of a connection that is closing.
func (c *Conn) stopWatch() {
	c.watchState.Store(watchIdle)
	c.watch.Stop()
}

// dispatch has the Handler serve req under the peer watch.
func (c *Conn) dispatch(req *Request) Reply {
	cmd := c.cmdSeq.Add(1)
	c.watchState.Store(watchRunning)
	if !c.watchArmed.Load() && c.watchArmed.CompareAndSwap(false, true) {
		c.watchSeen.Store(cmd)
		c.watch.Reset(watchPeerAfter)
	}
	reply := c.h.Serve(req)
	if !c.watchState.CompareAndSwap(watchRunning, watchIdle) {
		// watchPeer is reading the socket: wake it and wait, so that this
		// goroutine has the reader to itself again.
		c.nc.SetReadDeadline(time.Unix(1, 0))
		c.readDeadline = time.Unix(1, 0)
		<-c.watchDone
		c.watchState.Store(watchIdle)
	}
	return reply
}

// watchTick runs when the timer fires, holding watchArmed: it starts
// watchPeer for the command it saw running the last time, sets the timer
// again for one that began since, and otherwise lets watchArmed go for
// the next command to take.
func (c *Conn) watchTick() {
	for {
		if c.watchState.Load() == watchRunning {
			// A command that began since the load of the state shows in
			// cmdSeq, or at worst has the watch start early, which costs
			// nothing but the watch.
			if cmd := c.cmdSeq.Load(); cmd != c.watchSeen.Load() {
				c.watchSeen.Store(cmd)
				c.watch.Reset(watchPeerAfter)
				return
			}
			if c.watchState.CompareAndSwap(watchRunning, watchOn) {
				c.watchPeer()
			}
		}
		c.watchArmed.Store(false)
		// dispatch stores the state before it loads watchArmed, and this
		// loads the state after storing watchArmed: a command that began
		// meanwhile is seen here, or arms the timer itself.
		if c.watchState.Load() != watchRunning || !c.watchArmed.CompareAndSwap(false, true) {
			return
		}
	}
}

// watchPeer waits, while a long command runs, for the client to close its
// connection, and then tells the Handler. It ends when the client sends
// something (a pipelined message: the command goes on) or dispatch wakes it
// with a past read deadline.
func (c *Conn) watchPeer() {
	defer func() { c.watchDone <- struct{}{} }()
	_, err := c.rd.Peek(1)
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		return
	}
	if errors.Is(err, net.ErrClosed) && c.l.closing.Load() {
		return // Shutdown closed it
	}
	c.h.PeerGone(err)
}
