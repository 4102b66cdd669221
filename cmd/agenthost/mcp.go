package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/internal/redact"
	"github.com/agenthost/agenthost/internal/wiring"
	"github.com/agenthost/agenthost/mcpauth"
	"github.com/agenthost/agenthost/mcpclients"
)

const mcpUsage = `Usage: agenthost mcp COMMAND [flags] [ARGS]

Manages the MCP servers of [mcp.servers] and their OAuth logins.

Commands:
  list           connect to every server and list them with their state
  add NAME [flags] -- COMMAND [ARGS...]
  add NAME -url URL [flags]
                 add a server to the configuration file, started by COMMAND or at URL; its comments are kept
  import FILE    add the servers of another client's configuration: the "mcpServers" JSON of Claude Desktop,
                 Claude Code, Cursor, Windsurf, or VS Code's "servers" (- reads stdin); names the file has already
                 are reported and left alone
  login NAME     log in to the server NAME with OAuth (authorization code with PKCE): prints the authorization URL,
                 opens it in a browser when there is one, and waits for the redirect to a listener on 127.0.0.1
                 (or for the address the browser was sent to, pasted on stdin)
  logout NAME    forget the login to NAME: its tokens and the client registered for it
  auth           list the servers that may need OAuth: how each is authorized, its state, scopes and expiry

Every command takes -config FILE and -log-level LEVEL.
`

// cmdMCP manages the MCP servers and their logins.
func cmdMCP(ctx context.Context, args []string, io *stdio) error {
	sub, rest := splitCommand(args, append(commonValueFlags, "timeout", "url", "transport", "env", "header", "cwd")...)
	if sub == "" {
		if slices.ContainsFunc(args, func(a string) bool { return a == "-h" || a == "-help" || a == "--help" }) {
			fmt.Fprint(io.out, mcpUsage)
			return nil
		}
		return fmt.Errorf("%w: agenthost mcp needs a command\n\n%s", errUsage, mcpUsage)
	}
	switch sub {
	case "add", "import":
		return cmdMCPAdd(sub, rest, io)
	case "list":
		return cmdMCPList(ctx, rest, io)
	}
	fs := flag.NewFlagSet("mcp "+sub, flag.ContinueOnError)
	var c common
	c.register(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), mcpUsage+"\nFlags of "+sub+":\n")
		fs.PrintDefaults()
	}
	timeout := mcpauth.DefaultLoginTimeout
	noBrowser := false
	switch sub {
	case "login":
		fs.DurationVar(&timeout, "timeout", timeout, "how long to wait for the authorization server's redirect")
		fs.BoolVar(&noBrowser, "no-browser", false, "print the authorization URL without opening a browser")
	case "logout", "auth":
	case "help":
		fmt.Fprint(io.out, mcpUsage)
		return nil
	default:
		return fmt.Errorf("%w: unknown mcp command %q\n\n%s", errUsage, sub, mcpUsage)
	}
	if err := parseFlags(fs, rest, io); err != nil {
		return err
	}
	name, extra := fs.Arg(0), max(fs.NArg()-1, 0)
	switch {
	case (sub == "login" || sub == "logout") && (name == "" || extra > 0):
		return fmt.Errorf("%w: mcp %s takes the name of one server", errUsage, sub)
	case sub == "auth" && (name != "" || extra > 0):
		return fmt.Errorf("%w: mcp auth takes no arguments", errUsage)
	}
	logger, err := c.logger(io.err)
	if err != nil {
		return err
	}
	cfg, err := c.loadConfig(fs)
	if err != nil {
		return err
	}
	grants, closer, err := wiring.OpenGrantStore(ctx, cfg, os.Getenv, logger)
	if err != nil {
		return fmt.Errorf("%s: %w", configName(cfg), err)
	}
	defer closer.Close()

	if sub == "auth" {
		return printAuth(ctx, io.out, cfg, grants)
	}
	s, ok := cfg.MCP.Servers[name]
	if !ok {
		return fmt.Errorf("%w: %s has no server %q in [mcp.servers]", errUsage, configName(cfg), name)
	}
	if sub == "logout" {
		g, err := grants.LoadGrant(ctx, name)
		if err != nil {
			return err
		}
		if g == nil {
			fmt.Fprintf(io.out, "%s had no login.\n", name)
			return nil
		}
		if err := grants.DeleteGrant(ctx, name); err != nil {
			return err
		}
		fmt.Fprintf(io.out, "Logged out of %s.\n", name)
		return nil
	}

	// login
	switch {
	case !wiring.UsesOAuth(s) && s.Auth == "" && s.EffectiveTransport() != config.TransportStdio:
		return fmt.Errorf("%w: %s: mcp.servers.%s sends a static Authorization header; remove it to log in with OAuth", errUsage, configName(cfg), name)
	case !wiring.UsesOAuth(s):
		return fmt.Errorf("%w: %s: mcp.servers.%s is not authorized with OAuth (transport %q, auth %q)", errUsage, configName(cfg), name, s.EffectiveTransport(), s.Auth)
	case s.Auth == config.AuthClientCredentials:
		return fmt.Errorf("%w: %s: mcp.servers.%s uses client credentials, which need no login", errUsage, configName(cfg), name)
	}
	oc, err := wiring.OAuthConfig(cfg, name, grants, os.Getenv, logger)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", errUsage, configName(cfg), err)
	}
	opts := &mcpauth.LoginOptions{RedirectPort: s.RedirectPort, Timeout: timeout, Out: io.err, Paste: io.in}
	if !noBrowser {
		opts.OpenBrowser = openBrowser
	}
	flow, err := mcpauth.NewFlow(ctx, oc, opts)
	if err != nil {
		return err
	}
	defer flow.Close()
	server := wiring.MCPServers(cfg, true, nil, os.Getenv, logger)
	var sc mcpclients.ServerConfig
	for _, c := range server {
		if c.Name == name {
			sc = c
		}
	}
	sc.Required, sc.ConnectTimeout = true, timeout+time.Minute
	connect := func(ctx context.Context, h auth.OAuthHandler) error {
		sc.OAuth = func(context.Context) (auth.OAuthHandler, error) { return h, nil }
		client, err := wiring.ConnectMCP(ctx, []mcpclients.ServerConfig{sc}, version, logger)
		if err != nil {
			return err
		}
		client.Close()
		return nil
	}
	g, err := mcpauth.Login(ctx, oc, flow, connect)
	if err != nil {
		return fmt.Errorf("login to %s: %w", name, err)
	}
	fmt.Fprintf(io.out, "Logged in to %s (scopes: %s; %s).\n", name, orDefault(strings.Join(g.Scopes, " "), "none asked for"), expiry(g))
	return nil
}

