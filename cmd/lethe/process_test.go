package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// process is the lethe binary running under a test, its JSON log read
// line by line.
type process struct {
	t    *testing.T
	cmd  *exec.Cmd
	logs chan map[string]any // closed when the process's stderr ends
}

// startBinary builds the binary into dir and runs it with args (the log
// format is JSON); it is killed when the test ends if still running.
func startBinary(t *testing.T, dir string, args ...string) *process {
	t.Helper()
	bin := filepath.Join(dir, "lethe")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, append(args, "--log-format", "json")...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	p := &process{t: t, cmd: cmd, logs: make(chan map[string]any, 100)}
	go func() {
		defer close(p.logs)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var entry map[string]any
			if json.Unmarshal(sc.Bytes(), &entry) == nil {
				p.logs <- entry
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	return p
}

// waitLog returns the next log entry whose message is msg.
func (p *process) waitLog(msg string) map[string]any {
	p.t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case e, ok := <-p.logs:
			if !ok {
				p.t.Fatalf("lethe exited before logging %q", msg)
			}
			if e["msg"] == msg {
				return e
			}
		case <-timeout:
			p.t.Fatalf("no %q log line", msg)
		}
	}
}

// wait drains the log until the process exits and returns how it ended.
func (p *process) wait() error {
	for range p.logs {
	}
	return p.cmd.Wait()
}
