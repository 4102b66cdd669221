package builtin

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
)

// fileTree writes files (name → content) under a new directory and returns it.
func fileTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// fileTools builds read_file, list_dir and search_files over opts.
func fileTools(t *testing.T, opts FilesOptions) map[string]host.Tool {
	t.Helper()
	ts, err := New([]string{"read_file", "list_dir", "search_files"}, &Options{Files: opts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ts.Close(); err != nil {
			t.Error(err)
		}
	})
	tools, _ := ts.Tools(t.Context())
	m := map[string]host.Tool{}
	for _, tool := range tools {
		m[tool.Spec().Name] = tool
	}
	return m
}

func callTool(t *testing.T, tool host.Tool, args string) *host.Result {
	t.Helper()
	res, err := tool.Call(t.Context(), json.RawMessage(args), nil)
	if err != nil {
		t.Fatalf("Call(%s): %v", args, err)
	}
	return res
}

func fileURI(p string) string { return (&url.URL{Scheme: "file", Path: p}).String() }

func TestFilesNew(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	os.WriteFile(file, nil, 0o644)
	tests := []struct {
		roots []string
		want  string
	}{
		{nil, "builtin: read_file: roots is required"},
		{[]string{filepath.Join(dir, "missing")}, "root " + filepath.Join(dir, "missing") + ": no such file or directory"},
		{[]string{file}, "root " + file + ": not a directory"},
	}
	for _, tt := range tests {
		_, err := New([]string{"read_file", "list_dir"}, &Options{Files: FilesOptions{Roots: tt.roots}})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("roots %v: err = %v, want %q", tt.roots, err, tt.want)
		}
	}
}

func TestReadFile(t *testing.T) {
	dir := fileTree(t, map[string]string{
		"notes/plan.md": "# Plan\nline 2\nline 3\nline 4\n",
		"empty.txt":     "",
		"crlf.txt":      "a\r\nb\r\n",
	})
	other := fileTree(t, map[string]string{"other.txt": "in the second root\n"})
	tools := fileTools(t, FilesOptions{Roots: []string{dir, other}})
	read := tools["read_file"]

	tests := []struct {
		args, want, uri string
	}{
		{`{"path":"notes/plan.md"}`, "notes/plan.md (4 lines)\n1\t# Plan\n2\tline 2\n3\tline 3\n4\tline 4\n", filepath.Join(dir, "notes/plan.md")},
		{`{"path":"notes/../notes/plan.md","offset":2,"limit":2}`, "notes/plan.md (lines 2-3 of 4)\n2\tline 2\n3\tline 3\n[1 more lines: read on with offset 4]\n", ""},
		{`{"path":"` + filepath.Join(dir, "notes/plan.md") + `","offset":4}`, "notes/plan.md (lines 4-4 of 4)\n4\tline 4\n", ""},
		{`{"path":"empty.txt"}`, "empty.txt is empty\n", ""},
		{`{"path":"crlf.txt"}`, "crlf.txt (2 lines)\n1\ta\n2\tb\n", ""},
		{`{"path":"` + filepath.Join(other, "other.txt") + `"}`, filepath.Join(other, "other.txt") + " (1 lines)\n1\tin the second root\n", filepath.Join(other, "other.txt")},
	}
	for _, tt := range tests {
		res := callTool(t, read, tt.args)
		if res.IsError || res.Text != tt.want {
			t.Errorf("%s: %q (error %v)\nwant %q", tt.args, res.Text, res.IsError, tt.want)
		}
		if tt.uri != "" && (len(res.References) != 1 || res.References[0].URI != fileURI(tt.uri)) {
			t.Errorf("%s: references %+v, want %s", tt.args, res.References, fileURI(tt.uri))
		}
	}
}

func TestReadFileLong(t *testing.T) {
	dir := fileTree(t, map[string]string{"long.txt": strings.Repeat("x\n", 2500)})
	res := callTool(t, fileTools(t, FilesOptions{Roots: []string{dir}})["read_file"], `{"path":"long.txt"}`)
	if !strings.HasPrefix(res.Text, "long.txt (lines 1-2000 of 2500)\n") || !strings.HasSuffix(res.Text, "[500 more lines: read on with offset 2001]\n") {
		t.Errorf("text starts %q, ends %q", res.Text[:40], res.Text[len(res.Text)-60:])
	}
}

