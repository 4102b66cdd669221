//go:build unix

package mcpauth

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/oauth2"
)

// The grants file and its directory are private whatever the umask, and a file left readable by others is made
// private, with one warning, before its tokens are read. The umask is process-wide: this test is not parallel.
func TestFileStorePrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	t.Cleanup(func() { syscall.Umask(old) })
	var logs bytes.Buffer
	s := fileStore(t)
	s.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	g := &Grant{Server: "gh", URL: "https://mcp.example/mcp", Token: &oauth2.Token{AccessToken: "secret-token"}}
	if err := s.SaveGrant(t.Context(), g); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{s.Path: 0o600, filepath.Dir(s.Path): 0o700} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, %v, want %#o", p, fi.Mode(), err, want)
		}
	}
	if logs.Len() != 0 {
		t.Errorf("a new file was logged: %s", logs.String())
	}

	if err := os.Chmod(s.Path, 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if g, err := s.LoadGrant(t.Context(), "gh"); err != nil || g.Token.AccessToken != "secret-token" {
			t.Fatalf("LoadGrant: %+v, %v", g, err)
		}
	}
	if fi, err := os.Stat(s.Path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("after reading: %v, %v", fi.Mode(), err)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "path="+s.Path) || !strings.Contains(lines[0], "mode=0644") {
		t.Errorf("want one warning naming the file and its old mode:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "secret-token") {
		t.Error("the token reached the log")
	}
}

// A symbolic link in the grants file's place is refused by every operation, with an error that says so, and the
// link and the file it leads to are left as they were: a save, which replaces the file by rename, would otherwise
// put a regular file in the link's place.
func TestFileStoreRefusesLink(t *testing.T) {
	s := fileStore(t)
	if err := os.MkdirAll(filepath.Dir(s.Path), 0o700); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "dotfiles-grants.json")
	const content = `{"gh": {"server": "gh", "url": "https://mcp.example/mcp", "token": {"access_token": "secret-token"}}}`
	if err := os.WriteFile(target, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, s.Path); err != nil {
		t.Fatal(err)
	}
	ops := map[string]func() error{
		"LoadGrant":   func() error { _, err := s.LoadGrant(t.Context(), "gh"); return err },
		"Grants":      func() error { _, err := s.Grants(t.Context()); return err },
		"SaveGrant":   func() error { return s.SaveGrant(t.Context(), &Grant{Server: "other", URL: "https://o.example/mcp"}) },
		"DeleteGrant": func() error { return s.DeleteGrant(t.Context(), "gh") },
	}
	for name, op := range ops {
		err := op()
		if err == nil || !strings.Contains(err.Error(), "grants file: "+s.Path+" is a symbolic link") ||
			!strings.Contains(err.Error(), "keep the file itself there") {
			t.Errorf("%s: %v, want the link refused", name, err)
		}
		if err != nil && strings.Contains(err.Error(), target) {
			t.Errorf("%s: the error names where the link leads: %v", name, err)
		}
	}
	if fi, err := os.Lstat(s.Path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v, %v", fi, err)
	}
	fi, err := os.Stat(target)
	if b, _ := os.ReadFile(target); err != nil || string(b) != content || fi.Mode().Perm() != 0o644 {
		t.Errorf("the link's target was changed: %q, %v, %v", b, fi.Mode(), err)
	}
}
