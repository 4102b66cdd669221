//go:build linux

// Command footprint measures what the shipped binary costs before it does any work: its size, by section, and the
// resident memory of an idle `agenthost serve`.
//
// A load and benchmark tool (see BENCHMARKS.md): nothing in agenthost imports it.
//
//	go run ./internal/bench/footprint [-rounds 5] [-settle 2s] [-config FILE] [-agenthost PATH]
//
// The binary is built as the README says (`go build`, no flags or tags) into a temporary directory, unless
// -agenthost names one. Each round starts `agenthost serve` (MCP over stdio, stdin held open, as Claude Desktop and
// IDEs start it) with HOME and XDG_STATE_HOME in a fresh directory, so that its SQLite state is created as on a first
// start; waits until it says it serves, then -settle; and reads VmRSS, RssAnon and RssFile from /proc/PID/status, and
// from /proc/PID/pagemap how much of each section of the binary is resident. Without -config the agent runs on the
// built-in defaults, as `agenthost serve` does in a directory without agent.toml.
//
// RssFile counts the binary's pages that are mapped: on each page fault the kernel maps up to 16 neighbouring pages
// that are already in the page cache, as they are after a build, so most of the code that start-up touches a page
// of is resident. The median of the rounds is reported. It runs on Linux only (it reads /proc).
package main

import (
	"bufio"
	"context"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/agenthost/agenthost/internal/bench/benchcli"
	"github.com/agenthost/agenthost/internal/bench/procstat"
)

func main() {
	benchcli.Main("footprint", func(ctx context.Context) error { return run(ctx, os.Args[1:], os.Stdout, os.Stderr) })
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("footprint", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rounds := fs.Int("rounds", 5, "idle servers started one after another")
	settle := fs.Duration("settle", 2*time.Second, "how long to wait after the server says it serves before reading its memory")
	config := fs.String("config", "", "the agent.toml to serve; built-in defaults when empty")
	bin := fs.String("agenthost", "", "the agenthost binary; built with plain `go build` into a temporary directory when empty")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *rounds < 1 || *settle < 0 {
		return errors.New("-rounds must be at least 1 and -settle not negative")
	}
	dir, err := os.MkdirTemp("", "footprint-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if *bin == "" {
		*bin = filepath.Join(dir, "agenthost")
		fmt.Fprintln(stderr, "building agenthost")
		if err := benchcli.BuildAgenthost(ctx, "", *bin); err != nil {
			return err
		}
	}
	if *config != "" {
		if *config, err = filepath.Abs(*config); err != nil {
			return err
		}
	}
	if err := describeBinary(stdout, *bin); err != nil {
		return err
	}

	what := "built-in defaults"
	if *config != "" {
		what = *config
	}
	fmt.Fprintf(stdout, "\nidle `agenthost serve` (MCP over stdio, %s, a fresh state directory), %v after it serves:\n\n", what, *settle)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "round\tVmRSS\tRssAnon\tRssFile\t")
	var all []procstat.Memory
	var sections []procstat.Section
	for r := 1; r <= *rounds; r++ {
		m, secs, err := idle(ctx, *bin, *config, filepath.Join(dir, fmt.Sprintf("round%d", r)), *settle, stderr)
		if err != nil {
			return fmt.Errorf("round %d: %w", r, err)
		}
		all = append(all, m)
		sections = secs
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t\n", r, mib(m.RSS), mib(m.Anon), mib(m.File))
	}
	med := func(f func(procstat.Memory) int64) string {
		v := make([]int64, len(all))
		for i, m := range all {
			v[i] = f(m)
		}
		slices.Sort(v)
		return mib(v[len(v)/2])
	}
	fmt.Fprintf(tw, "median\t%s\t%s\t%s\t\n", med(func(m procstat.Memory) int64 { return m.RSS }),
		med(func(m procstat.Memory) int64 { return m.Anon }), med(func(m procstat.Memory) int64 { return m.File }))
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintf(stdout, "\nresident sections of the binary (round %d):\n\n", *rounds)
	tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "section\tsize\tresident\t")
	for _, s := range sections {
		if s.Size < 64<<10 {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t\n", s.Name, mb(s.Size), mb(s.Resident))
	}
	return tw.Flush()
}

