package builtin

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/statedir"
)

const (
	// maxReadLines and maxReadBytes bound what one read_file call returns; the result says how to read on.
	maxReadLines = 2000
	maxReadBytes = 100_000
	// maxMatchRunes trims the long lines search_files shows (minified files).
	maxMatchRunes = 300
	// sniffBytes is how much of a file is looked at to tell text from binary.
	sniffBytes = 8 << 10
)

// fileRoots are the directories the file tools read, opened once as os.Root: the kernel-level confinement refuses
// ".." and symlinks that lead out, even when the tree changes under a call.
type fileRoots struct {
	roots      []*fileRoot
	maxBytes   int64
	maxResults int
}

type fileRoot struct {
	dir  string // absolute, as configured
	real string // dir with its symlinks resolved
	root *os.Root
}

// sharedRoots opens the roots once for the three tools.
func sharedRoots(e *env) (*fileRoots, error) {
	built := false
	v, err := e.share("files", func() (any, error) {
		o := e.opts.Files
		if len(o.Roots) == 0 {
			return nil, errors.New("roots is required: the directories the file tools may read")
		}
		fr := &fileRoots{maxBytes: cmp.Or(o.MaxFileBytes, 10<<20), maxResults: cmp.Or(o.MaxResults, 200)}
		var errs []error
		for _, dir := range o.Roots {
			r, err := openRoot(dir)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			fr.roots = append(fr.roots, r)
		}
		if err := errors.Join(errs...); err != nil {
			fr.close()
			return nil, err
		}
		built = true
		return fr, nil
	})
	if err != nil {
		return nil, err
	}
	fr := v.(*fileRoots)
	if built {
		e.onClose(fr.close)
	}
	return fr, nil
}

func openRoot(dir string) (*fileRoot, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("root %s: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("root %s: %w", dir, errors.Unwrap(err))
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("root %s: %w", dir, err)
	}
	return &fileRoot{dir: abs, real: real, root: root}, nil
}

func (fr *fileRoots) close() error {
	var errs []error
	for _, r := range fr.roots {
		errs = append(errs, r.root.Close())
	}
	return errors.Join(errs...)
}

func (fr *fileRoots) list() string {
	dirs := make([]string, len(fr.roots))
	for i, r := range fr.roots {
		dirs[i] = r.dir
	}
	return strings.Join(dirs, ", ")
}

// target is a path the model gave, resolved: its root, its path inside the root (slash-separated, "." for the
// root itself), and how results show it.
type target struct {
	root *fileRoot
	rel  string
}

// show is the path as the model should give it back: relative to the first root, absolute in the others.
func (fr *fileRoots) show(t target) string {
	if t.root == fr.roots[0] {
		return t.rel
	}
	return filepath.Join(t.root.dir, filepath.FromSlash(t.rel))
}

// uri is the file:// URL of t.
func (t target) uri() string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(t.root.dir, filepath.FromSlash(t.rel)))}).String()
}

// resolve finds p: relative to the first root, or absolute inside any root. Only the name is checked here; the
// root refuses what a symlink would lead out of it.
func (fr *fileRoots) resolve(p string) (target, error) {
	if p = strings.TrimSpace(p); p == "" {
		p = "."
	}
	if !filepath.IsAbs(p) {
		rel := filepath.Clean(p)
		if !filepath.IsLocal(rel) && rel != "." {
			return target{}, fmt.Errorf("%s is outside the allowed roots (%s)", p, fr.list())
		}
		return target{fr.roots[0], filepath.ToSlash(rel)}, nil
	}
	p = filepath.Clean(p)
	for _, r := range fr.roots {
		for _, dir := range []string{r.dir, r.real} {
			if rel, err := filepath.Rel(dir, p); err == nil && (rel == "." || filepath.IsLocal(rel)) {
				return target{r, filepath.ToSlash(rel)}, nil
			}
		}
	}
	return target{}, fmt.Errorf("%s is outside the allowed roots (%s)", p, fr.list())
}

