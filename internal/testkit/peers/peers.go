// Package peers finds the npm packages pinned in testdata/peers for the tests that run against them, and starts
// them as child processes. The packages are real MCP servers, the MCP TypeScript SDK, the inspector CLI, the MCP
// conformance suite, Node 22, and the A2A SDK with express.
//
// `make test` and `make peers` install them with npm ci. A test that needs them and finds them missing fails and
// never skips, so a CI run cannot pass without running every test.
//
// It owns only the locating and starting of the peers. It imports only the standard library and no package of this
// project.
package peers

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// minNodeMajor is the oldest major version of Node that Node accepts on PATH.
const minNodeMajor = 20

// waitDelay bounds how long Wait waits for a killed peer's output pipes to close. A peer can leave a child of its
// own holding them.
const waitDelay = 5 * time.Second

const installHint = "run `make test` (or `make peers`) to install the npm peers pinned in testdata/peers"

// moduleRoot is the directory holding go.mod, found once per test binary from the working directory.
var moduleRoot = sync.OnceValues(func() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("peers: working directory: %w", err)
	}
	return findModuleRoot(wd)
})

// findModuleRoot walks up from dir to the first directory that holds a go.mod.
func findModuleRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("peers: no go.mod in %s or any parent", dir)
		}
	}
}

// pathNode is the node on PATH and its version, checked once per test binary.
var pathNode = sync.OnceValues(func() (string, error) {
	path, err := exec.LookPath("node")
	if err != nil {
		return "", fmt.Errorf("peers: node on PATH: %w (the tests need Node %d or later with npm)", err, minNodeMajor)
	}
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("peers: %s --version: %w", path, err)
	}
	major, err := nodeMajor(string(out))
	if err != nil {
		return "", fmt.Errorf("peers: %s --version: %w", path, err)
	}
	if major < minNodeMajor {
		return "", fmt.Errorf("peers: %s is Node %s; the tests need Node %d or later",
			path, strings.TrimSpace(string(out)), minNodeMajor)
	}
	return path, nil
})

// nodeMajor parses the major version out of `node --version` output such as "v20.20.2\n".
func nodeMajor(version string) (int, error) {
	v, ok := strings.CutPrefix(strings.TrimSpace(version), "v")
	if !ok {
		return 0, fmt.Errorf("unexpected version %q", version)
	}
	major, _, _ := strings.Cut(v, ".")
	n, err := strconv.Atoi(major)
	if err != nil {
		return 0, fmt.Errorf("unexpected version %q", version)
	}
	return n, nil
}

// Dir returns the absolute path of testdata/peers/node_modules in this module, whose root is the first directory
// holding a go.mod above the working directory. It fails the test when node_modules is missing.
func Dir(t testing.TB) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return nodeModules(t, root)
}

// nodeModules returns root/testdata/peers/node_modules, failing the test when it is missing.
func nodeModules(t testing.TB, root string) string {
	t.Helper()
	dir := filepath.Join(root, "testdata", "peers", "node_modules")
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		t.Fatalf("peers: %s is missing: %s", dir, installHint)
	}
	return dir
}

// Bin returns the path of node_modules/.bin/<name>, a peer's command. It fails the test when there is no such
// command. The commands are Node scripts: run them with Node or Node22, or use Command or Command22.
func Bin(t testing.TB, name string) string {
	t.Helper()
	if name == "" || filepath.Base(name) != name {
		t.Fatalf("peers: bad command name %q", name)
	}
	path := filepath.Join(Dir(t), ".bin", name)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("peers: command %s: %v: %s", name, err, installHint)
	}
	return path
}

// Node returns the path of the node on PATH, which must be Node 20 or later. It fails the test otherwise.
//
// node_modules/.bin holds a link named node to Node 22, so a PATH that lists that directory makes this Node 22.
func Node(t testing.TB) string {
	t.Helper()
	path, err := pathNode()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// Node22 returns the path of the Node 22 binary installed from the npm package node
// (node_modules/node/bin/node). The conformance suite needs it. It fails the test when the binary is missing.
func Node22(t testing.TB) string {
	t.Helper()
	path := filepath.Join(Dir(t), "node", "bin", "node")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("peers: Node 22: %v: %s", err, installHint)
	}
	return path
}

