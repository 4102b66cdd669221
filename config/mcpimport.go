package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// ServerTable is an [mcp.servers.NAME] table to add to agent.toml: a server imported from another client's
// configuration or given on the command line. Its strings are written as they are, so a literal "$" must already be
// "$$".
type ServerTable struct {
	Name      string
	Transport string // "" to let the command or the URL decide
	Command   string
	Args      []string
	Env       map[string]string
	Cwd       string
	URL       string
	Headers   map[string]string
	// EnvPassthrough is written as env_passthrough, after a comment line saying EnvPassthroughWhy when it is set.
	EnvPassthrough    []string
	EnvPassthroughWhy string
}

// Imported is what ImportServers found in another client's configuration.
type Imported struct {
	// Servers are the servers to add, in the file's order, with names agent.toml accepts.
	Servers []ServerTable
	// Notes say what was changed or left out on the way: a renamed server, a dropped key, a variable to set.
	Notes []string
	// Variables are the environment variables the servers now refer to as ${NAME}, sorted.
	Variables []string
	// VSCode reports that the file is VS Code's (its "servers" object, or the "mcp" section of its settings), whose
	// stdio servers get VS Code's whole environment.
	VSCode bool
}

// ImportServers reads the MCP servers of another client's JSON configuration (comments and trailing commas allowed,
// as VS Code allows them): the "mcpServers" object of Claude
// Desktop, Claude Code, Cursor, Windsurf and others, or the "servers" object of VS Code (with its "inputs"). Their
// variables become agent.toml's ${NAME}: VS Code's ${env:NAME} and ${input:ID} (ID in upper case), Claude Code's
// ${NAME} and ${NAME:-default} (the default dropped), ${userHome} as ${HOME}; any other "$" is written "$$".
func ImportServers(data []byte) (*Imported, error) {
	var doc struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
		Servers    map[string]json.RawMessage `json:"servers"`
		Inputs     []struct {
			ID          string `json:"id"`
			Description string `json:"description"`
		} `json:"inputs"`
		MCP *struct {
			Servers map[string]json.RawMessage `json:"servers"`
		} `json:"mcp"` // VS Code's settings.json
	}
	data = stripJSONC(data)
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not a JSON configuration: %w", err)
	}
	servers := doc.MCPServers
	if servers == nil {
		servers = doc.Servers
	}
	if servers == nil && doc.MCP != nil {
		servers = doc.MCP.Servers
	}
	vscode := doc.MCPServers == nil && servers != nil
	if servers == nil {
		return nil, fmt.Errorf(`no "mcpServers" or "servers" object: not an MCP client's configuration`)
	}
	order, err := objectKeys(data, servers)
	if err != nil {
		return nil, err
	}
	inputs := map[string]string{}
	for _, in := range doc.Inputs {
		inputs[in.ID] = in.Description
	}
	im := &Imported{VSCode: vscode}
	vars := map[string]bool{}
	taken := map[string]bool{}
	for _, name := range order {
		var s struct {
			Type      string            `json:"type"`
			Command   string            `json:"command"`
			Args      []string          `json:"args"`
			Env       map[string]string `json:"env"`
			Cwd       string            `json:"cwd"`
			URL       string            `json:"url"`
			ServerURL string            `json:"serverUrl"` // Windsurf
			Headers   map[string]string `json:"headers"`
			Disabled  bool              `json:"disabled"`
		}
		if err := json.Unmarshal(servers[name], &s); err != nil {
			return nil, fmt.Errorf("server %q: %w", name, err)
		}
		if s.Disabled {
			im.Notes = append(im.Notes, fmt.Sprintf("%s: left out: it is disabled there", name))
			continue
		}
		var known map[string]json.RawMessage
		_ = json.Unmarshal(servers[name], &known) // it decoded above
		var dropped []string
		for k := range known {
			switch k {
			case "type", "command", "args", "env", "cwd", "url", "serverUrl", "headers", "disabled":
			default:
				dropped = append(dropped, k)
			}
		}
		if len(dropped) > 0 {
			slices.Sort(dropped)
			im.Notes = append(im.Notes, fmt.Sprintf("%s: ignored %s: agenthost has no such setting", name, strings.Join(dropped, ", ")))
		}
		t := ServerTable{Name: safeName(name), Command: s.Command, Cwd: s.Cwd, URL: s.URL}
		if t.URL == "" {
			t.URL = s.ServerURL
		}
		for base, n := t.Name, 2; taken[t.Name]; n++ {
			t.Name = fmt.Sprintf("%.60s-%d", base, n)
		}
		taken[t.Name] = true
		if t.Name != name {
			im.Notes = append(im.Notes, fmt.Sprintf("%s: named %s: server names are letters, digits, _ and -", name, t.Name))
		}
		switch s.Type {
		case "", "stdio", "local":
		case "http", "streamable-http", "streamableHttp", "streamable_http", "remote":
			t.Transport = TransportHTTP
		case "sse":
			t.Transport = TransportSSE
		default:
			return nil, fmt.Errorf("server %q: unknown type %q", name, s.Type)
		}
		if t.Transport == "" && t.Command == "" && t.URL == "" {
			return nil, fmt.Errorf("server %q has neither a command nor a URL", name)
		}
		conv := func(v string) string {
			out, used, notes := convertVars(v, inputs)
			for _, u := range used {
				vars[u] = true
			}
			for _, n := range notes {
				im.Notes = append(im.Notes, name+": "+n)
			}
			return out
		}
		t.Command, t.Cwd, t.URL = conv(t.Command), conv(t.Cwd), conv(t.URL)
		for _, a := range s.Args {
			t.Args = append(t.Args, conv(a))
		}
		if len(s.Env) > 0 {
			t.Env = map[string]string{}
			for k, v := range s.Env {
				t.Env[k] = conv(v)
				if !strings.Contains(v, "${") && secretName(k) && v != "" {
					im.Notes = append(im.Notes, fmt.Sprintf("%s: env.%s is copied as written; to keep it out of agent.toml write %s = \"${%s}\" and set %s",
						t.Name, k, k, k, k))
				}
			}
		}
		if len(s.Headers) > 0 {
			t.Headers = map[string]string{}
			for k, v := range s.Headers {
				t.Headers[k] = conv(v)
			}
		}
		im.Servers = append(im.Servers, t)
	}
	for v := range vars {
		im.Variables = append(im.Variables, v)
	}
	slices.Sort(im.Variables)
	return im, nil
}

