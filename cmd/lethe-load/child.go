package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// childStartTimeout bounds how long a child server may take to answer
// its first ping.
const childStartTimeout = 30 * time.Second

// childServer is a lethe binary run as a child process over a fresh data
// directory: a server measured apart from the load tool, so that its CPU
// time (/proc/<pid>/stat) is its own, and one of two builds compared.
type childServer struct {
	bin  string
	addr string
	dir  string
	// args are the flags it was started with after its own (listen
	// address, data directory, log level): --server-args.
	args []string
	cmd  *exec.Cmd
	// exited is closed when the process has ended; err is then its wait
	// error.
	exited chan struct{}
	err    error
	// stderr keeps the process's messages, for the error of a failed
	// start or stop.
	stderr *lockedBuffer
}

// childFlags adds the flags of the child servers to fs.
func childFlags(fs *flag.FlagSet, cfg *config) {
	fs.Func("server-args", "extra `flags` for the lethe of --server-bin or --compare, separated by spaces, after the tool's own (--listen, --data-dir, --log-level); e.g. \"--store tikv-mock\"", func(s string) error {
		cfg.serverArgs = strings.Fields(s)
		return nil
	})
}

// startChild starts bin on a free loopback port over a fresh data
// directory, with the flags every compared server gets and then args
// (--server-args), and waits until it answers ping.
func startChild(ctx context.Context, bin string, args []string) (*childServer, error) {
	dir, err := os.MkdirTemp("", "lethe-load-child-")
	if err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	c := &childServer{bin: bin, addr: addr, dir: dir, args: args}
	if err := c.launch(ctx); err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	return c, nil
}

// launch starts the process over c's directory and address and waits
// until it answers ping; a process that does not is stopped.
func (c *childServer) launch(ctx context.Context) error {
	c.exited, c.err, c.stderr = make(chan struct{}), nil, &lockedBuffer{}
	// Only the flags the run needs: every other setting is the binary's
	// default, so two builds compared run as they would be deployed.
	args := append([]string{"--listen", c.addr, "--data-dir", c.dir, "--log-level", "warn"}, c.args...)
	c.cmd = exec.Command(c.bin, args...)
	c.cmd.Stdout = c.stderr
	c.cmd.Stderr = c.stderr
	if err := c.cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", c.bin, err)
	}
	go func() {
		c.err = c.cmd.Wait()
		close(c.exited)
	}()
	if err := c.waitReady(ctx); err != nil {
		return errors.Join(err, c.terminate())
	}
	return nil
}

// restart stops the process as stop does but keeps its data directory,
// and starts it again over it on the same address: what a store looks
// like after a reopen (its WAL replayed and flushed). Clients reconnect
// by themselves.
func (c *childServer) restart(ctx context.Context) error {
	if err := c.terminate(); err != nil {
		return err
	}
	return c.launch(ctx)
}

// freeAddr returns a loopback address with a port free a moment ago. The
// child binds it itself, so another process could take it in between; on
// a test machine that is rare enough to report rather than retry.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	addr := l.Addr().String()
	return addr, l.Close()
}

func (c *childServer) pid() int { return c.cmd.Process.Pid }

// cpuClock reads the CPU time of the child's current process, which a
// restart changes.
func (c *childServer) cpuClock() cpuClock {
	return cpuClock{what: "the --server-bin child", read: func() (time.Duration, error) { return pidCPU(c.pid()).read() }}
}

// waitReady pings the child until it answers, it exits, or the start
// timeout passes.
func (c *childServer) waitReady(ctx context.Context) error {
	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + c.addr + "/?directConnection=true").
		SetServerSelectionTimeout(time.Second).SetConnectTimeout(time.Second))
	if err != nil {
		return fmt.Errorf("connect to %s: %w", c.bin, err)
	}
	defer client.Disconnect(context.Background())
	deadline := time.Now().Add(childStartTimeout)
	for {
		err := client.Database("admin").RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err()
		if err == nil {
			return nil
		}
		select {
		case <-c.exited:
			return fmt.Errorf("%s exited before answering (%v): %s", c.bin, c.err, c.stderr.String())
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer ping within %v: %w", c.bin, childStartTimeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends the child as terminate does and removes its data directory.
func (c *childServer) stop() error {
	return errors.Join(c.terminate(), os.RemoveAll(c.dir))
}

// terminate asks the child to shut down (SIGTERM, as a service manager
// would) and kills it if it has not within 30 s. A child that exits with
// an error is reported.
func (c *childServer) terminate() error {
	var errs []error
	select {
	case <-c.exited:
	default:
		if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			errs = append(errs, fmt.Errorf("signal %s: %w", c.bin, err))
		}
		select {
		case <-c.exited:
		case <-time.After(30 * time.Second):
			errs = append(errs, fmt.Errorf("%s did not stop within 30s of SIGTERM; killed", c.bin))
			_ = c.cmd.Process.Kill()
			<-c.exited
		}
	}
	if c.err != nil {
		errs = append(errs, fmt.Errorf("%s: %w: %s", c.bin, c.err, c.stderr.String()))
	}
	return errors.Join(errs...)
}

// lockedBuffer is a buffer the child's output goroutines and the tool can
// share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