// Command returns a command that runs the peer command name with Node (`node <bin> args...`), so the script's
// shebang line does not matter.
//
// The command is bound to t.Context(): it is killed when the test ends, and Wait gives up on its output pipes
// a few seconds after that. Its working directory is node_modules: the inspector CLI finds its own package.json
// only from a directory whose parent holds a package.json. Its standard error goes to t.Log, one entry per line,
// prefixed with name. It inherits the environment. The caller may change any of these before Start, and must Wait
// for a command it started.
func Command(t testing.TB, name string, args ...string) *exec.Cmd {
	t.Helper()
	return command(t, Node(t), name, args)
}

// Command22 is Command with Node 22 in place of the node on PATH. The conformance suite needs it.
func Command22(t testing.TB, name string, args ...string) *exec.Cmd {
	t.Helper()
	return command(t, Node22(t), name, args)
}

func command(t testing.TB, node, name string, args []string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), node, append([]string{Bin(t, name)}, args...)...)
	cmd.Dir = Dir(t)
	cmd.Stderr = newLineLog(t, name)
	cmd.WaitDelay = waitDelay
	return cmd
}

// lineLog is an io.Writer that logs whole lines through logf. Once the test's cleanup has run it drops what it
// is given: a peer that is still being killed must not log after its test has completed, which panics.
type lineLog struct {
	logf   func(format string, args ...any)
	prefix string

	mu      sync.Mutex
	partial []byte // the start of a line not yet ended
	closed  bool
}

func newLineLog(t testing.TB, prefix string) *lineLog {
	l := &lineLog{logf: t.Logf, prefix: prefix}
	t.Cleanup(l.close)
	return l
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return len(p), nil
	}
	l.partial = append(l.partial, p...)
	logged := false
	for {
		line, rest, found := bytes.Cut(l.partial, []byte{'\n'})
		if !found {
			break
		}
		l.log(line)
		l.partial, logged = rest, true
	}
	if logged {
		// Copy the remainder, so a long-running peer does not pin every line it ever wrote.
		l.partial = bytes.Clone(l.partial)
	}
	return len(p), nil
}

// close logs a last unterminated line and drops everything written after it.
func (l *lineLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	if len(l.partial) > 0 {
		l.log(l.partial)
		l.partial = nil
	}
}

func (l *lineLog) log(line []byte) {
	l.logf("%s: %s", l.prefix, bytes.TrimSuffix(line, []byte{'\r'}))
}

// agentStartTimeout bounds how long a test A2A agent may take to say where it listens.
const agentStartTimeout = 30 * time.Second

// A2AAgent starts the test A2A agent testdata/a2a/<name>.mjs with Node on a free loopback port and returns its base
// URL (http://127.0.0.1:PORT). env is added to the environment (TOKEN=..., COMPAT=1). The agent is stopped when the
// test ends: its stdin is a pipe that closes then, which the agents take as the signal to exit, and it is killed
// with the test's context. Its stderr goes to t.Log. It fails the test when the agent does not start.
func A2AAgent(t testing.TB, name string, env ...string) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	nodeModules(t, root) // the agents load the SDK from there
	script := filepath.Join(root, "testdata", "a2a", name+".mjs")
	if _, err := os.Stat(script); err != nil {
		t.Fatalf("peers: A2A agent %s: %v", name, err)
	}
	cmd := exec.CommandContext(t.Context(), Node(t), script)
	cmd.Env = append(append(os.Environ(), "PORT=0"), env...)
	cmd.Stderr = newLineLog(t, name)
	cmd.WaitDelay = waitDelay
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("peers: starting A2A agent %s: %v", name, err)
	}
	t.Cleanup(func() {
		stdin.Close()
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		select {
		case <-exited:
		case <-time.After(waitDelay):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	type line struct {
		s   string
		err error
	}
	first := make(chan line, 1)
	go func() {
		var b []byte
		buf := make([]byte, 1)
		for {
			n, err := stdout.Read(buf)
			if n == 1 && buf[0] == '\n' {
				first <- line{s: string(b)}
				_, _ = io.Copy(io.Discard, stdout) // keep the pipe drained
				return
			}
			b = append(b, buf[:n]...)
			if err != nil {
				first <- line{s: string(b), err: err}
				return
			}
		}
	}()
	select {
	case l := <-first:
		url, ok := strings.CutPrefix(l.s, "listening ")
		if !ok {
			t.Fatalf("peers: A2A agent %s did not start: it printed %q (%v)", name, l.s, l.err)
		}
		return url
	case <-time.After(agentStartTimeout):
		t.Fatalf("peers: A2A agent %s did not say where it listens within %s", name, agentStartTimeout)
	}
	return ""
}
