package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/internal/redact"
	"github.com/agenthost/agenthost/internal/wiring"
	"github.com/agenthost/agenthost/mcpclients"
)

// cmdMCPAdd adds servers to the configuration file: `mcp import FILE` those of another client's configuration,
// `mcp add NAME` one given by its flags and command line. The file's text is kept as it is, comments included: the
// new tables are inserted. A name the file has already is reported and left alone.
func cmdMCPAdd(sub string, args []string, io *stdio) error {
	fs := flag.NewFlagSet("mcp "+sub, flag.ContinueOnError)
	var c common
	c.register(fs)
	printOnly := fs.Bool("print", false, "print the [mcp.servers] tables instead of adding them to the configuration file")
	var (
		serverURL, transport, cwd string
		envs, headers             listFlag
	)
	if sub == "add" {
		fs.StringVar(&serverURL, "url", "", "the server's `URL`, for a remote server (else the command after the name, or after --)")
		fs.StringVar(&transport, "transport", "", "`http` (streamable HTTP, the default for -url) or sse (the legacy transport)")
		fs.Var(&envs, "env", "an environment variable of the server's process, `KEY=VALUE` (repeatable); ${VAR} refers to agenthost's")
		fs.Var(&headers, "header", "an HTTP header of a remote server, `\"Name: value\"` (repeatable)")
		fs.StringVar(&cwd, "cwd", "", "the working `directory` of the server's process")
	}
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), mcpUsage+"\nFlags of "+sub+":\n")
		fs.PrintDefaults()
	}
	// The flags of add end at the command that starts the server: what follows it is that command's.
	stop := 0
	if sub == "add" {
		stop = 2
	}
	if err := parseFlagsUntil(fs, args, io, stop); err != nil {
		return err
	}
	first, rest := fs.Arg(0), fs.Args()[min(1, fs.NArg()):]

	var tables []config.ServerTable
	var comment string
	var variables, notes []string
	vscode := false
	switch sub {
	case "import":
		if first == "" || len(rest) > 0 {
			return fmt.Errorf("%w: mcp import takes one file (- for stdin)", errUsage)
		}
		data, err := readInput(first, io.in)
		if err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
		im, err := config.ImportServers(data)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", errUsage, first, err)
		}
		tables, variables, notes = im.Servers, im.Variables, im.Notes
		vscode = im.VSCode
		if first != "-" {
			comment = "Imported from " + filepath.Base(first) + "."
		}
	case "add":
		t, err := serverFromFlags(first, serverURL, transport, cwd, envs, headers, rest)
		if err != nil {
			return fmt.Errorf("%w: mcp add: %w", errUsage, err)
		}
		tables = []config.ServerTable{t}
	}

	path := c.configPath
	src, err := os.ReadFile(path)
	created := errors.Is(err, os.ErrNotExist)
	if err != nil && !created {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	existing, err := config.ServerNames(path, src)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	var taken []string
	tables = slices.DeleteFunc(tables, func(t config.ServerTable) bool {
		if slices.Contains(existing, t.Name) {
			taken = append(taken, t.Name)
			fmt.Fprintf(io.err, "agenthost: %s: %s has [mcp.servers.%s] already: left as it is\n", t.Name, path, t.Name)
			return true
		}
		return false
	})
	if sub == "import" { // of the servers added only
		notes = append(notes, keepEnvironment(first, vscode, tables)...)
	}
	for _, n := range notes {
		fmt.Fprintf(io.err, "agenthost: note: %s\n", n)
	}

	switch {
	case len(tables) == 0:
	case *printOnly:
		for i, t := range tables {
			if i > 0 {
				fmt.Fprintln(io.out)
			}
			fmt.Fprint(io.out, t.TOML())
		}
	default:
		out, err := config.AddServers(src, comment, tables)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if err := writeFileKeepingMode(path, out); err != nil {
			return err
		}
		if created {
			fmt.Fprintf(io.out, "Created %s.\n", path)
		}
		for _, t := range tables {
			fmt.Fprintf(io.out, "Added %s to %s (%s).\n", t.Name, path, describeServer(t))
		}
	}
	var unset []string
	for _, v := range variables {
		if _, ok := os.LookupEnv(v); !ok {
			unset = append(unset, v)
		}
	}
	if len(unset) > 0 && len(tables) > 0 {
		fmt.Fprintf(io.err, "agenthost: note: the servers refer to %s, not set here: set them before agenthost starts\n", strings.Join(unset, ", "))
	}
	if len(taken) > 0 {
		return fmt.Errorf("not added, as %s has servers of these names: %s", path, strings.Join(taken, ", "))
	}
	return nil
}

