package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	"github.com/agenthost/agenthost/internal/httpedge"
	"github.com/agenthost/agenthost/internal/wiring"
	"github.com/agenthost/agenthost/mcpserver"
)

// httpFlag is --http: alone it serves HTTP on the configured address, with a value (--http=ADDR or --http ADDR) on
// that address.
type httpFlag struct {
	set  bool
	addr string
}

// joinHTTPAddr turns "--http ADDR" into "--http=ADDR", wherever it stands: --http also works alone, so the flag
// package would not take the next argument as its value, and would stop parsing at it.
func joinHTTPAddr(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if (a == "--http" || a == "-http") && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			out = append(out, a+"="+args[i+1])
			i++
			continue
		}
		if a == "--" {
			return append(out, args[i:]...)
		}
		out = append(out, a)
	}
	return out
}

func (f *httpFlag) String() string   { return f.addr }
func (f *httpFlag) IsBoolFlag() bool { return true }
func (f *httpFlag) Set(s string) error {
	f.set = true
	if s != "true" {
		f.addr = s
	}
	return nil
}

func cmdServe(ctx context.Context, args []string, io *stdio) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var c common
	c.register(fs)
	var httpAddr httpFlag
	fs.Var(&httpAddr, "http", "serve streamable HTTP instead of stdio, on `ADDR` or on [serve] http (default 127.0.0.1:8765)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: agenthost serve [flags]\n       agenthost serve --http [ADDR] [flags]\n\nServes the agent as an MCP server: over stdio (what Claude Desktop and IDEs start), or over\nstreamable HTTP at [serve] path (default /mcp).\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, joinHTTPAddr(args), io.err); err != nil {
		return err
	}
	if rest := fs.Args(); len(rest) > 0 {
		return fmt.Errorf("%w: serve takes no arguments (got %q)", errUsage, rest)
	}
	a, err := c.app(ctx, fs, io.err, io.err, false)
	if err != nil {
		return err
	}
	defer a.close()
	sc := a.cfg.Serve
	srv, err := mcpserver.New(ctx, a.orch, wiring.ServerOptions(a.cfg, version, sampling(a.cfg, a.provider, c.model), a.logger))
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	defer srv.Close()
	if !httpAddr.set {
		a.logger.Info("serving MCP over stdio", "tool", srv.ToolName())
		return srv.ServeStdio(ctx, io.stdinCloser(), io.stdoutCloser())
	}
	addr := httpAddr.addr
	if addr == "" {
		addr = sc.HTTP
	}
	var token string
	if sc.AuthTokenEnv != "" {
		if token = os.Getenv(sc.AuthTokenEnv); token == "" {
			return fmt.Errorf("%w: %s: serve.auth_token_env names %s, which is not set", errUsage, configName(a.cfg), sc.AuthTokenEnv)
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%w: serve --http %s: %w", errUsage, addr, err)
	}
	if !isLoopback(ln.Addr()) && token == "" {
		a.logger.Warn("serving beyond loopback without a token: anyone who can reach this address can use the agent and its tools; set [serve] auth_token_env", "addr", ln.Addr().String())
	}
	handler := srv.Handler(wiring.HTTPOptions(sc, token, ln.Addr().String(), func() any { return a.mcp.Status() }))
	fmt.Fprintf(io.err, "agenthost: serving MCP at http://%s%s (tool %s)\n", ln.Addr(), orDefault(sc.Path, "/mcp"), srv.ToolName())
	return httpedge.Serve(ctx, ln, handler)
}

func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// stdinCloser and stdoutCloser give the MCP stdio transport the streams it closes at the end.
func (s *stdio) stdinCloser() io.ReadCloser {
	if rc, ok := s.in.(io.ReadCloser); ok {
		return rc
	}
	return io.NopCloser(s.in)
}

func (s *stdio) stdoutCloser() io.WriteCloser {
	if wc, ok := s.out.(io.WriteCloser); ok {
		return wc
	}
	return nopWriteCloser{s.out}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
