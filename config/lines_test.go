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
	at := func(path ...string) string { return toml.Key(path).String() }
	want := map[string]int{
		"title":                          2,
		"agent":                          3,
		"agent.instructions":             4,
		"agent.name":                     8,
		"agent.lit":                      9,
		"agent.arr":                      11,
		at("agent", "arr", indexPart(3)): 13,
		at("agent", "arr", indexPart(3), "inner"): 13,
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
		at("list", indexPart(1)):        19,
		at("list", indexPart(1), "x"):   20,
		at("list", indexPart(2)):        21,
		at("list", indexPart(2), "x"):   22,
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

// TestKeyLinesArraysOfTables checks that each element of an array of tables, and each key in it, has its own
// line, however the array is written.
func TestKeyLinesArraysOfTables(t *testing.T) {
	src := "[[a]]\n" + // 1
		"x = 1\n" + // 2
		"[[a.b]]\n" + // 3
		"y = 1\n" + // 4
		"[a.c]\n" + // 5
		"z = 1\n" + // 6
		"[[a]]\n" + // 7
		"[[a.b]]\n" + // 8
		"[[a.b]]\n" + // 9
		"y = 2\n" + // 10
		"[t]\n" + // 11
		"list = [\n" + // 12
		"  { k = 1 },\n" + // 13
		"  \"s\",\n" + // 14
		"  [{ k = 2 }],\n" + // 15
		"  { k = 3,\n" + // 16
		"    m = 4 },\n" + // 17
		"]\n" // 18
	var v map[string]any
	if _, err := toml.Decode(src, &v); err != nil {
		t.Fatalf("test document is not valid TOML: %v", err)
	}
	got := keyLines(src)
	at := func(path ...string) string { return toml.Key(path).String() }
	i := indexPart
	for k, line := range map[string]int{
		at("a", i(1)):                    1,
		at("a", i(1), "x"):               2,
		at("a", i(1), "b", i(1)):         3,
		at("a", i(1), "b", i(1), "y"):    4,
		at("a", i(1), "c"):               5,
		at("a", i(1), "c", "z"):          6,
		at("a", i(2)):                    7,
		at("a", i(2), "b", i(1)):         8,
		at("a", i(2), "b", i(2)):         9,
		at("a", i(2), "b", i(2), "y"):    10,
		at("t", "list", i(1)):            13,
		at("t", "list", i(1), "k"):       13,
		at("t", "list", i(3), i(1), "k"): 15,
		at("t", "list", i(4)):            16,
		at("t", "list", i(4), "m"):       17,
	} {
		if got[k] != line {
			t.Errorf("line of %q = %d, want %d", k, got[k], line)
		}
	}
	if _, ok := got[at("t", "list", i(2))]; ok {
		t.Errorf("a string in an array has a line")
	}
}

func TestFormatKey(t *testing.T) {
	for _, tc := range []struct {
		path []string
		want string
	}{
		{nil, ""},
		{[]string{"agent", "name"}, "agent.name"},
		{[]string{"tools", "my tool", "prompt"}, `tools."my tool".prompt`},
		{[]string{"serve", "skills", indexPart(2), "id"}, "serve.skills[2].id"},
		{[]string{"a", indexPart(1), indexPart(3), "b c"}, `a[1][3]."b c"`},
		{[]string{"", "x"}, `"".x`},
	} {
		if got := formatKey(tc.path); got != tc.want {
			t.Errorf("formatKey(%q) = %q, want %q", tc.path, got, tc.want)
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