// within reports whether dest, the text of a symbolic link in the directory dir (slash-separated, inside root r),
// leads inside the roots, so that it may be shown: a link leading out is listed without saying where. It is judged
// from where dir really is, not from its name: reached through an in-root link to a directory, "../x" in dir is
// not "dir/../x". The place the link leads to has its own links resolved too; a link that leads nowhere is
// judged by its text, from the directory's real place.
func (fr *fileRoots) within(r *fileRoot, dir, dest string) bool {
	real, err := filepath.EvalSymlinks(filepath.Join(r.real, filepath.FromSlash(dir)))
	if err != nil {
		return false
	}
	to := dest
	if !filepath.IsAbs(to) {
		to = filepath.Join(real, to)
	}
	if resolved, err := filepath.EvalSymlinks(to); err == nil {
		to = resolved
	}
	_, err = fr.resolve(to)
	return err == nil
}

// explain turns an error of the root into words for the model.
func (fr *fileRoots) explain(t target, err error) error {
	name := fr.show(t)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s does not exist", name)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s cannot be read: permission denied", name)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%s is not a directory", name)
	}
	// os.Root's error for an escape is not exported; a symlink leading out is the one way to reach it. Where it
	// leads is not said: what lies outside the roots is none of the model's business.
	escapes := strings.Contains(err.Error(), "escapes")
	if real, rerr := filepath.EvalSymlinks(filepath.Join(t.root.real, filepath.FromSlash(t.rel))); rerr == nil {
		if rel, _ := filepath.Rel(t.root.real, real); !filepath.IsLocal(rel) && rel != "." {
			escapes = true
		}
	}
	if escapes {
		return fmt.Errorf("%s leads outside the allowed roots (%s) through a symbolic link", name, fr.list())
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("%s cannot be read: %v", name, err)
}

// kind names what a non-regular file is.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeDevice != 0:
		return "a device file"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return "not a regular file"
}

// openFile opens the regular file t for reading, refusing the rest: never blocking on a pipe, never reading a
// device, never more than the size cap.
func (fr *fileRoots) openFile(t target) (*os.File, fs.FileInfo, error) {
	// An SQLite database agenthost has open (the state, a doc_search index) is not opened: closing the descriptor
	// would drop the process's locks on it, and another process could then lose its commits (see
	// statedir.HoldSQLite). It would be refused as binary anyway.
	if fi, err := t.root.root.Stat(t.rel); err == nil && statedir.HeldSQLite(fi) {
		return nil, nil, fmt.Errorf("%s is a database agenthost has open, not a file the file tools read", fr.show(t))
	}
	// O_NONBLOCK: opening a named pipe would otherwise wait for a writer.
	f, err := t.root.root.OpenFile(t.rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fr.explain(t, err)
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
		f.Close()
		return nil, nil, fr.explain(t, err)
	case fi.IsDir():
		f.Close()
		return nil, nil, fmt.Errorf("%s is a directory; list it with list_dir", fr.show(t))
	case !fi.Mode().IsRegular():
		f.Close()
		return nil, nil, fmt.Errorf("%s is %s, not a file that can be read", fr.show(t), kind(fi.Mode()))
	case fi.Size() > fr.maxBytes:
		f.Close()
		return nil, nil, fmt.Errorf("%s is %s, over the %s limit of the file tools", fr.show(t), formatSize(fi.Size()),
			formatSize(fr.maxBytes))
	}
	return f, fi, nil
}

// binary reports whether data, the start of a file, is not text: a NUL byte or invalid UTF-8.
func binary(data []byte) bool {
	head := data[:min(len(data), sniffBytes)]
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	// The cut may split a character: only a complete invalid sequence counts.
	for len(head) > 0 {
		r, n := utf8.DecodeRune(head)
		if r == utf8.RuneError && n == 1 && (len(head) >= utf8.UTFMax || utf8.FullRune(head)) {
			return true
		}
		head = head[n:]
	}
	return false
}

// fileTool is what the three file tools share.
type fileTool struct {
	roots *fileRoots
	spec  host.ToolSpec
}

func (t *fileTool) Spec() host.ToolSpec { return t.spec }

func newFileTool(e *env, spec func(roots string) host.ToolSpec) (*fileTool, error) {
	fr, err := sharedRoots(e)
	if err != nil {
		return nil, err
	}
	s := spec(fr.list())
	s.Annotations = readOnly(false)
	return &fileTool{roots: fr, spec: s}, nil
}

// readFile is the read_file tool.
type readFile struct{ *fileTool }