// objectKeys returns the keys of the servers object in the order the file has them.
func objectKeys(data []byte, servers map[string]json.RawMessage) ([]string, error) {
	var keys []string
	dec := json.NewDecoder(bytes.NewReader(data))
	// Walk to the object that holds the servers: the first object value whose keys are exactly the servers'.
	var walk func(depth int) error
	walk = func(depth int) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		d, ok := tok.(json.Delim)
		if !ok || (d != '{' && d != '[') {
			return nil
		}
		var here []string
		for dec.More() {
			if d == '{' {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				here = append(here, k.(string))
			}
			if err := walk(depth + 1); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return err
		}
		if keys == nil && d == '{' && len(here) == len(servers) && depth > 0 && allIn(here, servers) {
			keys = here
		}
		return nil
	}
	if err := walk(0); err != nil {
		return nil, fmt.Errorf("not a JSON configuration: %w", err)
	}
	if keys == nil { // an empty servers object
		keys = []string{}
	}
	return keys, nil
}

func allIn(keys []string, m map[string]json.RawMessage) bool {
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}

// safeName makes name a valid server name: characters other than letters, digits, _ and - become -.
func safeName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '-'
		}
	}
	s := strings.Trim(string(b), "-")
	if s == "" {
		s = "server"
	}
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}

// secretName reports whether an environment variable's name suggests it holds a secret.
func secretName(name string) bool {
	n := strings.ToUpper(name)
	return slices.ContainsFunc([]string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH"},
		func(s string) bool { return strings.Contains(n, s) })
}

// editorVars are VS Code's and Cursor's own variables, which are not environment variables.
var editorVars = map[string]bool{"workspaceFolder": true, "workspaceFolderBasename": true, "workspaceRoot": true,
	"cwd": true, "pathSeparator": true, "file": true, "fileDirname": true, "fileBasename": true, "relativeFile": true,
	"execPath": true, "selectedText": true, "lineNumber": true}

