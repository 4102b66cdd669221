package config

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// Error is one problem in a configuration. Parse and Validate return every problem they find at once, as
// errors.Join of *Error values in line order.
//
// In Key, an element of an array of values is counted from 0 (mcp.servers.fs.args[1] is the second argument),
// and an element of an array of tables from 1, like its [[headers]] (serve.skills[2] is the second skill).
type Error struct {
	File string // base name of the file; "" when the Config was not parsed from a file
	Line int    // 1-based line of the key, or of its table; 0 when unknown
	Key  string // the key, e.g. "agent.max_iterations" or "serve.skills[2].id"; "" for a syntax error
	Msg  string
}

// Error formats the problem as "agent.toml:12: agent.max_iterations: must be between 1 and 100 (got 500)",
// leaving out the parts that are unknown ("line 12: ..." without a file).
func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0:
		b.WriteString(e.File + ":" + strconv.Itoa(e.Line) + ": ")
	case e.File != "":
		b.WriteString(e.File + ": ")
	case e.Line > 0:
		b.WriteString("line " + strconv.Itoa(e.Line) + ": ")
	}
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// issue is a problem before it is given a file and a line.
type issue struct {
	path []string // the TOML key path, used to find the line
	key  string   // the key as shown, which may end in an index
	msg  string
}

// issues collects problems in the order they are found.
type issues []issue

func (is *issues) add(path []string, format string, args ...any) {
	is.addKey(path, formatKey(path), format, args...)
}

func (is *issues) addKey(path []string, key, format string, args ...any) {
	*is = append(*is, issue{path: slices.Clone(path), key: key, msg: fmt.Sprintf(format, args...)})
}

// join turns the issues into one error, each located with lines (which may be nil) and sorted by line, with
// the unlocated ones last. It returns nil when there are none.
func (is issues) join(file string, lines map[string]int) error {
	if len(is) == 0 {
		return nil
	}
	list := make([]*Error, 0, len(is))
	for _, i := range is {
		list = append(list, &Error{File: file, Line: lineOf(lines, i.path), Key: i.key, Msg: i.msg})
	}
	slices.SortStableFunc(list, func(a, b *Error) int {
		if (a.Line == 0) != (b.Line == 0) {
			if a.Line == 0 {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.Line, b.Line)
	})
	errs := make([]error, len(list))
	for i, e := range list {
		errs[i] = e
	}
	return errors.Join(errs...)
}

// lineOf returns the line of path, or of its nearest enclosing table that has one, or 0.
func lineOf(lines map[string]int, path []string) int {
	for n := len(path); n > 0; n-- {
		if line, ok := lines[toml.Key(path[:n]).String()]; ok {
			return line
		}
	}
	return 0
}

// formatKey writes a key path as TOML does, quoting the parts that need it (tools."my tool".prompt), and an
// element of an array of tables as its 1-based index (serve.skills[2].id).
func formatKey(path []string) string {
	var b strings.Builder
	for _, part := range path {
		if n, ok := strings.CutPrefix(part, indexMark); ok {
			b.WriteString("[" + n + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(toml.Key{part}.String())
	}
	return b.String()
}

// indexMark begins the part of a key path that stands for an element of an array of tables; the element's
// 1-based index follows it. The byte is not UTF-8, so no key of a TOML document (which is UTF-8) can be taken
// for such a part.
const indexMark = "\xff"

// indexPart returns the key path part of the n-th (1-based) element of an array of tables.
func indexPart(n int) string { return indexMark + strconv.Itoa(n) }
