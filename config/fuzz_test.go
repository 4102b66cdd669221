package config

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that Parse never panics, and that a configuration it accepts also passes Validate.
func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile(filepath.Join("..", "agent.toml")); err == nil {
		f.Add(data)
	}
	for _, s := range []string{
		"",
		"[agent]\nmax_iterations = 500\nnmae = 1\n",
		"[mcp.servers.fs]\ncommand = \"${HOME}\"\nargs = [\"$${X}\", 1]\nenv = { A = \"${A}\" }\n",
		"mcp = { servers = { x = { url = \"http://x\", headers = { A = \"b\" } } } }\n",
		"[agent]\ninstructions = \"\"\"\n[x]\ny = 1\n\"\"\"\n[[a2a.peers]]\n",
		"[tools.\"a\\u0062\"]\nforced = \"${F}\"\n",
		"a.'b'.\"c\" = [ { d = 1 }, [2, '3'] ] # c\r\n",
		"[[serve.skills]]\nid = \"a\"\nname = \"A\"\ndescription = \"d\"\n[[serve.skills]]\nid = \"a\"\n",
		"[serve]\nskills = [{ id = \"a\", name = \"A\", description = \"d\", tags = [\"t\"] }, 1]\n",
		"[serve]\na2a = \":0\"\na2a_public_url = \"https://a.example/x\"\n[a2a.peers.p]\nurl = \"http://p\"\npoll_interval = \"1ms\"\n",
		"[serve]\nhttp = \"[::1]:0\"\nallowed_hosts = [\"[::1]\", \"a:1\"]\nallowed_origins = [\"http://[::1]:1\"]\n",
	} {
		f.Add([]byte(s))
	}
	env := envOf(map[string]string{"HOME": "/h", "A": "a", "F": "true"})
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz.toml", data, env)
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse accepted %q but Validate says: %v", data, err)
		}
	})
}

// FuzzKeyLines runs the line scanner on arbitrary text, including text the TOML decoder rejects.
func FuzzKeyLines(f *testing.F) {
	for _, s := range []string{"", "a = 1\n", "[a", "a = \"\"\"", "x = '''", "{", "[[", "\"\\", "a.\"b\\u00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		keyLines(src)
	})
}
