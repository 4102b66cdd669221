package mcpclients_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/mcpclients"
)

// These benchmarks start real child processes: the slowstart fixture, built once per test binary, the first time a
// benchmark needs it. No test uses it, so `go test` without -bench neither builds nor starts anything.
//
// The build directory is left in the temporary directory: removing it needs a TestMain, and this package's tests
// may want their own.

const fixturePackage = "github.com/agenthost/agenthost/internal/testservers/slowstart"

// fixture builds the slowstart server and returns the path of its binary.
var fixture = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "agenthost-slowstart-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "slowstart")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	out, err := exec.Command("go", "build", "-o", bin, fixturePackage).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", fixturePackage, err, out)
	}
	return bin, nil
})

func fixtureBinary(b *testing.B) string {
	b.Helper()
	bin, err := fixture()
	if err != nil {
		b.Fatal(err)
	}
	return bin
}

// fixtureConfigs returns n stdio servers that each wait delay before serving. Every one is required, so a server
// that fails to start fails Connect instead of being skipped.
func fixtureConfigs(bin string, n int, delay string) []mcpclients.ServerConfig {
	cfgs := make([]mcpclients.ServerConfig, n)
	for i := range cfgs {
		name := "s" + strconv.Itoa(i)
		cfgs[i] = mcpclients.ServerConfig{
			Name:      name,
			Transport: mcpclients.TransportStdio,
			Command:   bin,
			Args:      []string{"-delay", delay},
			Required:  true,
			Prefix:    name,
		}
	}
	return cfgs
}

// BenchmarkStartup measures Connect, from the first child started to the last server's tools listed, with one
// server and with 20, each a child process that waits 200ms before it serves. The connections run concurrently, so
// 20 servers should take about as long as one: the servers=20 case reports its time as a multiple of the servers=1
// case of the same run ("x-one-server"), when both ran. Close and the checks after it are not timed.
func BenchmarkStartup(b *testing.B) {
	bin := fixtureBinary(b)
	var oneServer float64 // ns/op of servers=1 in this run; 0 until it ran
	for _, n := range []int{1, 20} {
		b.Run("servers="+strconv.Itoa(n), func(b *testing.B) {
			cfgs := fixtureConfigs(bin, n, "200ms")
			for b.Loop() {
				c, err := mcpclients.Connect(b.Context(), cfgs, nil)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				for _, st := range c.Status() {
					if st.State != mcpclients.StateConnected || st.Tools != 2 {
						b.Fatalf("server %s: state %s with %d tools, want connected with 2", st.Name, st.State, st.Tools)
					}
				}
				c.Close()
				assertNoChildren(b)
				b.StartTimer()
			}
			perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			switch {
			case n == 1:
				oneServer = perOp
			case oneServer > 0:
				b.ReportMetric(perOp/oneServer, "x-one-server")
			}
		})
	}
}

// echoArgs are the arguments of every benchmarked call: the same bytes on both paths.
var echoArgs = json.RawMessage(`{"text":"hello"}`)

// BenchmarkCallOverhead measures one tool call to a stdio server that is already connected, directly with the
// go-sdk and through mcpclients, each to its own child process of the same fixture. Both include the round trip
// through the child; the difference is what mcpclients adds: finding the session, the progress token and call
// registration, the context value, and the conversion of the result. The mcpclients case reports it as
// "overhead-ns/op" and "overhead-allocs/op" against the direct case of the same run, when both ran.
func BenchmarkCallOverhead(b *testing.B) {
	bin := fixtureBinary(b)
	var direct callCost // of the direct case in this run; zero until it ran

	b.Run("path=direct", func(b *testing.B) {
		b.ReportAllocs()
		client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "dev"}, nil)
		session, err := client.Connect(b.Context(), &mcp.CommandTransport{Command: exec.Command(bin, "-delay", "0")}, nil)
		if err != nil {
			b.Fatal(err)
		}
		direct = measure(b, func() {
			res, err := session.CallTool(b.Context(), &mcp.CallToolParams{Name: "echo", Arguments: echoArgs})
			if err != nil || res.IsError {
				b.Fatalf("echo: %v %+v", err, res)
			}
		})
		if err := session.Close(); err != nil {
			b.Fatal(err)
		}
		assertNoChildren(b)
	})

	b.Run("path=mcpclients", func(b *testing.B) {
		b.ReportAllocs()
		c, err := mcpclients.Connect(b.Context(), fixtureConfigs(bin, 1, "0s"), nil)
		if err != nil {
			b.Fatal(err)
		}
		set := c.Toolsets()[0]
		echo := findTool(b, set, "s0_echo")
		call := host.NewCall("call-1", "s0_echo", set.Name(), nil, nil)
		cost := measure(b, func() {
			res, err := echo.Call(b.Context(), echoArgs, call)
			if err != nil || res.IsError || res.Text != "hello" {
				b.Fatalf("echo: %v %+v", err, res)
			}
		})
		c.Close()
		assertNoChildren(b)
		if direct.n > 0 {
			b.ReportMetric(cost.nsPerOp()-direct.nsPerOp(), "overhead-ns/op")
			b.ReportMetric(cost.allocsPerOp()-direct.allocsPerOp(), "overhead-allocs/op")
		}
	})
}

// callCost is what one b.Loop took, as the testing package counts it.
type callCost struct {
	n      int
	ns     int64
	allocs uint64
}

func (c callCost) nsPerOp() float64     { return float64(c.ns) / float64(c.n) }
func (c callCost) allocsPerOp() float64 { return float64(c.allocs) / float64(c.n) }

// measure runs op in a b.Loop and returns its cost. The allocations are counted as the testing package counts
// them, over the whole process, so the SDK's reading goroutines are included on both paths.
func measure(b *testing.B, op func()) callCost {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		op()
	}
	runtime.ReadMemStats(&after)
	return callCost{n: b.N, ns: b.Elapsed().Nanoseconds(), allocs: after.Mallocs - before.Mallocs}
}

func findTool(b *testing.B, set host.Toolset, name string) host.Tool {
	b.Helper()
	tools, err := set.Tools(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	for _, t := range tools {
		if t.Spec().Name == name {
			return t
		}
	}
	b.Fatalf("%s has no tool %q", set.Name(), name)
	return nil
}

// assertNoChildren fails when this process still has a child: Close must have stopped and reaped every server.
// It reads /proc, so it checks nothing where there is none.
func assertNoChildren(b *testing.B) {
	b.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil || len(stats) == 0 {
		return
	}
	self := strconv.Itoa(os.Getpid())
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if err != nil {
			continue // it ended meanwhile
		}
		// The fields after the command, which is in parentheses and may hold anything, are: state, parent pid.
		i := bytes.LastIndexByte(data, ')')
		if i < 0 {
			continue
		}
		fields := bytes.Fields(data[i+1:])
		if len(fields) >= 2 && string(fields[1]) == self {
			b.Fatalf("a child is left after Close: %s", bytes.TrimSpace(data))
		}
	}
}
