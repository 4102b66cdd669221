//go:build unix

package statedir

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// withUmask sets the process's umask for the test. The umask is process-wide: tests calling it must not be
// parallel, and none of this package is.
func withUmask(t *testing.T, mask int) {
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestMkdirPrivate(t *testing.T) {
	withUmask(t, 0o022)
	base := t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "a", "b", "c")
	if err := MkdirPrivate(dir); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"a", "a/b", "a/b/c"} {
		if m := mode(t, filepath.Join(base, d)); m != 0o700 {
			t.Errorf("%s: mode %#o, want 0700", d, m)
		}
	}
	if m := mode(t, base); m != 0o755 {
		t.Errorf("an existing directory was changed: %#o", m)
	}
	if err := MkdirPrivate(dir); err != nil {
		t.Errorf("again: %v", err)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := MkdirPrivate(filepath.Join(file, "x")); err == nil {
		t.Error("a directory under a file was made")
	}
}

func TestCreatePrivate(t *testing.T) {
	// A umask that would leave group and others' bits, and one that would take the owner's write bit.
	for _, mask := range []int{0o022, 0o277} {
		dir := t.TempDir() // before the umask, which would take its owner's write bit
		p := filepath.Join(dir, "f")
		var logs bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&logs, nil))
		old := syscall.Umask(mask)
		err := CreatePrivate(p, logger)
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		if m := mode(t, p); m != 0o600 {
			t.Errorf("umask %#o: mode %#o, want 0600", mask, m)
		}
		if logs.Len() != 0 {
			t.Errorf("a new file was logged: %s", logs.String())
		}
	}
}

func TestTightenFile(t *testing.T) {
	withUmask(t, 0o022)
	dir := t.TempDir()
	p := filepath.Join(dir, "state.db")
	if err := os.WriteFile(p, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	for range 3 {
		if err := CreatePrivate(p, logger); err != nil {
			t.Fatal(err)
		}
		if err := TightenFile(p, logger); err != nil {
			t.Fatal(err)
		}
	}
	if m := mode(t, p); m != 0o600 {
		t.Errorf("mode %#o, want 0600", m)
	}
	if b, _ := os.ReadFile(p); string(b) != "secret" {
		t.Errorf("content changed: %q", b)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "path="+p) ||
		!strings.Contains(lines[0], "mode=0644") {
		t.Errorf("want one warning naming the path and the old mode, got:\n%s", logs.String())
	}

	if err := TightenFile(filepath.Join(dir, "missing"), logger); err != nil {
		t.Errorf("missing file: %v", err)
	}
	// A link is refused, and its target left alone.
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func(string, *slog.Logger) error{"CreatePrivate": CreatePrivate, "TightenFile": TightenFile} {
		if err := f(link, logger); err == nil || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("%s of a link: %v", name, err)
		}
	}
	if m := mode(t, target); m != 0o644 {
		t.Errorf("the link's target was changed: %#o", m)
	}
}

func TestPrepareSQLite(t *testing.T) {
	withUmask(t, 0o022)
	dir := filepath.Join(t.TempDir(), "state")
	p := filepath.Join(dir, "a.db")
	if err := PrepareSQLite(p, nil); err != nil {
		t.Fatal(err)
	}
	if m := mode(t, dir); m != 0o700 {
		t.Errorf("directory mode %#o", m)
	}
	if m := mode(t, p); m != 0o600 {
		t.Errorf("file mode %#o", m)
	}
	for _, s := range []string{"-wal", "-shm", "-journal"} {
		if err := os.WriteFile(p+s, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := PrepareSQLite(p, nil); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"-wal", "-shm", "-journal"} {
		if m := mode(t, p+s); m != 0o600 {
			t.Errorf("%s mode %#o", s, m)
		}
	}
}
