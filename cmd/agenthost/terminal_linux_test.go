package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/fakellm"
)

// openPTY opens a pseudo-terminal: what is written to tty, a child's stdout or stderr, is read from pty.
func openPTY(t *testing.T) (pty, tty *os.File) {
	t.Helper()
	pty, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	ioctl := func(req uintptr, arg unsafe.Pointer) {
		if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, pty.Fd(), req, uintptr(arg)); errno != 0 {
			t.Fatalf("ioctl %#x: %v", req, errno)
		}
	}
	var unlock int32
	ioctl(syscall.TIOCSPTLCK, unsafe.Pointer(&unlock))
	var n uint32
	ioctl(syscall.TIOCGPTN, unsafe.Pointer(&n))
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		pty.Close()
		t.Fatal(err)
	}
	return pty, tty
}

// agenthostOnTerminal runs the binary as agenthost does, with stdout (onStdout) or stderr on a terminal; what the
// terminal shows is returned in the place of that stream, its line ends as "\n".
func agenthostOnTerminal(t *testing.T, dir string, env []string, onStdout bool, args ...string) result {
	t.Helper()
	pty, tty := openPTY(t)
	defer pty.Close()
	ctx, cancel := context.WithTimeout(t.Context(), processLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = dir
	cmd.Env = append(testEnv(), env...)
	var other bytes.Buffer
	if onStdout {
		cmd.Stdout, cmd.Stderr = tty, &other
	} else {
		cmd.Stdout, cmd.Stderr = &other, tty
	}
	shown := make(chan string, 1)
	go func() {
		var b bytes.Buffer
		_, err := io.Copy(&b, pty) // ends with EIO once no process has the terminal open
		if err != nil && !errors.Is(err, syscall.EIO) {
			b.WriteString("\n(reading the terminal: " + err.Error() + ")")
		}
		shown <- strings.ReplaceAll(b.String(), "\r\n", "\n")
	}()
	err := cmd.Run()
	tty.Close()
	screen := <-shown
	code := 0
	if exitErr, ok := errors.AsType[*exec.ExitError](err); ok {
		code = exitErr.ExitCode()
	} else if err != nil {
		t.Fatalf("running agenthost: %v", err)
	}
	if onStdout {
		return result{screen, other.String(), code}
	}
	return result{other.String(), screen, code}
}

// TestStructuredAnswerOnTerminal: on a terminal, a structured answer's value is followed by the sources its [1]
// cite; piped, the value is alone, a JSON document.
func TestStructuredAnswerOnTerminal(t *testing.T) {
	llm := fakellm.New()
	t.Cleanup(llm.Close)
	dir := t.TempDir()
	cfg := agentConfig(t, dir, "a", llm.URL, "", "")
	schema := writeFile(t, dir, "schema.json", docSchema)
	script := func() {
		llm.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "fx_cite", Arguments: `{}`}}},
			fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c2", Name: host.OutputToolName, Arguments: `{"greeting": "Hello [source 1].", "certainty": 0.5}`}}})
	}
	value := "{\n  \"certainty\": 0.5,\n  \"greeting\": \"Hello [1].\"\n}\n"

	script()
	r := agenthostOnTerminal(t, dir, []string{"TEST_KEY=sk"}, true, "run", "--config", cfg, "--output-schema", schema, "Greet me.")
	want := value + "\nSources:\n[1] The test document — " + fixtureDocURI + "\n"
	if r.code != 0 || r.stdout != want {
		t.Errorf("on a terminal: exit %d, stdout:\n%q\nwant:\n%q\nstderr:\n%s", r.code, r.stdout, want, r.stderr)
	}

	script()
	r = agenthost(t, dir, "", []string{"TEST_KEY=sk"}, "run", "--config", cfg, "--output-schema", schema, "Greet me.")
	if r.code != 0 || r.stdout != value {
		t.Errorf("piped: exit %d, stdout:\n%q\nwant:\n%q", r.code, r.stdout, value)
	}
}

// TestSubAgentStepsOnTerminal: a sub-agent's steps name it once.
func TestSubAgentStepsOnTerminal(t *testing.T) {
	_, dir := subAgentSetup(t)
	r := agenthostOnTerminal(t, dir, []string{"TEST_KEY=k"}, false, "run", "What time is it in Tokyo?")
	if r.code != 0 || r.stdout != "The clock says it is evening.\n" {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"· clock {\"task\":\"What time is it in Tokyo?\"}\n", "  clock: calling current_time\n"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the terminal does not show %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "clock: clock") {
		t.Errorf("the terminal names the sub-agent twice:\n%s", r.stderr)
	}
}