// clientVar matches the variable references of other clients' configurations.
var clientVar = regexp.MustCompile(`\$\{([^}]*)\}`)

// convertVars rewrites another client's variable references as agent.toml's and escapes every other "$". It returns
// the variables the value now refers to and notes on what could not be kept.
func convertVars(v string, inputs map[string]string) (out string, used, notes []string) {
	var b strings.Builder
	last := 0
	for _, m := range clientVar.FindAllStringSubmatchIndex(v, -1) {
		b.WriteString(strings.ReplaceAll(v[last:m[0]], "$", "$$"))
		last = m[1]
		ref := v[m[2]:m[3]]
		name := ""
		switch {
		case strings.HasPrefix(ref, "env:"):
			name = strings.TrimPrefix(ref, "env:")
		case strings.HasPrefix(ref, "input:"):
			id := strings.TrimPrefix(ref, "input:")
			name = envName(id)
			if desc := inputs[id]; desc != "" {
				notes = append(notes, fmt.Sprintf("${%s} is what VS Code asked for as %q", name, desc))
			}
		case ref == "userHome":
			name = "HOME"
		case strings.Contains(ref, ":-"):
			name, _, _ = strings.Cut(ref, ":-")
			notes = append(notes, fmt.Sprintf("${%s} has no default in agent.toml: set it", name))
		case validEnvName(ref) && !editorVars[ref]:
			name = ref
		default:
			name = envName(ref)
			notes = append(notes, fmt.Sprintf("${%s} stands for the client's ${%s}: set it", name, ref))
		}
		if !validEnvName(name) {
			name = envName(name)
		}
		b.WriteString("${" + name + "}")
		if !slices.Contains(used, name) {
			used = append(used, name)
		}
	}
	b.WriteString(strings.ReplaceAll(v[last:], "$", "$$"))
	return b.String(), used, notes
}

// envName turns an identifier such as "github-token" or "workspaceFolder" into an environment variable name:
// GITHUB_TOKEN, WORKSPACE_FOLDER.
func envName(id string) string {
	var b strings.Builder
	for i, r := range id {
		switch {
		case r >= 'A' && r <= 'Z':
			if i > 0 && id[i-1] >= 'a' && id[i-1] <= 'z' {
				b.WriteByte('_')
			}
			b.WriteRune(r)
		case r >= 'a' && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
		case r >= '0' && r <= '9':
			if b.Len() == 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "VALUE"
	}
	return b.String()
}

// stripJSONC removes the comments and then the trailing commas of JSON with comments (VS Code's format), leaving
// strings as they are.
func stripJSONC(data []byte) []byte {
	var out []byte
	scanJSON(data, func(i int) int {
		switch {
		case data[i] == '/' && i+1 < len(data) && data[i+1] == '/':
			for i < len(data) && data[i] != '\n' {
				i++
			}
			return i
		case data[i] == '/' && i+1 < len(data) && data[i+1] == '*':
			if end := bytes.Index(data[i+2:], []byte("*/")); end >= 0 {
				return i + 2 + end + 2
			}
			return len(data)
		}
		out = append(out, data[i])
		return i + 1
	}, func(s []byte) { out = append(out, s...) })
	data, out = out, nil
	scanJSON(data, func(i int) int {
		if data[i] == ',' {
			rest := bytes.TrimLeft(data[i+1:], " \t\r\n")
			if len(rest) > 0 && (rest[0] == '}' || rest[0] == ']') {
				return i + 1 // a trailing comma
			}
		}
		out = append(out, data[i])
		return i + 1
	}, func(s []byte) { out = append(out, s...) })
	return out
}

// scanJSON walks data: each string literal, quotes included, goes to str whole; at every other byte, other is
// called with its offset and returns the offset to go on from.
func scanJSON(data []byte, other func(i int) int, str func([]byte)) {
	for i := 0; i < len(data); {
		if data[i] != '"' {
			i = other(i)
			continue
		}
		j := i + 1
		for ; j < len(data) && data[j] != '"'; j++ {
			if data[j] == '\\' {
				j++
			}
		}
		end := min(j+1, len(data))
		str(data[i:end])
		i = end
	}
}
