// Package docsearch is the full-text index behind the doc_search tool: the documents under a set of directories,
// in an SQLite FTS5 table ranked with BM25, kept up to date incrementally by size and modification time.
//
// The database is one file, written through modernc.org/sqlite (pure Go). Searches run while a refresh writes:
// the database is in WAL mode, and a refresh commits in batches, so an interrupted one keeps what it did.
package docsearch

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/agenthost/agenthost/internal/statedir"
)

// schemaVersion is the version of the tables below; an index written by a newer one is refused.
const schemaVersion = 1

const schema = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS docs (
	id    INTEGER PRIMARY KEY,
	path  TEXT NOT NULL UNIQUE,
	size  INTEGER NOT NULL,
	mtime INTEGER NOT NULL,
	title TEXT NOT NULL
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
	// Roots are the directories indexed.
	Roots []string
	// Extensions are the extensions of the files indexed, with their dot, matched without regard to case; nil
	// means DefaultExtensions.
	Extensions []string
	// MaxFileBytes is the size above which a file is skipped; 0 means 10 MiB.
	MaxFileBytes int64
	// Logger receives the progress of refreshes; nil discards it.
	Logger *slog.Logger
}

// Index is an open index. Its methods are safe for concurrent use; refreshes run one at a time.
type Index struct {
	db       *sql.DB
	path     string
	roots    []string
	exts     map[string]bool
	maxBytes int64
	logger   *slog.Logger

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
		ix.roots = append(ix.roots, abs)
	}
	exts := opts.Extensions
	if exts == nil {
		exts = DefaultExtensions
	}
	for _, e := range exts {
		ix.exts[strings.ToLower(e)] = true
	}
	// The index holds the documents' text: it is made private before SQLite opens it, as the state database is.
	if err := statedir.PrepareSQLite(opts.Path, ix.logger); err != nil {
		return nil, fmt.Errorf("docsearch: %w", err)
	}
	dsn := "file:" + opts.Path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("docsearch: %w", err)
	}
	ix.db = db
	if err := ix.migrate(); err != nil {
		db.Close()
		return nil, fmt.Errorf("docsearch: %s: %w", opts.Path, err)
	}
	return ix, nil
}

func (ix *Index) migrate() error {
	if _, err := ix.db.Exec(schema); err != nil {
		return err
	}
	var v string
	err := ix.db.QueryRow(`SELECT value FROM meta WHERE key = 'schema'`).Scan(&v)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		_, err = ix.db.Exec(`INSERT INTO meta (key, value) VALUES ('schema', ?)`, strconv.Itoa(schemaVersion))
		return err
	case err != nil:
		return err
	}
	if n, _ := strconv.Atoi(v); n != schemaVersion {
		return fmt.Errorf("the index has schema version %s, and this agenthost reads version %d: delete the file to rebuild it", v, schemaVersion)
	}
	return nil
}

// Close closes the database.
func (ix *Index) Close() error { return ix.db.Close() }

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

// file is a document found under the roots.
type file struct {
	path  string
	size  int64
	mtime int64
}

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
	files, err := ix.scan(ctx)
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
		old, ok := known[f.path]
		delete(known, f.path)
		if !ok || old.size != f.size || old.mtime != f.mtime {
			doc, err := ix.read(f)
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

// scan lists the files under the roots with an indexed extension, in path order. Symbolic links are not
// followed, hidden directories are skipped, and a root that cannot be read is an error.
func (ix *Index) scan(ctx context.Context) ([]file, error) {
	var files []file
	for _, root := range ix.roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return ctxErr
			}
			switch {
			case err != nil && p == root:
				return err
			case err != nil:
				ix.logger.Debug("doc_search: skipped", "path", p, "why", err)
				return nil
			case d.IsDir():
				if p != root && strings.HasPrefix(d.Name(), ".") {
					return filepath.SkipDir
				}
				return nil
			case !d.Type().IsRegular() || !ix.exts[strings.ToLower(filepath.Ext(p))]:
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return nil
			}
			files = append(files, file{path: p, size: fi.Size(), mtime: fi.ModTime().UnixNano()})
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("docsearch: %w", err)
		}
	}
	slices.SortFunc(files, func(a, b file) int { return strings.Compare(a.path, b.path) })
	return slices.CompactFunc(files, func(a, b file) bool { return a.path == b.path }), nil
}

func (ix *Index) stored(ctx context.Context) (map[string]stored, error) {
	rows, err := ix.db.QueryContext(ctx, `SELECT id, path, size, mtime FROM docs`)
	if err != nil {
		return nil, fmt.Errorf("docsearch: %w", err)
	}
	defer rows.Close()
	m := map[string]stored{}
	for rows.Next() {
		var s stored
		var p string
		if err := rows.Scan(&s.id, &p, &s.size, &s.mtime); err != nil {
			return nil, fmt.Errorf("docsearch: %w", err)
		}
		m[p] = s
	}
	return m, rows.Err()
}

// read reads and extracts one file.
func (ix *Index) read(f file) (document, error) {
	if f.size > ix.maxBytes {
		return document{}, fmt.Errorf("%d bytes, over the %d-byte limit", f.size, ix.maxBytes)
	}
	data, err := os.ReadFile(f.path)
	if err != nil {
		return document{}, err
	}
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
	res, err := tx.ExecContext(ctx, `INSERT INTO docs (path, size, mtime, title) VALUES (?, ?, ?, ?)`, f.path, f.size, f.mtime, doc.title)
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

// Count returns the number of documents indexed.
func (ix *Index) Count(ctx context.Context) (int, error) {
	var n int
	if err := ix.db.QueryRowContext(ctx, `SELECT count(*) FROM docs`).Scan(&n); err != nil {
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

// Search returns the limit best documents for query, best first. The query is words, not FTS5 syntax: documents
// with all of them are found, or, when none has all, documents with any of them. A title match counts ten times
// a match in the text.
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
	rows, err := ix.db.QueryContext(ctx, `
		SELECT d.path, d.title, snippet(fts, 1, '', '', '…', 32), bm25(fts, 10.0, 1.0) AS score
		FROM fts JOIN docs d ON d.id = fts.rowid
		WHERE fts MATCH ?
		ORDER BY score LIMIT ?`, expr, limit)
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
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("docsearch: %w", err)
	}
	return hits, nil
}
