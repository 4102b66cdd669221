package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// ServerNames returns the names of the [mcp.servers] tables of an agent.toml document. It reads the document as TOML
// only: it need not be a valid configuration (its variables need not be set). name locates a syntax error.
func ServerNames(name string, src []byte) ([]string, error) {
	var doc struct {
		MCP struct {
			Servers map[string]toml.Primitive `toml:"servers"`
		} `toml:"mcp"`
	}
	if _, err := toml.Decode(string(src), &doc); err != nil {
		return nil, syntaxError(name, err)
	}
	names := make([]string, 0, len(doc.MCP.Servers))
	for n := range doc.MCP.Servers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// AddServers returns src with tables added after its last [mcp.servers.*] table (before the comment lines that lead
// into the table after it), or at its end when it has none; every byte of src is kept. comment, when not "", is
// written above the tables as comment lines. It fails when a table's name is taken, or when the result would not be a
// TOML document with the tables in it.
func AddServers(src []byte, comment string, tables []ServerTable) ([]byte, error) {
	text := string(src)
	names, err := ServerNames("", src)
	if err != nil {
		return nil, err
	}
	var block strings.Builder
	for line := range strings.Lines(comment) {
		block.WriteString("# " + strings.TrimRight(line, "\n") + "\n")
	}
	for i, t := range tables {
		if slices.Contains(names, t.Name) {
			return nil, fmt.Errorf("[mcp.servers.%s] exists already", t.Name)
		}
		names = append(names, t.Name)
		if i > 0 {
			block.WriteString("\n")
		}
		block.WriteString(t.TOML())
	}

	at := insertionPoint(text)
	before, after := text[:at], text[at:]
	if before != "" && !strings.HasSuffix(before, "\n") {
		before += "\n"
	}
	if before != "" && !strings.HasSuffix(before, "\n\n") {
		before += "\n"
	}
	out := before + block.String()
	if after != "" {
		out += "\n" + after
	}

	// The result must hold exactly the old tables and the new ones.
	got, err := ServerNames("", []byte(out))
	if err != nil {
		return nil, fmt.Errorf("the tables would not fit in the file: %w", err)
	}
	slices.Sort(names)
	if !slices.Equal(got, names) {
		return nil, fmt.Errorf("the tables would not fit in the file: it would hold the servers %q, not %q", got, names)
	}
	return []byte(out), nil
}

// insertionPoint returns where new [mcp.servers] tables go in text: at the start of the comment lines that lead
// into the table after the last [mcp.servers.*] table, or at the end.
func insertionPoint(text string) int {
	headers := tableHeaders(text)
	last := -1
	for i, h := range headers {
		if len(h.key) >= 3 && h.key[0] == "mcp" && h.key[1] == "servers" {
			last = i
		}
	}
	if last < 0 || last == len(headers)-1 {
		return len(text)
	}
	at := headers[last+1].offset
	at = strings.LastIndexByte(text[:at], '\n') + 1 // the start of the header's line
	for at > 0 {
		prev := strings.LastIndexByte(text[:at-1], '\n') + 1
		if !strings.HasPrefix(strings.TrimSpace(text[prev:at]), "#") {
			break
		}
		at = prev
	}
	return at
}

// TOML returns the table as agent.toml text, ending with a newline.
func (t ServerTable) TOML() string {
	var b strings.Builder
	fmt.Fprintf(&b, "[mcp.servers.%s]\n", tomlKey(t.Name))
	str := func(key, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%s = %s\n", key, tomlString(v))
		}
	}
	str("transport", t.Transport)
	str("command", t.Command)
	if len(t.Args) > 0 {
		quoted := make([]string, len(t.Args))
		for i, a := range t.Args {
			quoted[i] = tomlString(a)
		}
		fmt.Fprintf(&b, "args = [%s]\n", strings.Join(quoted, ", "))
	}
	inline := func(key string, m map[string]string) {
		if len(m) == 0 {
			return
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		pairs := make([]string, len(keys))
		for i, k := range keys {
			pairs[i] = tomlKey(k) + " = " + tomlString(m[k])
		}
		fmt.Fprintf(&b, "%s = { %s }\n", key, strings.Join(pairs, ", "))
	}
	inline("env", t.Env)
	if len(t.EnvPassthrough) > 0 {
		if t.EnvPassthroughWhy != "" {
			fmt.Fprintf(&b, "# %s\n", t.EnvPassthroughWhy)
		}
		quoted := make([]string, len(t.EnvPassthrough))
		for i, p := range t.EnvPassthrough {
			quoted[i] = tomlString(p)
		}
		fmt.Fprintf(&b, "env_passthrough = [%s]\n", strings.Join(quoted, ", "))
	}
	str("cwd", t.Cwd)
	str("url", t.URL)
	inline("headers", t.Headers)
	return b.String()
}

// tomlKey writes a key bare when TOML allows it, else quoted.
func tomlKey(k string) string {
	if k != "" && strings.IndexFunc(k, func(r rune) bool {
		return !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) < 0 {
		return k
	}
	return tomlString(k)
}

// tomlString writes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
