// Package benchcli is what the load and benchmark tools of internal/bench share as commands: a main that stops on
// SIGINT or SIGTERM and exits 1 on failure, and building the agenthost binary they measure, as `go build` does.
//
// A load and benchmark tool's support (see BENCHMARKS.md): nothing in agenthost imports it. It imports the
// standard library only.
package benchcli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// Main runs the tool named name: run is given a context that ends on SIGINT or SIGTERM. A failure other than -h is
// printed on stderr after the tool's name; any failure exits 1.
func Main(name string, run func(ctx context.Context) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		}
		os.Exit(1)
	}
}

// Agenthost is the package of the binary the tools measure.
const Agenthost = "github.com/agenthost/agenthost/cmd/agenthost"

// BuildAgenthost builds the agenthost binary into out as the README's `go build` does: no flags, no tags. The go
// command runs in dir ("" for the current directory), which must be inside the module.
func BuildAgenthost(ctx context.Context, dir, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, Agenthost)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", Agenthost, err, b)
	}
	return nil
}
