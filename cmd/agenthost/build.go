package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/internal/redact"
	"github.com/agenthost/agenthost/internal/wiring"
)

// errFlagHelp is returned when -h was asked for: the usage was printed and the exit code is 0.
var errFlagHelp = errors.New("help requested")

// common holds the flags every configuration-reading command shares.
type common struct {
	configPath string
	logLevel   string
	model      string
	// recordRuns builds the app with wiring.Options.RecordRuns, for the web console.
	recordRuns bool
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.configPath, "config", "agent.toml", "configuration `file`; when the default is missing, built-in defaults apply")
	fs.StringVar(&c.logLevel, "log-level", "warn", "log `level`: debug, info, warn or error")
	fs.StringVar(&c.model, "model", "", "model name to use instead of the configured one; \"test\" for the offline test model")
}

// parseFlags parses args into fs wherever the flags stand among the arguments, as in "agenthost run PROMPT --json";
// "--" ends the flags, so that a word that looks like one ("--json") can still be an argument. -h prints the
// command's usage to stdout (errFlagHelp); a bad flag is errUsage.
func parseFlags(fs *flag.FlagSet, args []string, io *stdio) error {
	return parseFlagsUntil(fs, args, io, 0)
}

// parseFlagsUntil is parseFlags for a command whose arguments end with another command line, as "mcp add NAME
// COMMAND ARGS...": after the stop'th argument (0: never), every word is an argument, flags of that command included.
//
// A flag that takes a value takes the next word unless it is given as -name=value; a bool flag never does. A flag
// whose value is optional (optionalValue: serve's --http and --a2a) takes the next word when it is not a flag.
func parseFlagsUntil(fs *flag.FlagSet, args []string, io *stdio, stop int) error {
	fs.SetOutput(io.err)
	var flags, positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' { // "-" is an argument: stdin
			positional = append(positional, a)
			if stop > 0 && len(positional) == stop {
				positional = append(positional, args[i+1:]...)
				break
			}
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		f := fs.Lookup(name)
		if f == nil && (name == "h" || name == "help") {
			fs.SetOutput(io.out)
			fs.Usage()
			return errFlagHelp
		}
		if f == nil && len(positional) > 0 && isNumber(a) {
			positional = append(positional, a) // "what is 3 -2": a negative number, never a flag
			continue
		}
		flags = append(flags, a)
		if hasValue || f == nil || i+1 == len(args) {
			continue // the flag package reports an unknown flag, or one without its value
		}
		switch v := f.Value.(type) {
		case optionalValue:
			if next := args[i+1]; next == "-" || !strings.HasPrefix(next, "-") {
				flags[len(flags)-1] = a + "=" + next
				i++
			}
		case interface{ IsBoolFlag() bool }:
			if !v.IsBoolFlag() {
				flags = append(flags, args[i+1])
				i++
			}
		default:
			flags = append(flags, args[i+1])
			i++
		}
	}
	// The flags alone first, so that a flag that needs a value and ends them is reported as such, rather than
	// taking the "--" before the arguments as its value.
	if err := fs.Parse(flags); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errFlagHelp
		}
		if strings.Contains(err.Error(), "flag provided but not defined") {
			return fmt.Errorf("%w: %v (an argument that begins with - goes after --, as in: agenthost %s -- ARG)", errUsage, err, fs.Name())
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if err := fs.Parse(append([]string{"--"}, positional...)); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return nil
}

// isNumber reports whether s, a word beginning with "-", is a negative number ("-2", "-0.5") rather than a flag.
func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// optionalValue is a flag that works alone and with a value: --http, --http ADDR, --http=ADDR.
type optionalValue interface {
	flag.Value
	optionalValue()
}

// splitCommand finds the sub-command in the arguments of a command that has them (state, mcp): the first word that
// is neither a flag nor the value of one of valueFlags, so that flags may come before it. It returns "" when there is
// none, and the arguments without it.
func splitCommand(args []string, valueFlags ...string) (string, []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return "", args
		case len(a) < 2 || a[0] != '-':
			return a, append(slices.Clip(args[:i]), args[i+1:]...)
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		if !hasValue && slices.Contains(valueFlags, name) {
			i++
		}
	}
	return "", args
}

// commonValueFlags are the flags of common that take a value.
var commonValueFlags = []string{"config", "log-level", "model"}

// logger returns the stderr logger at the flag's level.
func (c *common) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, fmt.Errorf("%w: -log-level: %v", errUsage, err)
	}
	// Every line is redacted: a URL's userinfo and query values never reach the log (see internal/redact).
	return slog.New(redact.Handler(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))), nil
}

// loadConfig reads the configuration. A missing file at the default path means the built-in defaults; a missing file
// that was named explicitly is an error.
func (c *common) loadConfig(fs *flag.FlagSet) (*config.Config, error) {
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "config" })
	cfg, err := config.Load(c.configPath)
	if err != nil {
		if !explicit && errors.Is(err, os.ErrNotExist) {
			return config.Default(), nil
		}
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	return cfg, nil
}

// app loads the configuration and builds the app through the composition root (internal/wiring), which must be
// closed. Logs go to stderr; notices, such as the one saying the offline test model is used, go to notices when it
// is not nil.
func (c *common) app(ctx context.Context, fs *flag.FlagSet, stderr, notices io.Writer, purpose wiring.Purpose) (*wiring.App, error) {
	cfg, err := c.loadConfig(fs)
	if err != nil {
		return nil, err
	}
	logger, err := c.logger(stderr)
	if err != nil {
		return nil, err
	}
	return wiring.Build(ctx, cfg, &wiring.Options{Logger: logger, Notices: notices, Version: version, Model: c.model, Purpose: purpose, RecordRuns: c.recordRuns})
}

func configName(cfg *config.Config) string { return wiring.ConfigName(cfg) }

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}
