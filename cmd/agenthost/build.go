package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
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
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.configPath, "config", "agent.toml", "configuration `file`; when the default is missing, built-in defaults apply")
	fs.StringVar(&c.logLevel, "log-level", "warn", "log `level`: debug, info, warn or error")
	fs.StringVar(&c.model, "model", "", "model name to use instead of the configured one; \"test\" for the offline test model")
}

// parseFlags parses args into fs, mapping -h and bad flags to errFlagHelp and errUsage.
func parseFlags(fs *flag.FlagSet, args []string, w io.Writer) error {
	fs.SetOutput(w)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errFlagHelp
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return nil
}

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
	return wiring.Build(ctx, cfg, &wiring.Options{Logger: logger, Notices: notices, Version: version, Model: c.model, Purpose: purpose})
}

func configName(cfg *config.Config) string { return wiring.ConfigName(cfg) }

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}
