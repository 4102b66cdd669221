// Package docsearch is the full-text index behind the doc_search tool: the documents under a set of directories,
// in an SQLite FTS5 table ranked with BM25, kept up to date incrementally by size and modification time.
//
// The database is one file, written through modernc.org/sqlite (pure Go). Searches run while a refresh writes:
// the database is in WAL mode, and a refresh commits in batches, so an interrupted one keeps what it did.
//
// An index file may be shared by several agents with different roots or extensions: each document is kept with the
// root it was found under, and an Index searches, counts, refreshes and removes only the documents of its own roots
// and extensions.
//
// Files are read as the file tools read them: through an os.Root of their root, never through a symbolic link
// put in a file's place, only regular files, and never more than the size cap.
package docsearch

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/agenthost/agenthost/internal/statedir"
)

// schemaVersion is the version of the tables below; an index written by a newer one is refused.
// Version 2 added the documents' roots, version 3 their extensions. An index of an older version is rebuilt: it
// holds nothing the files do not.
const schemaVersion = 3

const schema = `
CREATE TABLE IF NOT EXISTS docs (
	id    INTEGER PRIMARY KEY,
	root  TEXT NOT NULL,
	path  TEXT NOT NULL,
	ext   TEXT NOT NULL, -- extOf(path): agents sharing the file with other extensions tell their documents by it
	size  INTEGER NOT NULL,
	mtime INTEGER NOT NULL,
	title TEXT NOT NULL,
	UNIQUE (root, path)
);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(title, body, tokenize = 'porter unicode61 remove_diacritics 2');
`

// batchSize is how many documents a refresh writes per transaction.
const batchSize = 500

// DefaultExtensions are the file extensions indexed when Options.Extensions is nil.
var DefaultExtensions = []string{".md", ".markdown", ".txt", ".html", ".htm"}

// Options configures an Index.
type Options struct {
	// Path is the database file. Its directory is created (0700) when missing, the file and its -wal and -shm are
	// made 0600 (an existing one readable by others is tightened, with a warning).
	Path string
	// Roots are the directories indexed. The Index searches, counts and removes only the documents found under
	// them: other agents sharing the file keep theirs.
	Roots []string
	// Extensions are the extensions of the files indexed, with their dot, matched without regard to case; nil
	// means DefaultExtensions.
	Extensions []string
	// MaxFileBytes is the size above which a file is skipped, never read in part; 0 means 10 MiB.
	MaxFileBytes int64
	// Logger receives the progress of refreshes; nil discards it.
	Logger *slog.Logger
}

// Index is an open index. Its methods are safe for concurrent use; refreshes run one at a time.
type Index struct {
	db       *sql.DB
	path     string
	roots    []string
	inRoots  string // the SQL list of the roots' placeholders, "(?, ?)"
	rootArgs []any  // the roots, for inRoots
	// ofExts is the SQL condition that a document (d) has one of the indexed extensions, and extArgs its arguments:
	// agents sharing the file with other extensions keep their documents apart by them as by their roots.
	ofExts   string
	extArgs  []any
	exts     map[string]bool
	maxBytes int64
	logger   *slog.Logger
	release  func() // ends the process's hold of the index file (statedir.HoldSQLite)

	refreshing sync.Mutex
}