// expiry says when a grant's access token expires, and whether it can be refreshed.
func expiry(g *mcpauth.Grant) string {
	if g.Token == nil || g.Token.Expiry.IsZero() {
		return "the token does not expire"
	}
	s := "the token expires " + g.Token.Expiry.Local().Format(time.DateTime)
	if g.Token.RefreshToken != "" {
		s += " and is refreshed before"
	}
	return s
}

// printAuth prints a table of the servers that may need OAuth. It never prints a token or a secret.
func printAuth(ctx context.Context, w io.Writer, cfg *config.Config, grants mcpauth.Store) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tAUTH\tSTATE\tSCOPES\tEXPIRES")
	n := 0
	for _, name := range cfg.MCP.Order {
		s := cfg.MCP.Servers[name]
		if t := s.EffectiveTransport(); t == config.TransportStdio {
			continue
		}
		n++
		mode, state, scopes, expires := orDefault(s.Auth, "auto"), "-", "-", "-"
		switch {
		case !wiring.UsesOAuth(s) && s.Auth == "":
			mode, state = "header", "static Authorization header"
		case s.Auth == config.AuthNone:
			state = "no authorization"
		case s.Auth == config.AuthClientCredentials:
			state = "client credentials (a token per start)"
		default:
			g, err := grants.LoadGrant(ctx, name)
			if err != nil {
				return err
			}
			switch {
			case g == nil && s.Auth == "":
				state = "not logged in (none needed until the server asks)"
			case g == nil:
				state = "needs login: agenthost mcp login " + name
			case g.URL != s.URL:
				state = "needs login: the login was for " + redact.URL(g.URL)
			default:
				state = g.State(time.Now())
				if state == "expired" {
					state = "expired: agenthost mcp login " + name
				}
				scopes = orDefault(strings.Join(g.Scopes, " "), "-")
				if g.Token != nil && !g.Token.Expiry.IsZero() {
					expires = g.Token.Expiry.Local().Format(time.DateTime)
				}
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, mode, state, scopes, expires)
	}
	if n == 0 {
		fmt.Fprintln(w, "No http or sse servers in [mcp.servers].")
		return nil
	}
	return tw.Flush()
}

// openBrowser opens url in the user's browser: $BROWSER, else the desktop's opener. Without a desktop it fails, and
// the printed URL is the way.
func openBrowser(url string) error {
	var cmd *exec.Cmd
	switch {
	case os.Getenv("BROWSER") != "":
		cmd = exec.Command(os.Getenv("BROWSER"), url)
	case runtime.GOOS == "darwin":
		cmd = exec.Command("open", url)
	case runtime.GOOS == "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	case os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != "":
		cmd = exec.Command("xdg-open", url)
	default:
		return errors.New("no desktop session")
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait()
	return nil
}