// keepEnvironment makes the imported stdio servers see the environment their client gave them, and returns notes
// that say so. agenthost gives a stdio server only a few of its variables (see mcpclients.ServerConfig.Env): so does
// Claude Desktop (the MCP SDK's default: HOME, LOGNAME, PATH, SHELL, TERM, USER), but VS Code starts its servers with
// its own whole environment (plus envFile and env), and so do Cursor and Claude Code. A server of theirs may read a
// variable that its configuration does not name (an AWS profile, a token in the user's shell): env_passthrough = ["*"]
// keeps it working as it did, and the note says to narrow it. The client is told by the file: VS Code's format, else
// its name and place; for a file that names no client, the note says what changed.
func keepEnvironment(file string, vscode bool, tables []config.ServerTable) []string {
	client := ""
	base := filepath.Base(file)
	switch {
	case vscode:
		client = "VS Code"
	case base == "claude_desktop_config.json":
		return nil // the same few variables as agenthost's
	case slices.Contains(strings.Split(filepath.ToSlash(file), "/"), ".cursor"):
		client = "Cursor"
	case base == ".mcp.json" || base == ".claude.json":
		client = "Claude Code"
	}
	var stdio []string
	for i := range tables {
		if tables[i].URL != "" {
			continue
		}
		stdio = append(stdio, tables[i].Name)
		if client != "" {
			tables[i].EnvPassthrough = []string{"*"}
			tables[i].EnvPassthroughWhy = client + " gave this server its whole environment, secrets included: \"*\" keeps that. Narrow it to what the server reads."
		}
	}
	if len(stdio) == 0 {
		return nil
	}
	inherited := inheritedEnvText()
	if client == "" {
		return []string{fmt.Sprintf("a stdio server gets only %s of agenthost's environment, "+
			"plus its env: if the client gave %s more (Cursor, Claude Code and VS Code give their whole environment), name what each reads in env_passthrough", inherited, strings.Join(stdio, ", "))}
	}
	return []string{fmt.Sprintf("%s gives stdio servers its whole environment, agenthost only %s: "+
		"env_passthrough = [\"*\"] keeps %s as they ran there, secrets included; narrow it to the variables each reads", client, inherited, strings.Join(stdio, ", "))}
}

// inheritedEnvText lists the variables a stdio server inherits (mcpclients.InheritedEnv) for the notes.
func inheritedEnvText() string {
	names := mcpclients.InheritedEnv()
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1] +
		" (a proxy address with a password only if env_passthrough names it)"
}

// serverFromFlags builds the table of `mcp add NAME`: a remote server with -url, else a command and its arguments.
func serverFromFlags(name, serverURL, transport, cwd string, envs, headers []string, command []string) (config.ServerTable, error) {
	t := config.ServerTable{Name: name, Cwd: cwd}
	switch {
	case name == "":
		return t, errors.New("the server needs a name: agenthost mcp add NAME -- COMMAND [ARGS...], or agenthost mcp add NAME -url URL")
	case !validServerName(name):
		return t, fmt.Errorf("the name %q must be 1 to 64 letters, digits, _ or -", name)
	case serverURL != "" && len(command) > 0:
		return t, fmt.Errorf("give a command or -url, not both (got -url and %q)", command)
	case serverURL == "" && len(command) == 0:
		return t, errors.New("give the command that starts the server after its name (after --), or -url")
	}
	if serverURL != "" {
		u, err := url.Parse(serverURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return t, fmt.Errorf("-url must be an http or https URL (got %q)", serverURL)
		}
		switch transport {
		case "", config.TransportHTTP, config.TransportSSE:
			t.Transport = transport
		default:
			return t, fmt.Errorf("-transport must be http or sse (got %q)", transport)
		}
		if len(envs) > 0 || cwd != "" {
			return t, errors.New("-env and -cwd are for a server started by a command, not one at a URL")
		}
		t.URL = serverURL
	} else {
		if transport != "" || len(headers) > 0 {
			return t, errors.New("-transport and -header are for a server at a URL")
		}
		t.Command, t.Args = command[0], command[1:]
	}
	for _, kv := range envs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return t, fmt.Errorf("-env takes KEY=VALUE (got %q)", kv)
		}
		if t.Env == nil {
			t.Env = map[string]string{}
		}
		t.Env[k] = v
	}
	for _, h := range headers {
		k, v, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return t, fmt.Errorf("-header takes \"Name: value\" (got %q)", h)
		}
		if t.Headers == nil {
			t.Headers = map[string]string{}
		}
		t.Headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return t, nil
}

