package peers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	dir := Dir(t)
	if !filepath.IsAbs(dir) {
		t.Errorf("Dir = %q, want an absolute path", dir)
	}
	if want := filepath.Join("testdata", "peers", "node_modules"); !strings.HasSuffix(dir, want) {
		t.Errorf("Dir = %q, want it to end in %s", dir, want)
	}

	// The commands the tests of this project run.
	for _, name := range []string{
		"mcp-server-everything",
		"mcp-server-filesystem",
		"mcp-server-memory",
		"mcp-inspector-cli",
		"conformance",
	} {
		t.Run(name, func(t *testing.T) {
			bin := Bin(t, name)
			if got, want := filepath.Dir(bin), filepath.Join(dir, ".bin"); got != want {
				t.Errorf("Bin(%q) = %q, want it in %s", name, bin, want)
			}
			if _, err := os.Stat(bin); err != nil {
				t.Errorf("Bin(%q): %v", name, err)
			}
		})
	}
}

func TestNodeVersions(t *testing.T) {
	tests := []struct {
		name     string
		node     func(testing.TB) string
		minMajor int
		maxMajor int
	}{
		{"Node22", Node22, 22, 22},
		{"Node", Node, minNodeMajor, 1 << 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := exec.CommandContext(t.Context(), tt.node(t), "--version").Output()
			if err != nil {
				t.Fatalf("--version: %v", err)
			}
			major, err := nodeMajor(string(out))
			if err != nil {
				t.Fatal(err)
			}
			if major < tt.minMajor || major > tt.maxMajor {
				t.Errorf("%s --version = %q, want major version in [%d, %d]", tt.name, out, tt.minMajor, tt.maxMajor)
			}
		})
	}
}

// TestCommand runs a real stdio MCP server through Command: it must answer initialize on stdout and exit when
// its input ends.
func TestCommand(t *testing.T) {
	cmd := Command(t, "mcp-server-memory")
	cmd.Env = append(os.Environ(), "MEMORY_FILE_PATH="+filepath.Join(t.TempDir(), "memory.jsonl"))
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"peers-test","version":"0"}}}` + "\n")
	if _, ok := cmd.Stderr.(*lineLog); !ok {
		t.Errorf("Command's Stderr is %T, want the test log", cmd.Stderr)
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mcp-server-memory: %v", err)
	}
	var resp struct {
		ID     int `json:"id"`
		Result struct {
			ServerInfo struct {
				Name string `json:"name"`
			} `json:"serverInfo"`
		} `json:"result"`
	}
	line, _, _ := strings.Cut(string(out), "\n")
	if err := json.Unmarshal([]byte(line), &resp); err != nil {
		t.Fatalf("initialize response %q: %v", line, err)
	}
	if resp.ID != 1 || resp.Result.ServerInfo.Name != "memory-server" {
		t.Errorf("initialize response = %s, want id 1 from memory-server", line)
	}
}

// TestCommand22 runs the conformance suite, which needs Node 22, through Command22.
func TestCommand22(t *testing.T) {
	out, err := Command22(t, "conformance", "list", "--server").Output()
	if err != nil {
		t.Fatalf("conformance list --server: %v", err)
	}
	if !strings.Contains(string(out), "server-initialize") {
		t.Errorf("conformance list --server = %q, want it to list server-initialize", out)
	}
}

// recorder is a testing.TB whose Fatal and Skip end only the goroutine they are called on, so a test can check
// that a helper fails (and does not skip).
type recorder struct {
	testing.TB
	failed, skipped bool
	msg             string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Skip(args ...any)                 { r.Skipf("%s", fmt.Sprint(args...)) }
func (r *recorder) SkipNow()                         { r.Skipf("") }
func (r *recorder) Skipf(format string, args ...any) { r.skipped = true; runtime.Goexit() }

// run calls f with a recorder on its own goroutine and returns the recorder once f has returned or exited.
func run(t *testing.T, f func(testing.TB)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

func TestMissingPeersFail(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, root string)
		wantMsg string
	}{
		{"no testdata/peers", func(*testing.T, string) {}, "make peers"},
		{"node_modules is a file", func(t *testing.T, root string) {
			dir := filepath.Join(root, "testdata", "peers")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "node_modules"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "make test"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			tt.setup(t, root)
			r := run(t, func(tb testing.TB) { nodeModules(tb, root) })
			if !r.failed || r.skipped {
				t.Fatalf("nodeModules on a module without peers: failed=%v skipped=%v, want a failure", r.failed, r.skipped)
			}
			if !strings.Contains(r.msg, tt.wantMsg) {
				t.Errorf("failure message %q does not mention %q", r.msg, tt.wantMsg)
			}
		})
	}

	t.Run("unknown command", func(t *testing.T) {
		r := run(t, func(tb testing.TB) { Bin(tb, "no-such-peer") })
		if !r.failed || !strings.Contains(r.msg, "no-such-peer") {
			t.Errorf("Bin(no-such-peer): failed=%v message %q, want a failure naming the command", r.failed, r.msg)
		}
	})
	t.Run("path as command name", func(t *testing.T) {
		r := run(t, func(tb testing.TB) { Bin(tb, "../node/bin/node") })
		if !r.failed {
			t.Error("Bin(../node/bin/node) did not fail")
		}
	})
}

func TestFindModuleRoot(t *testing.T) {
	root := t.TempDir()
	nested := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(nested, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, start := range []string{root, nested} {
		got, err := findModuleRoot(start)
		if err != nil || got != root {
			t.Errorf("findModuleRoot(%q) = %q, %v; want %q", start, got, err, root)
		}
	}
}

func TestNodeMajor(t *testing.T) {
	tests := []struct {
		in      string
		want    int
		wantErr bool
	}{
		{"v20.20.2\n", 20, false},
		{"v22.23.3", 22, false},
		{"v100.0.0\r\n", 100, false},
		{"20.1.0", 0, true},
		{"vX.1.0", 0, true},
		{"", 0, true},
	}
	for _, tt := range tests {
		got, err := nodeMajor(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("nodeMajor(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestLineLog(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		after  []string // written once the test's cleanup has run
		want   []string
	}{
		{"one line", []string{"hello\n"}, nil, []string{"p: hello"}},
		{"lines split across writes", []string{"he", "llo\nwor", "ld\n"}, nil, []string{"p: hello", "p: world"}},
		{"several lines in one write", []string{"a\nb\r\n\nc\n"}, nil, []string{"p: a", "p: b", "p: ", "p: c"}},
		{"unterminated last line is logged at cleanup", []string{"a\nb"}, nil, []string{"p: a", "p: b"}},
		{"writes after cleanup are dropped", []string{"a\n"}, []string{"late\n", "x"}, []string{"p: a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			l := &lineLog{prefix: "p", logf: func(format string, args ...any) {
				got = append(got, fmt.Sprintf(format, args...))
			}}
			for _, w := range tt.writes {
				if n, err := l.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			l.close()
			l.close()
			for _, w := range tt.after {
				if n, err := l.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) after close = %d, %v", w, n, err)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("logged %q, want %q", got, tt.want)
			}
		})
	}
}

func TestA2AAgent(t *testing.T) {
	url := A2AAgent(t, "echo-agent")
	resp, err := http.Get(url + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var card struct {
		Name string `json:"name"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&card); err != nil || card.Name != "echo" {
		t.Fatalf("card: name %q, err %v", card.Name, err)
	}
}
