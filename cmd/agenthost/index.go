package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/agenthost/agenthost/builtin/docsearch"
	"github.com/agenthost/agenthost/internal/wiring"
)

// cmdIndex builds or brings up to date doc_search's index, as the tool does at start-up, with a progress bar when
// stderr is a terminal.
func cmdIndex(ctx context.Context, args []string, io *stdio) error {
	fs := flag.NewFlagSet("index", flag.ContinueOnError)
	var c common
	c.register(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: agenthost index [flags]\n\nBuilds or brings up to date the full-text index of doc_search over [builtin.doc_search] roots.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, io); err != nil {
		return err
	}
	cfg, err := c.loadConfig(fs)
	if err != nil {
		return err
	}
	logger, err := c.logger(io.err)
	if err != nil {
		return err
	}
	if len(cfg.Builtin.DocSearch.Roots) == 0 {
		return fmt.Errorf("%w: %s: builtin.doc_search.roots: no directories to index", errUsage, configName(cfg))
	}
	opts := wiring.BuiltinOptions(cfg, version, os.Getenv, logger)
	path, err := opts.DocSearchIndex()
	if err != nil {
		return err
	}
	ix, err := opts.OpenDocIndex(logger)
	if err != nil {
		return err
	}
	defer ix.Close()

	bar := newProgressBar(io.err, isTerminal(io.err))
	start := time.Now()
	stats, err := ix.Refresh(ctx, bar.update)
	bar.done()
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("indexing interrupted; what was indexed is kept, and the next run goes on from there")
		}
		return err
	}
	elapsed := time.Since(start)
	n, err := ix.Count(ctx)
	if err != nil {
		return err
	}
	// Closing checkpoints the write-ahead log into the file, whose size is then the index's.
	if err := ix.Close(); err != nil {
		return err
	}
	size := ""
	if fi, err := os.Stat(path); err == nil {
		size = fmt.Sprintf(", %.1f MiB", float64(fi.Size())/(1<<20))
	}
	fmt.Fprintf(io.out, "%s: %s (%d read, %d removed, %d skipped) in %s%s\n", path, count(n, "document", "documents"),
		stats.Indexed, stats.Removed, stats.Skipped, elapsed.Round(time.Millisecond), size)
	return nil
}

// progressBar draws indexing progress on a terminal, at most every 100ms; elsewhere it draws nothing.
type progressBar struct {
	w    io.Writer
	on   bool
	last time.Time
	drew bool
}

func newProgressBar(w io.Writer, terminal bool) *progressBar { return &progressBar{w: w, on: terminal} }

func (b *progressBar) update(p docsearch.Progress) {
	if !b.on || time.Since(b.last) < 100*time.Millisecond && p.Scanned != p.Total {
		return
	}
	b.last = time.Now()
	const width = 30
	filled := 0
	if p.Total > 0 {
		filled = min(width, p.Scanned*width/p.Total)
	}
	fmt.Fprintf(b.w, "\r\x1b[Kindexing [%s%s] %d/%d  %s", strings.Repeat("#", filled), strings.Repeat(".", width-filled), p.Scanned, p.Total, truncate(p.Path, 40))
	b.drew = true
}

func (b *progressBar) done() {
	if b.drew {
		fmt.Fprint(b.w, "\r\x1b[K")
	}
}