func newReadFile(e *env) (host.Tool, error) {
	ft, err := newFileTool(e, func(roots string) host.ToolSpec {
		return host.ToolSpec{
			Name:  "read_file",
			Title: "Read file",
			Description: "Reads a text file under " + roots + ", with line numbers. Paths are relative to the first " +
				"of these directories, or absolute inside any of them. offset and limit read part of a long file.",
			Prompt: "Use read_file to read a local file the question is about, under " + roots + ". Find files " +
				"with list_dir or search_files rather than guessing paths. Cite the file as the source of what " +
				"you take from it.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` +
				`"path":{"type":"string","description":"The file, relative to the first root or absolute"},` +
				`"offset":{"type":"integer","minimum":1,"description":"The first line to read, from 1; default 1"},` +
				`"limit":{"type":"integer","minimum":1,"description":"How many lines to read; default all, up to 2000"}},` +
				`"required":["path"]}`),
		}
	})
	if err != nil {
		return nil, err
	}
	return readFile{ft}, nil
}

func (t readFile) Call(ctx context.Context, args json.RawMessage, _ *host.Call) (*host.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var in struct {
		Path   string `json:"path"`
		Offset *int   `json:"offset"`
		Limit  *int   `json:"limit"`
	}
	if err := decodeArgs(args, &in, `{"path": "README.md"}`); err != nil {
		return errorResult("Invalid arguments: %v", err), nil
	}
	if strings.TrimSpace(in.Path) == "" {
		return errorResult(`Invalid arguments: path is required; for example {"path": "README.md"}`), nil
	}
	offset, limit := 1, maxReadLines
	if in.Offset != nil {
		if *in.Offset < 1 {
			return errorResult("Invalid arguments: offset is a line number, from 1, not %d", *in.Offset), nil
		}
		offset = *in.Offset
	}
	if in.Limit != nil {
		if *in.Limit < 1 {
			return errorResult("Invalid arguments: limit is a number of lines, at least 1, not %d", *in.Limit), nil
		}
		limit = min(*in.Limit, maxReadLines)
	}
	tg, err := t.roots.resolve(in.Path)
	if err != nil {
		return errorResult("%v", err), nil
	}
	f, _, err := t.roots.openFile(tg)
	if err != nil {
		return errorResult("%v", err), nil
	}
	data, err := io.ReadAll(io.LimitReader(f, t.roots.maxBytes))
	f.Close()
	if err != nil {
		return errorResult("%v", t.roots.explain(tg, err)), nil
	}
	name := t.roots.show(tg)
	if binary(data) {
		return errorResult("%s is a binary file (%s), not text: read_file reads text files only", name,
			formatSize(int64(len(data)))), nil
	}
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	total := len(lines)
	if offset > max(total, 1) {
		return errorResult("%s has %d lines; offset %d is past its end", name, total, offset), nil
	}
	var b strings.Builder
	last := offset - 1
	for i := offset - 1; i < total && i < offset-1+limit; i++ {
		line := strings.TrimRight(lines[i], "\r\n")
		if b.Len()+len(line) > maxReadBytes && i > offset-1 {
			break
		}
		fmt.Fprintf(&b, "%d\t%s\n", i+1, line)
		last = i + 1
	}
	header := fmt.Sprintf("%s (lines %d-%d of %d)", name, offset, last, total)
	switch {
	case total == 0:
		header = name + " is empty"
	case offset == 1 && last == total:
		header = fmt.Sprintf("%s (%d lines)", name, total)
	}
	text := header + "\n" + b.String()
	if last < total {
		text += fmt.Sprintf("[%d more lines: read on with offset %d]\n", total-last, last+1)
	}
	return &host.Result{
		Text:       text,
		References: []host.Reference{{Title: name, URI: tg.uri(), Content: excerpt(b.String())}},
		Debug:      map[string]any{"path": name, "lines": total, "bytes": len(data)},
	}, nil
}

// listDir is the list_dir tool.
type listDir struct{ *fileTool }