// Open opens the index at opts.Path, creating it when it does not exist.
func Open(opts *Options) (*Index, error) {
	if opts.Path == "" {
		return nil, errors.New("docsearch: no index path")
	}
	ix := &Index{
		path:     opts.Path,
		exts:     map[string]bool{},
		maxBytes: cmp.Or(opts.MaxFileBytes, 10<<20),
		logger:   cmp.Or(opts.Logger, slog.New(slog.DiscardHandler)),
	}
	for _, r := range opts.Roots {
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, fmt.Errorf("docsearch: root %s: %w", r, err)
		}
		if !slices.Contains(ix.roots, abs) {
			ix.roots = append(ix.roots, abs)
			ix.rootArgs = append(ix.rootArgs, abs)
		}
	}
	ix.inRoots = "(" + strings.TrimSuffix(strings.Repeat("?, ", len(ix.roots)), ", ") + ")"
	exts := opts.Extensions
	if exts == nil {
		exts = DefaultExtensions
	}
	for _, e := range exts {
		ix.exts[strings.ToLower(e)] = true
	}
	for _, e := range slices.Sorted(maps.Keys(ix.exts)) {
		ix.extArgs = append(ix.extArgs, e)
	}
	ix.ofExts = "d.ext IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(ix.extArgs)), ", ") + ")"
	if len(ix.extArgs) == 0 {
		ix.ofExts = "0"
	}
	// The index holds the documents' text: it is made private before SQLite opens it, as the state database is.
	if err := statedir.PrepareSQLite(opts.Path, ix.logger); err != nil {
		return nil, fmt.Errorf("docsearch: %w", err)
	}
	// _txlock=immediate: a transaction takes the write lock when it begins, as the state database's do (see
	// store.SQLiteDSN), so that the migration reads the version under it and a refresh's batch never fails to
	// upgrade a read lock.
	dsn := "file:" + opts.Path + "?_txlock=immediate&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	ix.release = statedir.HoldSQLite(opts.Path) // indexing and the file tools leave the index's files alone
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		ix.release()
		return nil, fmt.Errorf("docsearch: %w", err)
	}
	ix.db = db
	// Agents sharing a new file may open it at once: see statedir.RetryBusy.
	if err := statedir.RetryBusy(context.Background(), ix.migrate); err != nil {
		db.Close()
		ix.release()
		return nil, fmt.Errorf("docsearch: %s: %w", opts.Path, err)
	}
	return ix, nil
}

// migrate brings the file to schemaVersion in one BEGIN IMMEDIATE transaction (the DSN's _txlock): agents sharing
// the file may open it at once, and the version is read under the write lock, so one of them migrates and the others
// find it done, instead of dropping the tables another has migrated and filled.
func (ix *Index) migrate() error {
	tx, err := ix.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`); err != nil {
		return err
	}
	var v string
	err = tx.QueryRow(`SELECT value FROM meta WHERE key = 'schema'`).Scan(&v)
	switch n, _ := strconv.Atoi(v); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return err
	case n > schemaVersion || n < 1:
		return fmt.Errorf("the index has schema version %s, and this agenthost reads version %d: delete the file to rebuild it", v, schemaVersion)
	case n < schemaVersion:
		// The next refresh reads every document again.
		ix.logger.Info("doc_search: the index is rebuilt for this version of agenthost", "path", ix.path, "version", n)
		if _, err := tx.Exec(`DROP TABLE IF EXISTS docs; DROP TABLE IF EXISTS fts`); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(schema); err != nil {
		return err
	}
	if _, err := tx.Exec(`INSERT INTO meta (key, value) VALUES ('schema', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
		strconv.Itoa(schemaVersion)); err != nil {
		return err
	}
	return tx.Commit()
}

// Close closes the database.
func (ix *Index) Close() error {
	err := ix.db.Close()
	ix.release()
	return err
}

// Progress is the state of a refresh: Scanned of Total files looked at, Path the last one.
type Progress struct {
	Scanned, Total int
	Path           string
}

// Stats is what a refresh did.
type Stats struct {
	// Scanned files were found under the roots with an indexed extension; Indexed of them were read because they
	// were new or changed; Skipped were too large, binary or unreadable. Removed documents were gone.
	Scanned, Indexed, Removed, Skipped int
	Duration                           time.Duration
}

// file is a document found under the roots: its root, its path inside the root (slash-separated), and its
// absolute path.
type file struct {
	root      string
	rel, path string
	size      int64
	mtime     int64
}

// extOf is a file's extension as the index matches it against Options.Extensions, and keeps it.
func extOf(path string) string { return strings.ToLower(filepath.Ext(path)) }

// key identifies a document in the index: the same file found under two roots is two documents.
func (f file) key() string { return f.root + "\x00" + f.path }

// stored is a document as the index has it.
type stored struct {
	id          int64
	size, mtime int64
}

