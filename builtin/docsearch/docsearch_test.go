package docsearch

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func write(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func open(t testing.TB, opts Options) *Index {
	t.Helper()
	if opts.Path == "" {
		opts.Path = filepath.Join(t.TempDir(), "state", "docs.db")
	}
	ix, err := Open(&opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

func refresh(t testing.TB, ix *Index) Stats {
	t.Helper()
	st, err := ix.Refresh(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func paths(hits []Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, filepath.Base(h.Path))
	}
	return out
}

func search(t *testing.T, ix *Index, q string) []Hit {
	t.Helper()
	hits, err := ix.Search(t.Context(), q, 10)
	if err != nil {
		t.Fatalf("Search(%q): %v", q, err)
	}
	return hits
}

func TestIndexRanking(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "once.md", "# Travel\n\nThe expense report is due monthly. Other words fill this text about trains and hotels.\n")
	write(t, dir, "title.md", "# Expense reports\n\nHow to file an expense report: attach receipts, then submit the expense report.\n")
	write(t, dir, "none.md", "# Holidays\n\nNothing about money here.\n")
	ix := open(t, Options{Roots: []string{dir}})
	if st := refresh(t, ix); st.Scanned != 3 || st.Indexed != 3 || st.Removed != 0 || st.Skipped != 0 {
		t.Errorf("stats %+v", st)
	}

	hits := search(t, ix, "expense report")
	if got := strings.Join(paths(hits), ","); got != "title.md,once.md" {
		t.Errorf("ranking %s, want title.md,once.md", got)
	}
	if hits[0].Title != "Expense reports" || !strings.Contains(hits[0].Snippet, "expense report") || hits[0].Score >= hits[1].Score {
		t.Errorf("best hit %+v", hits[0])
	}
	// Stemming: "reporting" finds "reports".
	if got := paths(search(t, ix, "reporting")); len(got) != 2 {
		t.Errorf("reporting found %v", got)
	}
	// No document has every word: any word will do.
	if got := strings.Join(paths(search(t, ix, "holidays receipts")), ","); got != "none.md,title.md" && got != "title.md,none.md" {
		t.Errorf("OR fallback found %s", got)
	}
	if got := search(t, ix, "zeppelin"); len(got) != 0 {
		t.Errorf("zeppelin found %v", got)
	}
}

func TestIndexHostileQueries(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.md", "# Near or far\n\nThe NEAR operator and the word or, and AND.\n")
	ix := open(t, Options{Roots: []string{dir}})
	refresh(t, ix)
	for _, q := range []string{`foo"`, `NEAR(`, `near`, `*`, `a OR`, `title:near`, `"unclosed`, `-far`, `^near`, `(near) AND (far`, `don't`} {
		hits, err := ix.Search(t.Context(), q, 5)
		if errors.Is(err, ErrNoTerms) {
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", q, err)
		}
		if (q == "near" || q == "NEAR(" || q == "a OR") && len(hits) != 1 {
			t.Errorf("%q found %d documents", q, len(hits))
		}
	}
	for _, q := range []string{"", "  ", `*`, `"()"`} {
		if _, err := ix.Search(t.Context(), q, 5); !errors.Is(err, ErrNoTerms) {
			t.Errorf("%q: err = %v, want ErrNoTerms", q, err)
		}
	}
}

func TestIndexIncremental(t *testing.T) {
	dir := t.TempDir()
	a := write(t, dir, "a.md", "# Alpha\n\nThe first apple.\n")
	b := write(t, dir, "sub/b.txt", "Bananas are yellow.\n")
	write(t, dir, "c.md", "# Cherry\n\nRed cherries.\n")
	ix := open(t, Options{Roots: []string{dir}})
	refresh(t, ix)

	// Nothing changed: nothing is read.
	if st := refresh(t, ix); st.Indexed != 0 || st.Removed != 0 || st.Scanned != 3 {
		t.Errorf("unchanged refresh %+v", st)
	}

	// An edit (the size changes), a deletion and an addition.
	write(t, dir, "a.md", "# Alpha\n\nNow about apricots only.\n")
	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "d.md", "# Date\n\nSweet dates and bananas.\n")
	if st := refresh(t, ix); st.Indexed != 2 || st.Removed != 1 || st.Scanned != 3 {
		t.Errorf("refresh after changes %+v", st)
	}
	if got := paths(search(t, ix, "apple")); len(got) != 0 {
		t.Errorf("the old text of a.md is still found: %v", got)
	}
	if got := paths(search(t, ix, "apricots")); len(got) != 1 || got[0] != "a.md" {
		t.Errorf("the new text of a.md: %v", got)
	}
	if got := paths(search(t, ix, "bananas")); len(got) != 1 || got[0] != "d.md" {
		t.Errorf("bananas: %v (b.txt was deleted, d.md added)", got)
	}

	// Same size, new modification time: read again.
	write(t, dir, "a.md", "# Alpha\n\nNow about avocados only.\n")
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(a, later, later); err != nil {
		t.Fatal(err)
	}
	if st := refresh(t, ix); st.Indexed != 1 {
		t.Errorf("refresh after a same-size edit %+v", st)
	}
	if got := paths(search(t, ix, "avocados")); len(got) != 1 {
		t.Errorf("avocados: %v", got)
	}
	if n, err := ix.Count(t.Context()); err != nil || n != 3 {
		t.Errorf("Count = %d, %v", n, err)
	}

	// The index survives a reopen. The documents of a root that is not configured are neither counted, found nor
	// removed: they may be another agent's.
	path := ix.path
	ix.Close()
	ix2 := open(t, Options{Path: path, Roots: []string{filepath.Join(dir, "sub")}})
	if n, _ := ix2.Count(t.Context()); n != 0 {
		t.Errorf("Count over other roots = %d", n)
	}
	if st := refresh(t, ix2); st.Removed != 0 || st.Scanned != 0 {
		t.Errorf("refresh over other roots %+v", st)
	}
	if got := paths(search(t, ix2, "avocados")); len(got) != 0 {
		t.Errorf("found over other roots: %v", got)
	}
	ix2.Close()
	ix3 := open(t, Options{Path: path, Roots: []string{dir}})
	if n, _ := ix3.Count(t.Context()); n != 3 {
		t.Errorf("reopened Count = %d", n)
	}
	if st := refresh(t, ix3); st.Indexed != 0 || st.Removed != 0 {
		t.Errorf("refresh after a reopen %+v", st)
	}
}

func TestIndexFiles(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "page.html", `<html><head><title>Onboarding guide</title><script>var secretToken = 1;</script></head>
		<body><nav>Menu links</nav><h1>Welcome</h1><p>New hires get a laptop.</p><footer>Copyright</footer></body></html>`)
	write(t, dir, "h1.htm", `<body><h1>Only a heading</h1><p>Parking permits.</p></body>`)
	write(t, dir, "front.md", "---\ntitle: \"Security policy\"\nowner: it\n---\n# Not this\n\nPasswords rotate.\n")
	write(t, dir, "plain.txt", "No heading, about kittens.\n")
	write(t, dir, "big.md", strings.Repeat("large ", 500))
	write(t, dir, "bin.md", "binary\x00kittens")
	write(t, dir, "latin1.txt", "kittens caf\xe9")
	write(t, dir, "code.go", "package kittens")
	write(t, dir, ".hidden/secret.md", "kittens")
	if err := os.Symlink(filepath.Join(dir, "plain.txt"), filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	ix := open(t, Options{Roots: []string{dir}, MaxFileBytes: 1000})
	st := refresh(t, ix)
	if st.Scanned != 7 || st.Indexed != 4 || st.Skipped != 3 {
		t.Errorf("stats %+v, want 7 scanned (no .go, no hidden dir, no symlink), 4 indexed, 3 skipped", st)
	}
	tests := []struct{ query, file, title string }{
		{"laptop", "page.html", "Onboarding guide"},
		{"parking", "h1.htm", "Only a heading"},
		{"passwords", "front.md", "Security policy"},
		{"kittens", "plain.txt", "plain"},
	}
	for _, tt := range tests {
		hits := search(t, ix, tt.query)
		if len(hits) != 1 || filepath.Base(hits[0].Path) != tt.file || hits[0].Title != tt.title {
			t.Errorf("%s: %+v, want %s titled %q", tt.query, hits, tt.file, tt.title)
		}
	}
	for _, q := range []string{"secretToken", "menu", "copyright", "large"} {
		if hits := search(t, ix, q); len(hits) != 0 {
			t.Errorf("%s found %v", q, paths(hits))
		}
	}

	// .go files are indexed when listed.
	ix2 := open(t, Options{Roots: []string{dir}, Extensions: []string{".GO"}})
	refresh(t, ix2)
	if hits := search(t, ix2, "kittens"); len(hits) != 1 || filepath.Base(hits[0].Path) != "code.go" {
		t.Errorf("extensions: %v", paths(hits))
	}
}

func TestIndexOpenErrors(t *testing.T) {
	if _, err := Open(&Options{}); err == nil || err.Error() != "docsearch: no index path" {
		t.Errorf("no path: %v", err)
	}
	path := filepath.Join(t.TempDir(), "docs.db")
	ix := open(t, Options{Path: path})
	ix.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE meta SET value = '99' WHERE key = 'schema'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Open(&Options{Path: path}); err == nil || !strings.Contains(err.Error(), "the index has schema version 99, and this agenthost reads version "+strconv.Itoa(schemaVersion)) {
		t.Errorf("newer schema: %v", err)
	}

	ix = open(t, Options{Roots: []string{filepath.Join(t.TempDir(), "missing")}})
	if _, err := ix.Refresh(t.Context(), nil); err == nil || !strings.Contains(err.Error(), "no such file or directory") {
		t.Errorf("missing root: %v", err)
	}
}

func TestIndexCancel(t *testing.T) {
	dir := t.TempDir()
	for i := range 1200 {
		write(t, dir, filepath.Join("d", strings.Repeat("x", 3)+string(rune('a'+i%26)), "f"+strconv.Itoa(i)+".md"), "# Doc\n\nwords "+strconv.Itoa(i))
	}
	ix := open(t, Options{Roots: []string{dir}})
	ctx, cancel := context.WithCancel(t.Context())
	var seen int
	_, err := ix.Refresh(ctx, func(p Progress) {
		if seen = p.Scanned; p.Scanned == 700 {
			cancel()
		}
		if p.Total != 1200 {
			t.Errorf("progress total %d", p.Total)
		}
	})
	if !errors.Is(err, context.Canceled) || seen != 700 {
		t.Fatalf("err %v after %d files", err, seen)
	}
	// The first full batch was committed; the rest is done by the next refresh.
	if n, _ := ix.Count(t.Context()); n != batchSize {
		t.Errorf("after the interrupted refresh: %d documents, want %d", n, batchSize)
	}
	if st := refresh(t, ix); st.Indexed != 1200-batchSize {
		t.Errorf("the next refresh %+v", st)
	}
}

// setHook runs hook between the scan that found a file and its read, for the test.
func setHook(t *testing.T, hook func(path string)) {
	testHookBeforeRead = hook
	t.Cleanup(func() { testHookBeforeRead = nil })
}

// Agents sharing an index file keep their documents apart: each refresh reads, finds, counts and removes the
// documents of its own roots only.
func TestIndexSharedByAgents(t *testing.T) {
	kb1, kb2 := t.TempDir(), t.TempDir()
	write(t, kb1, "memo.md", "# Memo one\n\nthe budget of agent one")
	write(t, kb2, "memo.md", "# Memo two\n\nthe budget of agent two")
	write(t, kb2, "other.md", "# Other\n\nmore budget")
	path := filepath.Join(t.TempDir(), "shared.db")
	one := open(t, Options{Path: path, Roots: []string{kb1}})
	two := open(t, Options{Path: path, Roots: []string{kb2}})
	for range 2 { // refreshed in turn, neither removes the other's
		if st := refresh(t, one); st.Removed != 0 {
			t.Errorf("one removed %d", st.Removed)
		}
		if st := refresh(t, two); st.Removed != 0 {
			t.Errorf("two removed %d", st.Removed)
		}
	}
	for _, tt := range []struct {
		ix    *Index
		root  string
		count int
	}{{one, kb1, 1}, {two, kb2, 2}} {
		hits := search(t, tt.ix, "budget")
		for _, h := range hits {
			if !strings.HasPrefix(h.Path, tt.root+string(filepath.Separator)) {
				t.Errorf("%s found %s", tt.root, h.Path)
			}
		}
		if len(hits) != tt.count {
			t.Errorf("%s: %d hits, want %d", tt.root, len(hits), tt.count)
		}
		if n, err := tt.ix.Count(t.Context()); err != nil || n != tt.count {
			t.Errorf("%s: Count %d, %v", tt.root, n, err)
		}
	}

	// Overlapping roots: a file under both is found once.
	write(t, kb2, "sub/deep.md", "# Deep\n\nbudget below")
	both := open(t, Options{Path: path, Roots: []string{kb1, kb2, filepath.Join(kb2, "sub")}})
	if st := refresh(t, both); st.Scanned != 5 {
		t.Errorf("both: %+v, want 5 scanned, deep.md twice", st)
	}
	if hits := search(t, both, "budget"); len(hits) != 4 {
		t.Errorf("both: %v, want 4 files", paths(hits))
	}
	if n, err := both.Count(t.Context()); err != nil || n != 4 {
		t.Errorf("both: Count %d, %v", n, err)
	}
}

// Agents sharing an index file and a root with other extensions keep their documents apart by them too: neither
// removes what only the other indexes, and each finds and counts its own kinds of files only.
func TestIndexSharedWithOtherExtensions(t *testing.T) {
	kb := t.TempDir()
	write(t, kb, "notes.md", "# Notes\n\nthe budget in markdown")
	write(t, kb, "plan.txt", "the budget in text")
	write(t, kb, "main.go", "package budget")
	path := filepath.Join(t.TempDir(), "shared.db")
	docs := open(t, Options{Path: path, Roots: []string{kb}})                                     // .md, .txt, ...
	code := open(t, Options{Path: path, Roots: []string{kb}, Extensions: []string{".go", ".MD"}}) // .go and .md
	for range 2 {                                                                                 // refreshed in turn, neither removes the other's
		if st := refresh(t, docs); st.Removed != 0 {
			t.Errorf("docs removed %d", st.Removed)
		}
		if st := refresh(t, code); st.Removed != 0 {
			t.Errorf("code removed %d", st.Removed)
		}
	}
	for _, tt := range []struct {
		name  string
		ix    *Index
		files []string
	}{{"docs", docs, []string{"notes.md", "plan.txt"}}, {"code", code, []string{"main.go", "notes.md"}}} {
		got := paths(search(t, tt.ix, "budget"))
		slices.Sort(got)
		if !slices.Equal(got, tt.files) {
			t.Errorf("%s finds %q, want %q", tt.name, got, tt.files)
		}
		if n, err := tt.ix.Count(t.Context()); err != nil || n != len(tt.files) {
			t.Errorf("%s: Count %d, %v; want %d", tt.name, n, err, len(tt.files))
		}
	}
	// A file of an extension only the other indexes, gone, is removed by the other's refresh.
	if err := os.Remove(filepath.Join(kb, "main.go")); err != nil {
		t.Fatal(err)
	}
	if st := refresh(t, docs); st.Removed != 0 {
		t.Errorf("docs removed %d of code's", st.Removed)
	}
	if st := refresh(t, code); st.Removed != 1 {
		t.Errorf("code removed %d, want main.go", st.Removed)
	}
}

// A document's extension is kept as the scan matched it: a non-ASCII one (which SQLite's lower() would not fold)
// is found, counted and refreshed again without error, and an extension of two dots, which matches no file, makes
// an agent sharing the index neither index nor remove another's file that ends with it.
func TestIndexExtensionsKeptAsScanned(t *testing.T) {
	kb := t.TempDir()
	write(t, kb, "notes.MÄ", "the budget with an umlaut")
	write(t, kb, "a.tar.gz", "the budget in a tarball name")
	path := filepath.Join(t.TempDir(), "shared.db")
	umlaut := open(t, Options{Path: path, Roots: []string{kb}, Extensions: []string{".mä", ".gz"}})
	dotted := open(t, Options{Path: path, Roots: []string{kb}, Extensions: []string{".tar.gz"}})
	for range 2 {
		if st := refresh(t, umlaut); st.Removed != 0 {
			t.Errorf("umlaut: %+v", st)
		}
		if st := refresh(t, dotted); st.Removed != 0 || st.Indexed != 0 {
			t.Errorf("dotted: %+v; want nothing indexed or removed", st)
		}
	}
	got := paths(search(t, umlaut, "budget"))
	slices.Sort(got)
	if want := []string{"a.tar.gz", "notes.MÄ"}; !slices.Equal(got, want) {
		t.Errorf("umlaut finds %q, want %q", got, want)
	}
	if n, err := umlaut.Count(t.Context()); err != nil || n != 2 {
		t.Errorf("umlaut: Count %d, %v; want 2", n, err)
	}
	if n, err := dotted.Count(t.Context()); err != nil || n != 0 {
		t.Errorf("dotted: Count %d, %v; want 0", n, err)
	}
}

// An index of the first version, whose documents have no root, is rebuilt.
func TestIndexOldSchemaRebuilt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "docs.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
		INSERT INTO meta VALUES ('schema', '1');
		CREATE TABLE docs (id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, size INTEGER NOT NULL, mtime INTEGER NOT NULL, title TEXT NOT NULL);
		INSERT INTO docs VALUES (1, '/elsewhere/x.md', 1, 1, 'x');
		CREATE VIRTUAL TABLE fts USING fts5(title, body);`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write(t, dir, "a.md", "# A\n\nwombat")
	ix := open(t, Options{Path: path, Roots: []string{dir}})
	if st := refresh(t, ix); st.Indexed != 1 {
		t.Errorf("refresh %+v", st)
	}
	if got := paths(search(t, ix, "wombat")); len(got) != 1 {
		t.Errorf("wombat: %v", got)
	}
	var n int
	if err := ix.db.QueryRow(`SELECT count(*) FROM docs`).Scan(&n); err != nil || n != 1 {
		t.Errorf("%d documents, %v: the old ones are kept", n, err)
	}
}

// Agents sharing an index of the first version may start together: the file is migrated once, and no opener drops
// the tables another already migrated and filled.
func TestIndexOldSchemaMigratedOnceByConcurrentOpeners(t *testing.T) {
	path := filepath.Join(t.TempDir(), "docs.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
		INSERT INTO meta VALUES ('schema', '1');
		CREATE TABLE docs (id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, size INTEGER NOT NULL, mtime INTEGER NOT NULL, title TEXT NOT NULL);
		CREATE VIRTUAL TABLE fts USING fts5(title, body);`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	const n = 6
	roots := make([]string, n)
	for i := range roots {
		roots[i] = t.TempDir()
		write(t, roots[i], "a.md", "# A\n\nwombat"+strconv.Itoa(i))
	}
	// Each opener has its own *sql.DB, as a process of its own would, and refreshes as soon as it has opened.
	start := make(chan struct{})
	ixs := make([]*Index, n)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			<-start
			ix, err := Open(&Options{Path: path, Roots: []string{roots[i]}})
			if err == nil {
				ixs[i] = ix
				_, err = ix.Refresh(context.Background(), nil)
			}
			errs <- err
		}()
	}
	close(start)
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	for _, ix := range ixs {
		if ix != nil {
			t.Cleanup(func() { ix.Close() })
		}
	}
	if t.Failed() {
		return
	}
	for i, ix := range ixs {
		if got := paths(search(t, ix, "wombat"+strconv.Itoa(i))); len(got) != 1 {
			t.Errorf("opener %d: wombat%d: %v: its documents were dropped by another's migration", i, i, got)
		}
		var v string
		if err := ix.db.QueryRow(`SELECT value FROM meta WHERE key = 'schema'`).Scan(&v); err != nil || v != strconv.Itoa(schemaVersion) {
			t.Errorf("opener %d: schema %q, %v", i, v, err)
		}
		var root int
		if err := ix.db.QueryRow(`SELECT count(*) FROM pragma_table_info('docs') WHERE name = 'root'`).Scan(&root); err != nil || root != 1 {
			t.Errorf("opener %d: docs has no root column: %d, %v", i, root, err)
		}
	}
	var docs int
	if err := ixs[0].db.QueryRow(`SELECT count(*) FROM docs`).Scan(&docs); err != nil || docs != n {
		t.Errorf("%d documents, %v; want %d", docs, err, n)
	}
}
