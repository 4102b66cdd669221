package consolerender

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/bench/benchcli"
)

var (
	rounds    = flag.Int("rounds", 0, "rounds of each measurement; 0 means the test's default (TestFirstRender 20, TestLongRun 3)")
	agenthost = flag.String("agenthost", "", "the agenthost binary; built with plain `go build` into a temporary directory when empty")
)

// roundsOr returns -rounds, or def when it is not set.
func roundsOr(def int) int {
	if *rounds > 0 {
		return *rounds
	}
	return def
}

// binary returns the agenthost binary to measure: -agenthost, or one built as the README says.
func binary(t *testing.T) string {
	t.Helper()
	if *agenthost != "" {
		p, err := filepath.Abs(*agenthost)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	out := filepath.Join(t.TempDir(), "agenthost")
	if err := benchcli.BuildAgenthost(t.Context(), "", out); err != nil {
		t.Fatal(err)
	}
	return out
}

// consoleLine is what `agenthost ui` writes to stderr once the console listens.
var consoleLine = regexp.MustCompile(`agenthost: console at (http://\S+/)`)

// startUI starts `agenthost ui` on config, with HOME and XDG_STATE_HOME in a fresh directory and env added, and
// returns the console's URL. The process is interrupted at the end of the test, and must exit 0.
func startUI(t *testing.T, bin, config string, env ...string) string {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(bin, "ui", "--config", config, "--addr", "127.0.0.1:0")
	cmd.Dir = home
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_STATE_HOME="+filepath.Join(home, "state"))
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 5 * time.Second
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start agenthost ui: %v", err)
	}
	var (
		mu  sync.Mutex
		log bytes.Buffer
	)
	found := make(chan string, 1)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if m := consoleLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		err := cmd.Wait()
		<-scanned
		if err != nil {
			mu.Lock()
			defer mu.Unlock()
			t.Errorf("agenthost ui: %v\n%s", err, log.String())
		}
	})
	select {
	case base := <-found:
		return base
	case <-scanned:
	case <-time.After(60 * time.Second):
	}
	mu.Lock()
	defer mu.Unlock()
	t.Fatalf("agenthost ui did not say where the console is:\n%s", log.String())
	return ""
}

// call makes an API call of the console at base, unprotected (no login: the console's CSRF token only), and
// decodes its JSON answer into out (nil ignores it).
func call(t *testing.T, method, url, csrf string, body, out any) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if csrf != "" {
		req.Header.Set("X-CSRF-Token", csrf)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %s %s", method, url, resp.Status, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: decoding %s: %v", method, url, b, err)
		}
	}
}

// stats are the median, p90, p95 and maximum of a series (nearest rank).
type stats struct {
	n                     int
	median, p90, p95, max float64
}

func summarize(v []float64) stats {
	if len(v) == 0 {
		return stats{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	rank := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return stats{n: len(s), median: rank(0.5), p90: rank(0.9), p95: rank(0.95), max: s[len(s)-1]}
}

// ms formats milliseconds.
func ms(v float64) string { return fmt.Sprintf("%.1f ms", v) }

// table formats rows of cells as aligned columns.
func table(rows [][]string) string {
	width := map[int]int{}
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len(c))
		}
	}
	var sb strings.Builder
	for _, r := range rows {
		for i, c := range r {
			if i == 0 {
				fmt.Fprintf(&sb, "%-*s", width[i], c)
			} else {
				fmt.Fprintf(&sb, "  %*s", width[i], c)
			}
		}
		sb.WriteString("\n")
	}
	return sb.String()
}