// Refresh brings the index up to date with the roots: new and changed files (by size and modification time) are
// read, vanished ones removed. progress, when not nil, is called after each file. A cancelled refresh keeps the
// batches it committed.
func (ix *Index) Refresh(ctx context.Context, progress func(Progress)) (Stats, error) {
	ix.refreshing.Lock()
	defer ix.refreshing.Unlock()
	start := time.Now()
	var st Stats
	roots := make(map[string]*os.Root, len(ix.roots))
	defer func() {
		for _, r := range roots {
			r.Close()
		}
	}()
	for _, dir := range ix.roots {
		r, err := os.OpenRoot(dir)
		if err != nil {
			return st, fmt.Errorf("docsearch: %w", err)
		}
		roots[dir] = r
	}
	files, err := ix.scan(ctx, roots)
	if err != nil {
		return st, err
	}
	st.Scanned = len(files)
	known, err := ix.stored(ctx)
	if err != nil {
		return st, err
	}
	w := &writer{ix: ix}
	defer w.rollback()
	for i, f := range files {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		old, ok := known[f.key()]
		delete(known, f.key())
		if !ok || old.size != f.size || old.mtime != f.mtime {
			doc, err := ix.read(roots[f.root], &f)
			switch {
			case err != nil:
				st.Skipped++
				ix.logger.Debug("doc_search: skipped", "path", f.path, "why", err)
				err = nil
				if ok {
					err = w.remove(ctx, old.id)
				}
			case ok:
				st.Indexed++
				err = w.replace(ctx, old.id, f, doc)
			default:
				st.Indexed++
				err = w.add(ctx, f, doc)
			}
			if err != nil {
				return st, err
			}
		}
		if progress != nil {
			progress(Progress{Scanned: i + 1, Total: len(files), Path: f.path})
		}
	}
	for _, old := range known {
		if err := w.remove(ctx, old.id); err != nil {
			return st, err
		}
		st.Removed++
	}
	if err := w.commit(); err != nil {
		return st, err
	}
	st.Duration = time.Since(start)
	return st, nil
}

// scan lists the files under the roots with an indexed extension, in path order (then root order, when roots
// overlap). Symbolic links are not followed, hidden directories are skipped, and a root that cannot be read is an
// error.
func (ix *Index) scan(ctx context.Context, roots map[string]*os.Root) ([]file, error) {
	var files []file
	for _, root := range ix.roots {
		err := fs.WalkDir(roots[root].FS(), ".", func(rel string, d fs.DirEntry, err error) error {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return ctxErr
			}
			p := filepath.Join(root, filepath.FromSlash(rel))
			switch {
			case err != nil && rel == ".":
				return err
			case err != nil:
				ix.logger.Debug("doc_search: skipped", "path", p, "why", err)
				return nil
			case d.IsDir():
				if rel != "." && strings.HasPrefix(d.Name(), ".") {
					return fs.SkipDir
				}
				return nil
			case !d.Type().IsRegular() || !ix.exts[extOf(rel)]:
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return nil
			}
			files = append(files, file{root: root, rel: rel, path: p, size: fi.Size(), mtime: fi.ModTime().UnixNano()})
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("docsearch: %s: %w", root, err)
		}
	}
	slices.SortStableFunc(files, func(a, b file) int { return strings.Compare(a.path, b.path) })
	return files, nil
}

// stored returns the documents of the roots in the index, by key.
func (ix *Index) stored(ctx context.Context) (map[string]stored, error) {
	rows, err := ix.db.QueryContext(ctx, `SELECT id, root, path, size, mtime FROM docs d WHERE root IN `+ix.inRoots+` AND `+ix.ofExts,
		slices.Concat(ix.rootArgs, ix.extArgs)...)
	if err != nil {
		return nil, fmt.Errorf("docsearch: %w", err)
	}
	defer rows.Close()
	m := map[string]stored{}
	for rows.Next() {
		var s stored
		var f file
		if err := rows.Scan(&s.id, &f.root, &f.path, &s.size, &s.mtime); err != nil {
			return nil, fmt.Errorf("docsearch: %w", err)
		}
		m[f.key()] = s
	}
	return m, rows.Err()
}