// describeBinary writes the binary's size, its large sections and whether it is linked dynamically.
func describeBinary(w io.Writer, bin string) error {
	st, err := os.Stat(bin)
	if err != nil {
		return err
	}
	f, err := elf.Open(bin)
	if err != nil {
		return err
	}
	defer f.Close()
	linking := "static"
	if f.Section(".interp") != nil {
		linking = "dynamic (cgo: the C library is mapped too)"
	}
	var parts []string
	for _, name := range []string{".text", ".rodata", ".gopclntab"} {
		if s := f.Section(name); s != nil {
			parts = append(parts, fmt.Sprintf("%s %s", name, mb(int64(s.Size))))
		}
	}
	var debug int64
	for _, s := range f.Sections {
		if strings.HasPrefix(s.Name, ".debug_") || strings.HasPrefix(s.Name, ".zdebug_") {
			debug += int64(s.FileSize) // as stored: the linker compresses it
		}
	}
	parts = append(parts, "debug information "+mb(debug))
	fmt.Fprintf(w, "binary: %s, linking %s\n        %s\n", mb(st.Size()), linking, strings.Join(parts, ", "))
	return nil
}

// idle starts `agenthost serve` with HOME and XDG_STATE_HOME in home, waits until it serves and then settle, and
// reads its memory. The server is stopped by closing its stdin, as an MCP client ends it.
func idle(ctx context.Context, bin, config, home string, settle time.Duration, logw io.Writer) (procstat.Memory, []procstat.Section, error) {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return procstat.Memory{}, nil, err
	}
	args := []string{"serve", "-log-level", "info"}
	if config != "" {
		args = append(args, "-config", config)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = home // no agent.toml there: the built-in defaults, unless -config
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_STATE_HOME="+filepath.Join(home, "state"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return procstat.Memory{}, nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return procstat.Memory{}, nil, err
	}
	if err := cmd.Start(); err != nil {
		return procstat.Memory{}, nil, fmt.Errorf("start agenthost: %w", err)
	}
	exited := make(chan struct{})
	serving := make(chan struct{})
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stderr)
		said := false
		for sc.Scan() {
			line := sc.Text()
			if !said && strings.Contains(line, `msg="serving MCP over stdio"`) {
				said = true
				close(serving)
				continue
			}
			if strings.Contains(line, "level=INFO") || strings.HasPrefix(line, "agenthost: no model configured") {
				continue // the SDK's session lines, and the notice of the offline test model
			}
			fmt.Fprintln(logw, "agenthost:", line)
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	go func() {
		<-scanned
		_ = cmd.Wait()
		close(exited)
	}()
	stop := func() {
		_ = stdin.Close()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}
	select {
	case <-serving:
	case <-exited:
		return procstat.Memory{}, nil, errors.New("agenthost exited before it served")
	case <-time.After(30 * time.Second):
		stop()
		return procstat.Memory{}, nil, errors.New("agenthost did not say it serves within 30s")
	case <-ctx.Done():
		stop()
		return procstat.Memory{}, nil, ctx.Err()
	}
	select {
	case <-time.After(settle):
	case <-ctx.Done():
		stop()
		return procstat.Memory{}, nil, ctx.Err()
	}
	m, err := procstat.ReadMemory(cmd.Process.Pid)
	if err != nil {
		stop()
		return procstat.Memory{}, nil, err
	}
	secs, err := procstat.Sections(cmd.Process.Pid)
	stop()
	if err != nil {
		return procstat.Memory{}, nil, err
	}
	return m, secs, nil
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
func mb(b int64) string  { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }
