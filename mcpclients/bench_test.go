package mcpclients_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/mcpclients"
)

// These benchmarks start real child processes: fixture servers from internal/testkit/testservers, each built once per
// test binary, the first time a benchmark needs it. No test uses them, so `go test` without -bench neither builds nor
// starts anything.
//
// The build directory (one binary per fixture) is left in the temporary directory: only a TestMain could remove it
// after the last benchmark, and the package's TestMain belongs to the stdio tests.

// A benchFixture is an MCP stdio server that waits its -delay before it serves the tools echo and add.
type benchFixture struct {
	name  string // the name of the benchmark case and of the binary
	pkg   string // the package to build
	build func() (string, error)
}

func newBenchFixture(name, pkg string) *benchFixture {
	f := &benchFixture{name: name, pkg: pkg}
	f.build = sync.OnceValues(f.buildOnce)
	return f
}

var (
	// slowstart is a go-sdk server.
	slowstart = newBenchFixture("slowstart", "github.com/agenthost/agenthost/internal/testkit/testservers/slowstart")
	// barestart serves the same tools on the standard library alone, and starts in a third of slowstart's CPU.
	barestart = newBenchFixture("barestart", "github.com/agenthost/agenthost/internal/testkit/testservers/barestart")
)

// buildOnce builds the fixture into one fixed directory under the temporary directory, overwritten by every
// benchmark run, so runs leave at most one copy behind, and returns the path of its binary.
func (f *benchFixture) buildOnce() (string, error) {
	dir := filepath.Join(os.TempDir(), "agenthost-bench-fixtures")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, f.name)
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	out, err := exec.Command("go", "build", "-o", bin, f.pkg).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", f.pkg, err, out)
	}
	return bin, nil
}

func (f *benchFixture) binary(b *testing.B) string {
	b.Helper()
	bin, err := f.build()
	if err != nil {
		b.Fatal(err)
	}
	return bin
}

// fixtureConfigs returns n stdio servers of the fixture bin that each wait delay before serving. Every one is
// required, so a server that fails to start fails Connect instead of being skipped.
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
// 20 servers should take about as long as one.
//
// It runs every case with both fixtures. The go-sdk one (fixture=slowstart) costs about 8.5 ms of CPU to start,
// answer and exit; twenty of them at once are 170 ms of CPU, which a 2-core machine cannot hide entirely behind the
// 200 ms wait. The bare one (fixture=barestart) costs about 2.5 ms, so its figures show mostly the client.
//
// servers=1 and servers=20 report each case alone. paired connects one server and then 20 in every op, timing each,
// so that both cases meet the same conditions on a shared machine; it reports the median of each ("ms-one-server",
// "ms-20-servers") and their ratio ("x-one-server"). Close and the checks after it are not timed.
func BenchmarkStartup(b *testing.B) {
	for _, f := range []*benchFixture{barestart, slowstart} {
		b.Run("fixture="+f.name, func(b *testing.B) {
			bin := f.binary(b)
			one, twenty := fixtureConfigs(bin, 1, "200ms"), fixtureConfigs(bin, 20, "200ms")
			for _, n := range []int{1, 20} {
				b.Run("servers="+strconv.Itoa(n), func(b *testing.B) {
					cfgs := one
					if n == 20 {
						cfgs = twenty
					}
					for b.Loop() {
						benchConnect(b, cfgs)
					}
				})
			}
			b.Run("paired", func(b *testing.B) {
				var ones, twenties []time.Duration
				for b.Loop() {
					ones = append(ones, benchConnect(b, one))
					twenties = append(twenties, benchConnect(b, twenty))
				}
				m1, m20 := benchMedian(ones), benchMedian(twenties)
				b.ReportMetric(m1/1e6, "ms-one-server")
				b.ReportMetric(m20/1e6, "ms-20-servers")
				b.ReportMetric(m20/m1, "x-one-server")
			})
		})
	}
}

// benchConnect connects to the servers of cfgs, checks that every one connected, and closes them; it returns the
// time Connect took. Only Connect is timed.
func benchConnect(b *testing.B, cfgs []mcpclients.ServerConfig) time.Duration {
	start := time.Now()
	c, err := mcpclients.Connect(b.Context(), cfgs, nil)
	elapsed := time.Since(start)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	defer b.StartTimer()
	for _, st := range c.Status() {
		if st.State != mcpclients.StateConnected || st.Tools != 2 {
			b.Fatalf("server %s: state %s with %d tools, want connected with 2", st.Name, st.State, st.Tools)
		}
	}
	c.Close()
	benchNoChildren(b)
	return elapsed
}

// benchEchoArgs are the arguments of every benchmarked call: the same bytes on both paths.
var benchEchoArgs = json.RawMessage(`{"text":"hello"}`)

// BenchmarkCallOverhead measures one tool call to a stdio server that is already connected, directly with the
// go-sdk and through mcpclients, each to its own child process of the same fixture. Both include the round trip
// through the child; the difference is what mcpclients adds: finding the session, the progress token and call
// registration, the context value, and the conversion of the result.
//
// path=direct and path=mcpclients run one after the other; the second reports its allocations beyond the first's
// ("overhead-allocs/op"), when both ran. Their times are too far apart in time to subtract: the round trip is
// hundreds of microseconds and drifts more than the difference on a shared machine. path=alternating makes one call
// of each kind per op, in alternating order, and times every call, so that both paths meet the same conditions. It
// reports the median call on each path and, as "overhead-ns/call", the median of the differences within an op:
// medians, because a garbage collection or a descheduled process adds milliseconds to a few calls.
func BenchmarkCallOverhead(b *testing.B) {
	bin := slowstart.binary(b)
	var direct benchCost // of path=direct in this run; zero until it ran

	b.Run("path=direct", func(b *testing.B) {
		b.ReportAllocs()
		b.Cleanup(func() { benchNoChildren(b) }) // registered first, so it runs after the closing
		call := benchDirectCall(b, bin)
		direct = benchLoop(b, call)
	})

	b.Run("path=mcpclients", func(b *testing.B) {
		b.ReportAllocs()
		b.Cleanup(func() { benchNoChildren(b) })
		call := benchMCPClientsCall(b, bin)
		cost := benchLoop(b, call)
		if direct.n > 0 {
			b.ReportMetric(cost.allocsPerOp()-direct.allocsPerOp(), "overhead-allocs/op")
		}
	})

	b.Run("path=alternating", func(b *testing.B) {
		b.Cleanup(func() { benchNoChildren(b) })
		calls := [2]func(){benchDirectCall(b, bin), benchMCPClientsCall(b, bin)}
		var direct, through, overhead []time.Duration
		i := 0
		for b.Loop() {
			var took [2]time.Duration
			for j := range 2 {
				k := (i + j) % 2
				start := time.Now()
				calls[k]()
				took[k] = time.Since(start)
			}
			direct, through, overhead = append(direct, took[0]), append(through, took[1]), append(overhead, took[1]-took[0])
			i++
		}
		b.ReportMetric(benchMedian(direct), "direct-ns/call")
		b.ReportMetric(benchMedian(through), "mcpclients-ns/call")
		b.ReportMetric(benchMedian(overhead), "overhead-ns/call")
	})
}

// benchMedian returns the median of ds in nanoseconds. It sorts ds.
func benchMedian(ds []time.Duration) float64 {
	slices.Sort(ds)
	n := len(ds)
	if n%2 == 1 {
		return float64(ds[n/2].Nanoseconds())
	}
	return float64((ds[n/2-1] + ds[n/2]).Nanoseconds()) / 2
}

// benchDirectCall starts the fixture with no delay and connects a bare go-sdk client to it. It returns one echo call;
// the session is closed when b ends.
func benchDirectCall(b *testing.B, bin string) (call func()) {
	b.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "dev"}, nil)
	session, err := client.Connect(b.Context(), &mcp.CommandTransport{Command: exec.Command(bin, "-delay", "0")}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := session.Close(); err != nil {
			b.Error(err)
		}
	})
	return func() {
		res, err := session.CallTool(b.Context(), &mcp.CallToolParams{Name: "echo", Arguments: benchEchoArgs})
		if err != nil || res.IsError {
			b.Fatalf("echo: %v %+v", err, res)
		}
	}
}

// benchMCPClientsCall starts the fixture with no delay through mcpclients. It returns one call of its echo tool, the
// host.Tool's Call with a host.Call as the loop makes it; the client is closed when b ends.
func benchMCPClientsCall(b *testing.B, bin string) (call func()) {
	b.Helper()
	c, err := mcpclients.Connect(b.Context(), fixtureConfigs(bin, 1, "0s"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	set := c.Toolsets()[0]
	echo := benchTool(b, set, "s0_echo")
	hc := host.NewCall("call-1", "s0_echo", set.Name(), nil, nil)
	return func() {
		res, err := echo.Call(b.Context(), benchEchoArgs, hc)
		if err != nil || res.IsError || res.Text != "hello" {
			b.Fatalf("echo: %v %+v", err, res)
		}
	}
}

// benchCost is what one b.Loop took.
type benchCost struct {
	n      int
	allocs uint64
}

func (c benchCost) allocsPerOp() float64 { return float64(c.allocs) / float64(c.n) }

// benchLoop runs op in a b.Loop and returns its cost. The allocations are counted as the testing package counts
// them, over the whole process, so the SDK's reading goroutines are included on both paths.
func benchLoop(b *testing.B, op func()) benchCost {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		op()
	}
	runtime.ReadMemStats(&after)
	return benchCost{n: b.N, allocs: after.Mallocs - before.Mallocs}
}

func benchTool(b *testing.B, set host.Toolset, name string) host.Tool {
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

// benchNoChildren fails b when this process still has a live child: Close must have stopped every server. It does
// not stop b, so that it can run in a cleanup. Where there is no /proc, it checks nothing.
func benchNoChildren(b *testing.B) {
	b.Helper()
	if pids := childProcesses(func([]string) bool { return true }); len(pids) > 0 {
		b.Errorf("children left after Close: %v", pids)
	}
}