func newListDir(e *env) (host.Tool, error) {
	ft, err := newFileTool(e, func(roots string) host.ToolSpec {
		return host.ToolSpec{
			Name:  "list_dir",
			Title: "List directory",
			Description: "Lists a directory under " + roots + ": sub-directories (ending in /), files with their " +
				"sizes, symbolic links with their targets. Paths are relative to the first of these directories, " +
				"or absolute inside any of them.",
			Prompt: "Use list_dir to find your way around the local files under " + roots + " before reading them.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string",` +
				`"description":"The directory, relative to the first root or absolute; default the first root"}}}`),
		}
	})
	if err != nil {
		return nil, err
	}
	return listDir{ft}, nil
}

func (t listDir) Call(ctx context.Context, args json.RawMessage, _ *host.Call) (*host.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var in struct {
		Path string `json:"path"`
	}
	if err := decodeArgs(args, &in, `{"path": "docs"}`); err != nil {
		return errorResult("Invalid arguments: %v", err), nil
	}
	tg, err := t.roots.resolve(in.Path)
	if err != nil {
		return errorResult("%v", err), nil
	}
	// Only a directory is opened: opening and closing a file could drop the process's SQLite locks (the state under
	// a root), and opening a named pipe would block. The check comes first; O_DIRECTORY refuses what replaced it.
	if fi, err := tg.root.root.Stat(tg.rel); err == nil && !fi.IsDir() {
		if fi.Mode().IsRegular() {
			return errorResult("%s is a file, not a directory; read it with read_file", t.roots.show(tg)), nil
		}
		return errorResult("%s is %s, not a directory", t.roots.show(tg), kind(fi.Mode())), nil
	}
	f, err := tg.root.root.OpenFile(tg.rel, os.O_RDONLY|oDirectory|syscall.O_NONBLOCK, 0)
	if err != nil {
		return errorResult("%v", t.roots.explain(tg, err)), nil
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return errorResult("%v", t.roots.explain(tg, err)), nil
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	name := t.roots.show(tg)
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d entries\n", name, len(entries))
	for i, ent := range entries {
		if i == t.roots.maxResults {
			fmt.Fprintf(&b, "... and %d more\n", len(entries)-i)
			break
		}
		rel := path.Join(tg.rel, ent.Name())
		switch m := ent.Type(); {
		case m.IsDir():
			fmt.Fprintf(&b, "%s/\n", ent.Name())
		case m&fs.ModeSymlink != 0:
			dest, err := tg.root.root.Readlink(rel)
			switch {
			case err != nil:
				dest = "?"
			case !t.roots.within(tg.root, path.Dir(rel), dest):
				dest = "(outside the allowed roots)"
			}
			fmt.Fprintf(&b, "%s -> %s\n", ent.Name(), dest)
		case m.IsRegular():
			size := "?"
			if fi, err := ent.Info(); err == nil {
				size = formatSize(fi.Size())
			}
			fmt.Fprintf(&b, "%s  (%s)\n", ent.Name(), size)
		default:
			fmt.Fprintf(&b, "%s  (%s)\n", ent.Name(), kind(m))
		}
	}
	return &host.Result{
		Text:       b.String(),
		References: []host.Reference{{Title: name, URI: tg.uri()}},
		Debug:      map[string]any{"path": name, "entries": len(entries)},
	}, nil
}

// searchFiles is the search_files tool.
type searchFiles struct{ *fileTool }

func newSearchFiles(e *env) (host.Tool, error) {
	ft, err := newFileTool(e, func(roots string) host.ToolSpec {
		return host.ToolSpec{
			Name:  "search_files",
			Title: "Search files",
			Description: "Searches the text files under " + roots + " for a regular expression (RE2 syntax), " +
				"line by line, and returns the matching lines with their paths and line numbers. Hidden " +
				"directories and binary files are skipped.",
			Prompt: "Use search_files to find where something is mentioned in the local files under " + roots +
				", then read_file to read around a match.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` +
				`"pattern":{"type":"string","description":"A regular expression (RE2), e.g. func\\s+main or (?i)todo"},` +
				`"path":{"type":"string","description":"The directory (or file) to search, relative to the first root or absolute; default every root"},` +
				`"glob":{"type":"string","description":"Only files whose name matches, e.g. *.go or *.md"}},` +
				`"required":["pattern"]}`),
		}
	})
	if err != nil {
		return nil, err
	}
	return searchFiles{ft}, nil
}

// fileMatches are the matching lines of one file.
type fileMatches struct {
	t     target
	lines []string
}