// validServerName reports whether name is a valid [mcp.servers] name: 1 to 64 letters, digits, _ or -.
func validServerName(name string) bool {
	return len(name) > 0 && len(name) <= 64 && strings.IndexFunc(name, func(r rune) bool {
		return !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) < 0
}

// describeServer says in a few words what a server is: its transport and its command or URL, without the values
// of its environment or headers.
func describeServer(t config.ServerTable) string {
	if t.URL != "" {
		return orDefault(t.Transport, config.TransportHTTP) + ": " + serverTarget(t)
	}
	return "stdio: " + serverTarget(t)
}

// serverTarget is where a server is: its command line, shortened, with the values of secret-looking arguments
// masked, or its URL with its userinfo and query values redacted.
func serverTarget(t config.ServerTable) string {
	if t.URL != "" {
		return redact.URL(t.URL)
	}
	return truncate(strings.Join(append([]string{t.Command}, redact.Args(t.Args)...), " "), 60)
}

// readInput reads the file name, or r when name is "-".
func readInput(name string, r io.Reader) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(r)
	}
	return os.ReadFile(name)
}

// writeFileKeepingMode replaces the file at path (or the one a link there points to) with data, at once: through a
// temporary file beside it, renamed over it, with its mode (0644 for a new file).
func writeFileKeepingMode(path string, data []byte) error {
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		path = resolved
	}
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // once renamed, there is nothing to remove
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// cmdMCPList connects to every configured MCP server, as check does, and lists them with their state.
func cmdMCPList(ctx context.Context, args []string, io *stdio) error {
	fs := flag.NewFlagSet("mcp list", flag.ContinueOnError)
	var c common
	c.register(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), mcpUsage+"\nFlags of list:\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, io); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: mcp list takes no arguments", errUsage)
	}
	logger, err := c.logger(io.err)
	if err != nil {
		return err
	}
	cfg, err := c.loadConfig(fs)
	if err != nil {
		return err
	}
	if len(cfg.MCP.Order) == 0 {
		fmt.Fprintf(io.out, "%s has no MCP servers: add one with agenthost mcp add or agenthost mcp import.\n", configName(cfg))
		return nil
	}
	grants, closer, err := wiring.OpenGrantStore(ctx, cfg, os.Getenv, logger)
	if err != nil {
		return fmt.Errorf("%s: %w", configName(cfg), err)
	}
	defer closer.Close()
	client, err := wiring.ConnectMCP(ctx, wiring.MCPServers(cfg, false, grants, os.Getenv, logger), version, logger)
	if err != nil {
		return err
	}
	defer client.Close()
	tw := tabwriter.NewWriter(io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tTRANSPORT\tTARGET\tSTATE\tTOOLS\tERROR")
	var failed []string
	for _, st := range client.Status() {
		s := cfg.MCP.Servers[st.Name]
		target := serverTarget(config.ServerTable{Command: s.Command, Args: s.Args, URL: s.URL})
		cell, details := serverProblem(st, 80)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", st.Name, st.Transport, target, st.State, st.Tools, cell)
		writeDetails(tw, 6, details)
		if st.State != mcpclients.StateConnected {
			failed = append(failed, st.Name)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("MCP servers not reachable: %s", strings.Join(failed, ", "))
	}
	return nil
}
