package config

import (
	"testing"

	"github.com/BurntSushi/toml"
)

func TestKeyLines(t *testing.T) {
	src := "\ufeff# comment [not.a.table] x = 1\n" + // 1
		"title = \"a # not a comment\" # comment\n" + // 2
		"[agent] # header\n" + // 3
		"instructions = \"\"\"\n" + // 4
		"[fake]\n" + // 5
		"fake = \\\"\"\"\n" + // 6
		"still = \"\"\"\"\"\n" + // 7  (string ends with two quotes)
		"name = 'literal'\n" + // 8
		"lit = '''\n" + // 9
		"[fake2]'''\n" + // 10
		"arr = [ # comment ]\n" + // 11
		"  \"]\", [1, 2],\n" + // 12
		"  { inner = 1 }, # }\n" + // 13
		"]\n" + // 14
		"after = 1979-05-27 07:32:00Z\n" + // 15
		"[ mcp . servers . \"a.b\\u0063\" ]\r\n" + // 16
		"env = { A = \"1\", 'B' = { C = 2 } }\r\n" + // 17
		"dotted . key = true\n" + // 18
		"[[list]]\n" + // 19
		"x = 1\n" + // 20
		"[[list]]\n" + // 21
		"x = 2\n" // 22
	var v map[string]any
	if _, err := toml.Decode(src, &v); err != nil {
		t.Fatalf("test document is not valid TOML: %v", err)
	}
	got := keyLines(src)
	want := map[string]int{
		"title":                         2,
		"agent":                         3,
		"agent.instructions":            4,
		"agent.name":                    8,
		"agent.lit":                     9,
		"agent.arr":                     11,
		"agent.after":                   15,
		"mcp":                           16,
		"mcp.servers":                   16,
		`mcp.servers."a.bc"`:            16,
		`mcp.servers."a.bc".env`:        17,
		`mcp.servers."a.bc".env.A`:      17,
		`mcp.servers."a.bc".env.B`:      17,
		`mcp.servers."a.bc".env.B.C`:    17,
		`mcp.servers."a.bc".dotted`:     18,
		`mcp.servers."a.bc".dotted.key`: 18,
		"list":                          19,
		"list.x":                        20,
	}
	for k, line := range want {
		if got[k] != line {
			t.Errorf("line of %s = %d, want %d", k, got[k], line)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected key %s at line %d", k, got[k])
		}
	}
}

func TestUnescapeBasic(t *testing.T) {
	for in, want := range map[string]string{
		`plain`:                "plain",
		`a\tb\\c\"d`:           "a\tb\\c\"d",
		`\u00e9\U0001F600\x41`: "é😀A",
		`\b\f\n\r\e`:           "\b\f\n\r\x1b",
		`\u12`:                 `\u12`,
		`\q`:                   `\q`,
		`end\`:                 `end\`,
	} {
		if got := unescapeBasic(in); got != want {
			t.Errorf("unescapeBasic(%q) = %q, want %q", in, got, want)
		}
	}
}
