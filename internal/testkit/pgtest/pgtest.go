// Package pgtest runs a throwaway PostgreSQL cluster for tests: initdb and pg_ctl in a temporary directory, on a
// free loopback port, never a system cluster. Tests that need it fail, and never skip, when the server binaries
// are missing: on Debian they come with the postgresql-15 package (/usr/lib/postgresql/15/bin); AGENTHOST_PG_BIN
// names another directory.
//
// A package starts one cluster in TestMain and gives each test a database of its own:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//	...
//	dsn := pgtest.NewDatabase(t)
package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
)

// Cluster is a running throwaway cluster.
type Cluster struct {
	dir  string
	bin  string
	port int
	cred *syscall.Credential // the postgres user's, when running as root (initdb refuses root)
	dbs  atomic.Int64
}

var (
	current  *Cluster
	startErr error
	once     sync.Once
)

// Main runs the package's tests with a cluster started on first use and stopped at the end.
func Main(m *testing.M) {
	code := m.Run()
	StopStarted()
	os.Exit(code)
}

// StopStarted stops the cluster NewDatabase started, if it did: for a TestMain of its own.
func StopStarted() {
	if current != nil {
		if err := current.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
	}
}

// NewDatabase returns the connection string of a new, empty database on the package's cluster, starting the
// cluster on first use. It fails the test when no cluster can be started.
func NewDatabase(t testing.TB) string {
	t.Helper()
	once.Do(func() { current, startErr = Start() })
	if startErr != nil {
		t.Fatalf("PostgreSQL for tests: %v", startErr)
	}
	dsn, err := current.CreateDatabase(t.Context())
	if err != nil {
		t.Fatalf("PostgreSQL for tests: %v", err)
	}
	return dsn
}

// binDir finds the server binaries.
func binDir() (string, error) {
	if dir := os.Getenv("AGENTHOST_PG_BIN"); dir != "" {
		return dir, nil
	}
	if path, err := exec.LookPath("pg_ctl"); err == nil {
		return filepath.Dir(path), nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(matches) == 0 {
		return "", errors.New("no PostgreSQL server binaries: install Debian's postgresql-15 package " +
			"(/usr/lib/postgresql/15/bin), or set AGENTHOST_PG_BIN to the directory holding initdb and pg_ctl")
	}
	return filepath.Dir(matches[len(matches)-1]), nil
}

// Start initializes and starts a cluster in a new temporary directory.
func Start() (*Cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "agenthost-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root, initdb needs the postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	if err := c.run("initdb", "-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if c.port, err = freePort(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200", c.port, dir)
	if err := c.run("pg_ctl", "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%w\n%s", err, log)
	}
	return c, nil
}

func (c *Cluster) run(name string, args ...string) error {
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.Dir = c.dir
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w\n%s", name, err, out)
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// DSN returns the connection string of database db.
func (c *Cluster) DSN(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// CreateDatabase creates a new database and returns its connection string.
func (c *Cluster) CreateDatabase(ctx context.Context) (string, error) {
	admin, err := sql.Open("pgx", c.DSN("postgres"))
	if err != nil {
		return "", err
	}
	defer admin.Close()
	name := fmt.Sprintf("test_%d", c.dbs.Add(1))
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("creating database %s: %w", name, err)
	}
	return c.DSN(name), nil
}

// Stop stops the cluster at once and removes its directory.
func (c *Cluster) Stop() error {
	err := c.run("pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", "immediate", "-w", "stop")
	return errors.Join(err, os.RemoveAll(c.dir))
}
