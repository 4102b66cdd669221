package statedir

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
)

// The files agenthost keeps may hold conversations, tool results or credentials: they are the user's alone,
// whatever the umask.
const (
	privateFile fs.FileMode = 0o600
	privateDir  fs.FileMode = 0o700
)

// MkdirPrivate creates dir and its missing parents with mode 0700, whatever the umask. Directories that exist are
// left as they are: dir may be one the user chose, shared on purpose.
func MkdirPrivate(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := MkdirPrivate(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, privateDir); err != nil {
		if errors.Is(err, fs.ErrExist) { // made meanwhile by another process
			return nil
		}
		return err
	}
	return os.Chmod(dir, privateDir) // the umask may have taken bits off
}

// CreatePrivate makes sure the file path exists with no access for group and others: a missing one is created
// empty with mode 0600, whatever the umask; an existing one is tightened as TightenFile does. Its directory must
// exist. A symbolic link at path is refused, never followed.
func CreatePrivate(path string, logger *slog.Logger) error {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL|noFollow|syscall.O_NONBLOCK, privateFile)
	if err == nil {
		defer f.Close()
		return f.Chmod(privateFile) // the umask may have taken bits off
	}
	if !errors.Is(err, fs.ErrExist) {
		return err
	}
	return tighten(path, logger, false)
}

func isLink(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&fs.ModeSymlink != 0
}

func linkError(path string) error {
	return fmt.Errorf("%s is a symbolic link, not a file agenthost keeps", path)
}

// TightenFile takes group and other permissions off the file path when it has any, with a warning naming the path
// and its old mode. A missing file is not an error, and a symbolic link at path is refused, never followed.
func TightenFile(path string, logger *slog.Logger) error { return tighten(path, logger, true) }

func tighten(path string, logger *slog.Logger, missingOK bool) error {
	// A file with nothing to change is not opened: closing a descriptor of a file drops every POSIX lock the process
	// holds on it, SQLite's among them, and the file may be a database this process already has open (the state
	// file is shared by the store and the durable engine). Another process could then take the WAL index for its
	// own and reset it, or delete the WAL under the writer.
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() && (!permBits || fi.Mode().Perm()&0o077 == 0) {
		return nil
	}
	// O_NONBLOCK: a named pipe put in the file's place must not block the open.
	f, err := os.OpenFile(path, os.O_RDONLY|noFollow|syscall.O_NONBLOCK, 0)
	switch {
	case missingOK && errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil && isLink(path): // ELOOP on Linux and macOS, EMLINK on FreeBSD, EFTYPE on NetBSD
		return linkError(path)
	case err != nil:
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	// Where open follows links (Windows), or the entry was swapped after the open, what was opened is not the
	// entry at path: refused.
	if li, err := os.Lstat(path); err != nil || !os.SameFile(fi, li) {
		if err == nil && li.Mode()&fs.ModeSymlink != 0 {
			return linkError(path)
		}
		return fmt.Errorf("%s changed while it was opened", path)
	}
	switch {
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", path)
	case !permBits || fi.Mode().Perm()&0o077 == 0:
		return nil
	}
	mode := fi.Mode().Perm() &^ 0o077
	if err := f.Chmod(mode); err != nil {
		return err
	}
	if logger != nil {
		logger.Warn("a private file was readable by others: its permissions are tightened", "path", path,
			"mode", fmt.Sprintf("%#o", fi.Mode().Perm()), "now", fmt.Sprintf("%#o", mode))
	}
	return nil
}

// PrepareSQLite makes an SQLite database file private before it is opened: its directory is created 0700 when
// missing, the file 0600, and an existing file or its -wal, -shm and -journal companions are tightened. SQLite
// creates the companions with the mode of the database file, so they are born private too. Files already private are
// not opened (see HoldSQLite for why that matters), and a database the process holds is left alone: it was prepared
// when it was opened.
func PrepareSQLite(path string, logger *slog.Logger) error {
	if heldPath(path) {
		return nil
	}
	if err := MkdirPrivate(filepath.Dir(path)); err != nil {
		return err
	}
	if err := CreatePrivate(path, logger); err != nil {
		return err
	}
	for _, suffix := range sqliteCompanions {
		if err := TightenFile(path+suffix, logger); err != nil {
			return err
		}
	}
	return nil
}
