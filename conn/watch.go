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

// watchPeerAfter is how long a command runs before the connection starts
// watching its socket for the client going away.
const watchPeerAfter = 20 * time.Millisecond

func (c *Conn) startWatch() {
	c.watchDone = make(chan struct{}, 1)
	c.watch = time.AfterFunc(time.Hour, c.watchPeer)
	c.watch.Stop()
}

// dispatch has the Handler serve req while the peer watch is armed.
func (c *Conn) dispatch(req *Request) Reply {
	c.watch.Reset(watchPeerAfter)
	reply := c.h.Serve(req)
	if !c.watch.Stop() {
		// watchPeer is reading the socket: wake it and wait, so that this
		// goroutine has the reader to itself again.
		c.nc.SetReadDeadline(time.Unix(1, 0))
		c.readDeadline = time.Unix(1, 0)
		<-c.watchDone
	}
	return reply
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