// testHookBeforeRead, when set, runs between the scan that found a file and its read.
var testHookBeforeRead func(path string)

// errHeld skips an SQLite file the process has open (the state database, an index): opening it and closing the
// descriptor would drop the process's locks on it (see statedir.HoldSQLite).
var errHeld = errors.New("an SQLite database agenthost has open")

// read reads and extracts the file f of root, setting its size and time to those of what was read. The file may
// have changed since the scan found it. It is opened through root, so nothing outside the root is opened (os.Root
// refuses a link that leads out, and follows one that stays inside: O_NOFOLLOW would change neither), and without
// blocking (a named pipe). What was opened is then refused unless it is the regular file at f.rel now: not a
// symbolic link's target, a named pipe or a device. Nothing past the size cap is read.
func (ix *Index) read(root *os.Root, f *file) (document, error) {
	if f.size > ix.maxBytes {
		return document{}, fmt.Errorf("%d bytes, over the %d-byte limit", f.size, ix.maxBytes)
	}
	if testHookBeforeRead != nil {
		testHookBeforeRead(f.path)
	}
	if li, err := root.Lstat(f.rel); err == nil && statedir.HeldSQLite(li) {
		return document{}, errHeld
	}
	h, err := root.OpenFile(f.rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return document{}, err
	}
	defer h.Close()
	fi, err := h.Stat()
	if err != nil {
		return document{}, err
	}
	if !fi.Mode().IsRegular() {
		return document{}, errors.New("not a regular file")
	}
	// The entry at f.rel must be the file opened, not a link to it.
	if li, err := root.Lstat(f.rel); err != nil || !os.SameFile(fi, li) {
		return document{}, errors.New("replaced by a symbolic link or another file while it was read")
	}
	if fi.Size() > ix.maxBytes {
		return document{}, fmt.Errorf("%d bytes, over the %d-byte limit", fi.Size(), ix.maxBytes)
	}
	data, err := io.ReadAll(io.LimitReader(h, ix.maxBytes+1)) // it may grow while it is read
	if err != nil {
		return document{}, err
	}
	if int64(len(data)) > ix.maxBytes {
		return document{}, fmt.Errorf("over the %d-byte limit", ix.maxBytes)
	}
	f.size, f.mtime = fi.Size(), fi.ModTime().UnixNano()
	return extract(f.path, data)
}

// writer writes a refresh's changes in transactions of batchSize documents.
type writer struct {
	ix *Index
	tx *sql.Tx
	n  int
}

func (w *writer) begin(ctx context.Context) (*sql.Tx, error) {
	if w.tx == nil {
		tx, err := w.ix.db.BeginTx(ctx, nil)
		if err != nil {
			return nil, fmt.Errorf("docsearch: %w", err)
		}
		w.tx = tx
	}
	return w.tx, nil
}

// done counts a change, committing the batch when it is full.
func (w *writer) done(err error) error {
	if err != nil {
		return fmt.Errorf("docsearch: %w", err)
	}
	if w.n++; w.n%batchSize == 0 {
		return w.commit()
	}
	return nil
}

func (w *writer) commit() error {
	if w.tx == nil {
		return nil
	}
	err := w.tx.Commit()
	w.tx = nil
	if err != nil {
		return fmt.Errorf("docsearch: %w", err)
	}
	return nil
}

func (w *writer) rollback() {
	if w.tx != nil {
		w.tx.Rollback()
		w.tx = nil
	}
}