func (t searchFiles) Call(ctx context.Context, args json.RawMessage, _ *host.Call) (*host.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var in struct {
		Pattern string `json:"pattern"`
		Path    string `json:"path"`
		Glob    string `json:"glob"`
	}
	const example = `{"pattern": "TODO", "glob": "*.go"}`
	if err := decodeArgs(args, &in, example); err != nil {
		return errorResult("Invalid arguments: %v", err), nil
	}
	if in.Pattern == "" {
		return errorResult("Invalid arguments: pattern is required; for example %s", example), nil
	}
	re, err := regexp.Compile(in.Pattern)
	if err != nil {
		return errorResult("Invalid pattern %q: %v", in.Pattern, strings.TrimPrefix(err.Error(), "error parsing regexp: ")), nil
	}
	if in.Glob != "" {
		if _, err := path.Match(in.Glob, ""); err != nil || strings.Contains(in.Glob, "/") {
			return errorResult("Invalid glob %q: a file name pattern such as *.go or report-??.md", in.Glob), nil
		}
	}
	var starts []target
	if strings.TrimSpace(in.Path) == "" {
		for _, r := range t.roots.roots {
			starts = append(starts, target{r, "."})
		}
	} else {
		tg, err := t.roots.resolve(in.Path)
		if err != nil {
			return errorResult("%v", err), nil
		}
		if _, err := tg.root.root.Stat(tg.rel); err != nil {
			return errorResult("%v", t.roots.explain(tg, err)), nil
		}
		starts = []target{tg}
	}

	s := &search{roots: t.roots, re: re, glob: in.Glob, limit: t.roots.maxResults}
	for _, st := range starts {
		if err := s.walk(ctx, st); err != nil {
			return nil, err
		}
	}
	if len(s.found) == 0 {
		return &host.Result{Text: fmt.Sprintf("No line matches %q in %d files searched.", in.Pattern, s.files),
			Debug: map[string]any{"files": s.files, "skipped": s.skipped}}, nil
	}
	var b strings.Builder
	refs := make([]host.Reference, 0, len(s.found))
	for _, fm := range s.found {
		for _, l := range fm.lines {
			fmt.Fprintf(&b, "%s:%s\n", t.roots.show(fm.t), l)
		}
		refs = append(refs, host.Reference{Title: t.roots.show(fm.t), URI: fm.t.uri(), Content: excerpt(strings.Join(fm.lines, "\n"))})
	}
	if s.more {
		fmt.Fprintf(&b, "[Stopped at %d matching lines: narrow the pattern, the path or the glob to see the rest.]\n", s.matches)
	} else {
		fmt.Fprintf(&b, "[%d matching lines in %d files, of %d files searched.]\n", s.matches, len(s.found), s.files)
	}
	return &host.Result{Text: b.String(), References: refs,
		Debug: map[string]any{"files": s.files, "skipped": s.skipped, "matches": s.matches}}, nil
}

// search is one search_files call's walk.
type search struct {
	roots   *fileRoots
	re      *regexp.Regexp
	glob    string
	limit   int
	found   []fileMatches
	matches int
	files   int
	skipped int // binary, oversize and unreadable files
	more    bool
}

var errEnough = errors.New("enough matches")

// walk searches under st, without following symbolic links, skipping hidden directories.
func (s *search) walk(ctx context.Context, st target) error {
	err := fs.WalkDir(st.root.root.FS(), st.rel, func(p string, d fs.DirEntry, err error) error {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		switch {
		case err != nil:
			s.skipped++
			return nil
		case d.IsDir():
			if p != st.rel && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			return nil
		case !d.Type().IsRegular():
			return nil
		}
		if s.glob != "" {
			if ok, _ := path.Match(s.glob, d.Name()); !ok {
				return nil
			}
		}
		s.files++
		return s.file(target{st.root, p})
	})
	if errors.Is(err, errEnough) {
		return nil
	}
	return err
}

// file searches one file.
func (s *search) file(t target) error {
	f, _, err := s.roots.openFile(t)
	if err != nil {
		s.skipped++
		return nil
	}
	defer f.Close()
	br := bufio.NewReader(f)
	if head, _ := br.Peek(sniffBytes); binary(head) {
		s.skipped++
		return nil
	}
	var fm *fileMatches
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 64<<10), int(s.roots.maxBytes)+1)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if !s.re.MatchString(line) {
			continue
		}
		if s.matches == s.limit {
			s.more = true
			return errEnough
		}
		if fm == nil {
			s.found = append(s.found, fileMatches{t: t})
			fm = &s.found[len(s.found)-1]
		}
		s.matches++
		fm.lines = append(fm.lines, fmt.Sprintf("%d: %s", n, trimLine(line)))
	}
	return nil
}

// trimLine shortens a long line to maxMatchRunes.
func trimLine(line string) string {
	line = strings.TrimRight(line, "\r")
	if utf8.RuneCountInString(line) <= maxMatchRunes {
		return line
	}
	return cutRunes(line, maxMatchRunes) + "…"
}