func TestListDir(t *testing.T) {
	dir := fileTree(t, map[string]string{"b.txt": "hello\n", "a/x.md": "", ".hidden": "h"})
	// Links are shown with where they lead, unless that is outside the roots.
	for link, dest := range map[string]string{"link": "b.txt", "a/up": "../b.txt", "a/out": "../../etc", "passwd": "/etc/passwd",
		"abs": filepath.Join(dir, "b.txt")} {
		if err := os.Symlink(dest, filepath.Join(dir, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	tools := fileTools(t, FilesOptions{Roots: []string{dir}})
	res := callTool(t, tools["list_dir"], `{}`)
	want := ".: 6 entries\n.hidden  (1 bytes)\na/\nabs -> " + filepath.Join(dir, "b.txt") + "\nb.txt  (6 bytes)\nlink -> b.txt\n" +
		"passwd -> (outside the allowed roots)\n"
	if res.IsError || res.Text != want {
		t.Errorf("list_dir: %q\nwant %q", res.Text, want)
	}
	if len(res.References) != 1 || res.References[0].URI != fileURI(dir) {
		t.Errorf("references %+v", res.References)
	}
	res = callTool(t, tools["list_dir"], `{"path":"a"}`)
	if res.Text != "a: 3 entries\nout -> (outside the allowed roots)\nup -> ../b.txt\nx.md  (0 bytes)\n" {
		t.Errorf("list_dir a: %q", res.Text)
	}

	capped := fileTools(t, FilesOptions{Roots: []string{dir}, MaxResults: 2})
	if res := callTool(t, capped["list_dir"], `{"path":"."}`); res.Text != ".: 6 entries\n.hidden  (1 bytes)\na/\n... and 4 more\n" {
		t.Errorf("capped: %q", res.Text)
	}
}

// A link's text is judged from the directory's real place: reached through an in-root directory link, a
// directory's "../x" may lead out of the roots although "dir/../x" reads as inside.
func TestListDirThroughLinkedDir(t *testing.T) {
	parent := t.TempDir()
	if err := os.WriteFile(filepath.Join(parent, "outside-secret-name.txt"), []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, "R")
	if err := os.MkdirAll(filepath.Join(dir, "p", "q"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../..", filepath.Join(dir, "p", "q", "r")); err != nil { // R/p/q/r is R
		t.Fatal(err)
	}
	if err := os.Symlink("../outside-secret-name.txt", filepath.Join(dir, "y")); err != nil {
		t.Fatal(err)
	}
	tools := fileTools(t, FilesOptions{Roots: []string{dir}})
	for _, p := range []string{".", "p/q/r", "p/q/r/p/q/r"} {
		res := callTool(t, tools["list_dir"], `{"path":"`+p+`"}`)
		want := p + ": 2 entries\np/\ny -> (outside the allowed roots)\n"
		if res.IsError || res.Text != want {
			t.Errorf("list_dir %s: %q\nwant %q", p, res.Text, want)
		}
	}
	// p/q/r's own text, "../..", leads to the root: it is shown.
	if res := callTool(t, tools["list_dir"], `{"path":"p/q"}`); res.Text != "p/q: 1 entries\nr -> ../..\n" {
		t.Errorf("list_dir p/q: %q", res.Text)
	}
}

func TestSearchFiles(t *testing.T) {
	dir := fileTree(t, map[string]string{
		"main.go":          "package main\n\nfunc main() {\n\t// TODO: flags\n}\n",
		"pkg/util.go":      "package pkg\n// todo later\nfunc Util() {}\n",
		"docs/guide.md":    "# Guide\nTODO: write\n",
		".git/config":      "TODO hidden\n",
		"long/minified.js": "var a=1;" + strings.Repeat("x", 1000) + "TODO\n",
	})
	other := fileTree(t, map[string]string{"notes.md": "TODO: second root\n"})
	tools := fileTools(t, FilesOptions{Roots: []string{dir, other}})
	search := tools["search_files"]

	res := callTool(t, search, `{"pattern":"TODO"}`)
	for _, want := range []string{
		"docs/guide.md:2: TODO: write\n",
		"main.go:4: \t// TODO: flags\n",
		"long/minified.js:1: var a=1;xxx",
		filepath.Join(other, "notes.md") + ":1: TODO: second root\n",
		"[4 matching lines in 4 files, of 5 files searched.]",
	} {
		if !strings.Contains(res.Text, want) {
			t.Errorf("search lacks %q:\n%s", want, res.Text)
		}
	}
	if strings.Contains(res.Text, "hidden") || strings.Contains(res.Text, strings.Repeat("x", 400)) {
		t.Errorf("hidden directory searched or long line kept:\n%s", res.Text)
	}
	if len(res.References) != 4 || res.References[0].URI != fileURI(filepath.Join(dir, "docs/guide.md")) ||
		res.References[0].Title != "docs/guide.md" || res.References[0].Content != "2: TODO: write" {
		t.Errorf("references %+v", res.References)
	}

	res = callTool(t, search, `{"pattern":"(?i)todo","glob":"*.go","path":"."}`)
	if res.Text != "main.go:4: \t// TODO: flags\npkg/util.go:2: // todo later\n[2 matching lines in 2 files, of 2 files searched.]\n" {
		t.Errorf("glob: %q", res.Text)
	}
	res = callTool(t, search, `{"pattern":"^func","path":"pkg/util.go"}`)
	if res.Text != "pkg/util.go:3: func Util() {}\n[1 matching lines in 1 files, of 1 files searched.]\n" {
		t.Errorf("one file: %q", res.Text)
	}
	res = callTool(t, search, `{"pattern":"nothing like this"}`)
	if res.IsError || res.Text != `No line matches "nothing like this" in 5 files searched.` {
		t.Errorf("no match: %q", res.Text)
	}

	capped := fileTools(t, FilesOptions{Roots: []string{dir}, MaxResults: 2})
	res = callTool(t, capped["search_files"], `{"pattern":"TODO|package"}`)
	if !strings.HasSuffix(res.Text, "[Stopped at 2 matching lines: narrow the pattern, the path or the glob to see the rest.]\n") ||
		strings.Count(res.Text, "\n") != 3 {
		t.Errorf("capped: %q", res.Text)
	}

	// A cancelled search stops.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := search.Call(ctx, json.RawMessage(`{"pattern":"TODO"}`), nil); err == nil {
		t.Error("a cancelled search succeeded")
	}
}