func (w *writer) add(ctx context.Context, f file, doc document) error {
	tx, err := w.begin(ctx)
	if err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO docs (root, path, ext, size, mtime, title) VALUES (?, ?, ?, ?, ?, ?)`, f.root, f.path, extOf(f.path), f.size, f.mtime, doc.title)
	if err != nil {
		return w.done(err)
	}
	id, err := res.LastInsertId()
	if err == nil {
		_, err = tx.ExecContext(ctx, `INSERT INTO fts (rowid, title, body) VALUES (?, ?, ?)`, id, doc.title, doc.body)
	}
	return w.done(err)
}

func (w *writer) replace(ctx context.Context, id int64, f file, doc document) error {
	tx, err := w.begin(ctx)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `UPDATE docs SET size = ?, mtime = ?, title = ? WHERE id = ?`, f.size, f.mtime, doc.title, id)
	if err == nil {
		_, err = tx.ExecContext(ctx, `DELETE FROM fts WHERE rowid = ?`, id)
	}
	if err == nil {
		_, err = tx.ExecContext(ctx, `INSERT INTO fts (rowid, title, body) VALUES (?, ?, ?)`, id, doc.title, doc.body)
	}
	return w.done(err)
}

func (w *writer) remove(ctx context.Context, id int64) error {
	tx, err := w.begin(ctx)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `DELETE FROM docs WHERE id = ?`, id)
	if err == nil {
		_, err = tx.ExecContext(ctx, `DELETE FROM fts WHERE rowid = ?`, id)
	}
	return w.done(err)
}

// Count returns the number of files of the roots indexed.
func (ix *Index) Count(ctx context.Context) (int, error) {
	var n int
	if err := ix.db.QueryRowContext(ctx, `SELECT count(DISTINCT path) FROM docs d WHERE root IN `+ix.inRoots+` AND `+ix.ofExts,
		slices.Concat(ix.rootArgs, ix.extArgs)...).Scan(&n); err != nil {
		return 0, fmt.Errorf("docsearch: %w", err)
	}
	return n, nil
}

// Hit is a document found by Search.
type Hit struct {
	// Path is the file's absolute path.
	Path  string
	Title string
	// Snippet is the text around the best match, with "…" where it was cut.
	Snippet string
	// Score is the BM25 rank: lower is better.
	Score float64
}

// ErrNoTerms is the error of a query with nothing to search for.
var ErrNoTerms = errors.New("the query has no words to search for")

// Search returns the limit best documents of the roots for query, best first. The query is words, not FTS5
// syntax: documents with all of them are found, or, when none has all, documents with any of them. A title match
// counts ten times a match in the text.
func (ix *Index) Search(ctx context.Context, query string, limit int) ([]Hit, error) {
	terms := strings.FieldsFunc(strings.ToLower(query), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if len(terms) == 0 {
		return nil, ErrNoTerms
	}
	slices.Sort(terms)
	terms = slices.Compact(terms)
	for i, t := range terms {
		terms[i] = `"` + t + `"` // a quoted string is a term, whatever its letters: "near", "or", "and" included
	}
	hits, err := ix.match(ctx, strings.Join(terms, " "), limit)
	if err == nil && len(hits) == 0 && len(terms) > 1 {
		hits, err = ix.match(ctx, strings.Join(terms, " OR "), limit)
	}
	return hits, err
}

func (ix *Index) match(ctx context.Context, expr string, limit int) ([]Hit, error) {
	// A file under two overlapping roots is two documents: as many rows are asked for as could be one file's.
	args := slices.Concat([]any{expr}, ix.rootArgs, ix.extArgs, []any{limit * len(ix.roots)})
	rows, err := ix.db.QueryContext(ctx, `
		SELECT d.path, d.title, snippet(fts, 1, '', '', '…', 32), bm25(fts, 10.0, 1.0) AS score
		FROM fts JOIN docs d ON d.id = fts.rowid
		WHERE fts MATCH ? AND d.root IN `+ix.inRoots+` AND `+ix.ofExts+`
		ORDER BY score LIMIT ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("docsearch: %w", err)
	}
	defer rows.Close()
	var hits []Hit
	for rows.Next() {
		var h Hit
		if err := rows.Scan(&h.Path, &h.Title, &h.Snippet, &h.Score); err != nil {
			return nil, fmt.Errorf("docsearch: %w", err)
		}
		h.Snippet = strings.Join(strings.Fields(h.Snippet), " ")
		if len(hits) < limit && !slices.ContainsFunc(hits, func(o Hit) bool { return o.Path == h.Path }) {
			hits = append(hits, h)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("docsearch: %w", err)
	}
	return hits, nil
}
