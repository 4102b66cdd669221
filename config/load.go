package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Load reads the file at path and parses it with the process environment (see Parse).
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(path, data, os.LookupEnv)
}

// Parse decodes an agent.toml document and validates it. name is the file's path: its base name locates the
// errors and its directory anchors a relative model.script; it becomes Config.Path. env looks up environment
// variables; nil means os.LookupEnv.
//
// In every string value, including array elements and table values, ${NAME} is replaced by the variable's
// value before the value is checked, and $$ stands for a literal $. An unset variable is an error. A string
// that refers to a variable may stand for a number or a boolean: max_tokens = "${MAX_TOKENS}".
//
// Unknown keys, wrong types, unset variables, bad durations and every problem Validate finds are reported
// together, each with its line (see Error). Among them: an unknown built-in, and a tool policy ([tools."x"]), a
// sub-agent's tool or a [code_mode] tool that names no tool but is close to one, each with the name it is likely to
// mean; a schema_file that cannot be read or is not JSON, and a root of an enabled file tool or doc_search that is
// not a directory, each with the absolute path tried (a relative path starts from the config file's directory).
// Parse also resolves provider "auto" against env and then requires model.model when it resolves to "openai", and
// gives agent.conversation_ttl, when the file leaves it out, the default of the state backend
// (DefaultConversationTTL).
func Parse(name string, data []byte, env func(string) (string, bool)) (*Config, error) {
	if env == nil {
		env = os.LookupEnv
	}
	file := ""
	if name != "" {
		file = filepath.Base(name)
	}
	src := string(data)
	var tree map[string]any
	md, err := toml.Decode(src, &tree)
	if err != nil {
		return nil, syntaxError(file, err)
	}

	cfg := Default()
	cfg.Path = name
	d := &decoder{env: env, failed: make(map[string]bool)}
	d.config(cfg, tree)
	cfg.MCP.Order = fileOrder(md.Keys(), cfg.MCP.Servers, "mcp", "servers")
	cfg.A2A.Order = fileOrder(md.Keys(), cfg.A2A.Peers, "a2a", "peers")
	cfg.AgentOrder = fileOrder(md.Keys(), cfg.Agents, "agents")
	if !md.IsDefined("agent", "conversation_ttl") {
		cfg.Agent.ConversationTTL = Duration{DefaultConversationTTL(cfg.State.Backend)}
	}

	all := d.issues
	if md.IsDefined("agent", "tool_search_threshold") && md.IsDefined("agent", "tool_search", "threshold") {
		all.add([]string{"agent", "tool_search_threshold"}, "set twice: here and as [agent.tool_search] threshold; keep one")
	}
	dir := ""
	if name != "" {
		dir = filepath.Dir(name)
	}
	shortThreshold := md.IsDefined("agent", "tool_search_threshold")
	for _, is := range append(cfg.check(), cfg.checkFiles(dir)...) {
		if shortThreshold && slices.Equal(is.path, []string{"agent", "tool_search", "threshold"}) {
			is.path, is.key = []string{"agent", "tool_search_threshold"}, "agent.tool_search_threshold" // where the file sets it
		}
		if !d.failedAt(is.path) {
			all = append(all, is)
		}
	}
	m := cfg.Model
	if m.Provider == ProviderAuto && m.Model == "" && m.ResolveProvider(env) == ProviderOpenAI {
		reason := "base_url is set"
		if m.BaseURL == "" {
			reason = m.APIKeyEnv + " is set"
		}
		all.add([]string{"model", "model"}, "required: provider %q resolves to %q because %s", ProviderAuto, ProviderOpenAI, reason)
	}
	if err := all.join(file, keyLines(src)); err != nil {
		return nil, err
	}

	if s := cfg.Model.Script; s != "" && !filepath.IsAbs(s) && name != "" {
		cfg.Model.Script = filepath.Join(filepath.Dir(name), s)
	}
	if name != "" {
		dir := filepath.Dir(name)
		cfg.Builtin.Files.Roots = relativeTo(dir, cfg.Builtin.Files.Roots)
		cfg.Builtin.DocSearch.Roots = relativeTo(dir, cfg.Builtin.DocSearch.Roots)
		cfg.Eval.Datasets = relativeTo(dir, cfg.Eval.Datasets)
		if ix := cfg.Builtin.DocSearch.Index; ix != "" && !filepath.IsAbs(ix) {
			cfg.Builtin.DocSearch.Index = filepath.Join(dir, ix)
		}
		if sp := cfg.State.Path; sp != "" && !filepath.IsAbs(sp) {
			cfg.State.Path = filepath.Join(dir, sp)
		}
		if o := cfg.Agent.Output; o != nil && o.SchemaFile != "" && !filepath.IsAbs(o.SchemaFile) {
			o.SchemaFile = filepath.Join(dir, o.SchemaFile)
		}
	}
	for n, s := range cfg.MCP.Servers {
		s.Transport = s.EffectiveTransport()
		cfg.MCP.Servers[n] = s
	}
	return cfg, nil
}

// relativeTo makes the relative paths of list relative to dir.
func relativeTo(dir string, list []string) []string {
	out := slices.Clone(list)
	for i, p := range out {
		if !filepath.IsAbs(p) {
			out[i] = filepath.Join(dir, p)
		}
	}
	return out
}

func syntaxError(file string, err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return &Error{File: file, Line: pe.Position.Line, Msg: "invalid TOML: " + pe.Message}
	}
	return &Error{File: file, Msg: "invalid TOML: " + err.Error()}
}

// fileOrder returns the names of the tables under prefix, in the order they first appear in keys, keeping only
// those present in m.
func fileOrder[V any](keys []toml.Key, m map[string]V, prefix ...string) []string {
	var order []string
	for _, k := range keys {
		if len(k) <= len(prefix) || !slices.Equal(k[:len(prefix)], prefix) {
			continue
		}
		name := k[len(prefix)]
		if _, ok := m[name]; ok && !slices.Contains(order, name) {
			order = append(order, name)
		}
	}
	return order
}

// decoder converts the decoded TOML tree into a Config field by field, recording every problem instead of
// stopping at the first one. A field with a problem keeps its default.
type decoder struct {
	env    func(string) (string, bool)
	issues issues
	failed map[string]bool // keys (formatKey) with a problem, so that Validate's view of them is not reported again
}

func (d *decoder) fail(path []string, format string, args ...any) {
	d.failed[formatKey(path)] = true
	d.issues.add(path, format, args...)
}

// failedAt reports whether path or a table enclosing it already has a problem.
func (d *decoder) failedAt(path []string) bool {
	for n := len(path); n > 0; n-- {
		if d.failed[formatKey(path[:n])] {
			return true
		}
	}
	return false
}

type fieldFunc func(path []string, v any)

// table decodes a table whose keys are fixed: each key goes to its field function, any other key is an error.
func (d *decoder) table(path []string, v any, fields map[string]fieldFunc) {
	m, ok := v.(map[string]any)
	if !ok {
		d.fail(path, "must be a table (got %s)", describe(v))
		return
	}
	for _, k := range sortedKeys(m) {
		sub := append(slices.Clip(path), k)
		f, ok := fields[k]
		if !ok {
			d.fail(sub, "unknown key%s", suggest(k, fields))
			continue
		}
		f(sub, m[k])
	}
}

// named decodes a table whose keys are names chosen by the user, each holding a table.
func (d *decoder) named(path []string, v any, each func(path []string, name string, v any)) {
	m, ok := v.(map[string]any)
	if !ok {
		d.fail(path, "must be a table (got %s)", describe(v))
		return
	}
	for _, k := range sortedKeys(m) {
		each(append(slices.Clip(path), k), k, m[k])
	}
}

func (d *decoder) config(c *Config, tree map[string]any) {
	d.table(nil, tree, map[string]fieldFunc{
		"agent":   func(p []string, v any) { d.agent(p, v, &c.Agent) },
		"model":   func(p []string, v any) { d.model(p, v, &c.Model) },
		"limits":  func(p []string, v any) { d.limits(p, v, &c.Limits) },
		"builtin": func(p []string, v any) { d.builtin(p, v, &c.Builtin) },
		"tools": func(p []string, v any) {
			d.named(p, v, func(p []string, name string, v any) {
				var tp ToolPolicy
				d.toolPolicy(p, v, &tp)
				c.Tools[name] = tp
			})
		},
		"mcp": func(p []string, v any) {
			d.table(p, v, map[string]fieldFunc{"servers": func(p []string, v any) {
				d.named(p, v, func(p []string, name string, v any) {
					s := DefaultMCPServer()
					d.mcpServer(p, v, &s)
					c.MCP.Servers[name] = s
				})
			}})
		},
		"a2a": func(p []string, v any) {
			d.table(p, v, map[string]fieldFunc{"peers": func(p []string, v any) {
				d.named(p, v, func(p []string, name string, v any) {
					peer := DefaultA2APeer()
					d.a2aPeer(p, v, &peer)
					c.A2A.Peers[name] = peer
				})
			}})
		},
		"agents": func(p []string, v any) {
			d.named(p, v, func(p []string, name string, v any) {
				a := DefaultSubAgent()
				d.subAgent(p, v, &a)
				c.Agents[name] = a
			})
		},
		"state": func(p []string, v any) {
			d.table(p, v, map[string]fieldFunc{
				"backend":      d.str(&c.State.Backend),
				"path":         d.str(&c.State.Path),
				"dsn_env":      d.str(&c.State.DSNEnv),
				"durable_runs": d.str(&c.State.DurableRuns),
				"executor_id":  d.str(&c.State.ExecutorID),
			})
		},
		"serve": func(p []string, v any) { d.serve(p, v, &c.Serve) },
		"eval": func(p []string, v any) {
			d.table(p, v, map[string]fieldFunc{
				"checks":     d.strList(&c.Eval.Checks),
				"on_failure": d.str(&c.Eval.OnFailure),
				"model":      d.str(&c.Eval.Model),
				"datasets":   d.strList(&c.Eval.Datasets),
			})
		},
		"telemetry": func(p []string, v any) {
			d.table(p, v, map[string]fieldFunc{
				"exporter":        d.str(&c.Telemetry.Exporter),
				"protocol":        d.str(&c.Telemetry.Protocol),
				"endpoint":        d.str(&c.Telemetry.Endpoint),
				"headers":         d.strMap(&c.Telemetry.Headers),
				"service_name":    d.str(&c.Telemetry.ServiceName),
				"capture_content": d.boolean(&c.Telemetry.CaptureContent),
			})
		},
		"code_mode": func(p []string, v any) {
			cm := &c.CodeMode
			d.table(p, v, map[string]fieldFunc{
				"enabled":          d.boolean(&cm.Enabled),
				"tools":            d.strList(&cm.Tools),
				"timeout":          d.duration(&cm.Timeout),
				"memory_limit":     d.int64(&cm.MemoryLimit),
				"max_tool_calls":   d.integer(&cm.MaxToolCalls),
				"max_output_bytes": d.integer(&cm.MaxOutputBytes),
			})
		},
	})
}

func (d *decoder) builtin(path []string, v any, b *Builtin) {
	d.table(path, v, map[string]fieldFunc{
		"tools": d.strList(&b.Tools),
		"fetch_url": func(p []string, v any) {
			f := &b.FetchURL
			d.table(p, v, map[string]fieldFunc{
				"timeout":       d.duration(&f.Timeout),
				"max_bytes":     d.int64(&f.MaxBytes),
				"max_chars":     d.integer(&f.MaxChars),
				"allow_private": d.boolean(&f.AllowPrivate),
				"allow_hosts":   d.strList(&f.AllowHosts),
				"user_agent":    d.str(&f.UserAgent),
			})
		},
		"web_search": func(p []string, v any) {
			w := &b.WebSearch
			d.table(p, v, map[string]fieldFunc{
				"backend":     d.str(&w.Backend),
				"url":         d.str(&w.URL),
				"api_key_env": d.str(&w.APIKeyEnv),
				"max_results": d.integer(&w.MaxResults),
				"timeout":     d.duration(&w.Timeout),
			})
		},
		"files": func(p []string, v any) {
			f := &b.Files
			d.table(p, v, map[string]fieldFunc{
				"roots":          d.strList(&f.Roots),
				"max_file_bytes": d.int64(&f.MaxFileBytes),
				"max_results":    d.integer(&f.MaxResults),
			})
		},
		"doc_search": func(p []string, v any) {
			s := &b.DocSearch
			d.table(p, v, map[string]fieldFunc{
				"roots":            d.strList(&s.Roots),
				"extensions":       d.strList(&s.Extensions),
				"index":            d.str(&s.Index),
				"refresh_interval": d.duration(&s.RefreshInterval),
				"max_file_bytes":   d.int64(&s.MaxFileBytes),
				"max_results":      d.integer(&s.MaxResults),
			})
		},
		"calculate": func(p []string, v any) {
			d.table(p, v, map[string]fieldFunc{"precision": d.integer(&b.Calculate.Precision)})
		},
	})
}

func (d *decoder) subAgent(path []string, v any, a *SubAgent) {
	d.table(path, v, map[string]fieldFunc{
		"description":    d.str(&a.Description),
		"instructions":   d.str(&a.Instructions),
		"model":          d.str(&a.Model),
		"tools":          d.strList(&a.Tools),
		"max_iterations": d.integer(&a.MaxIterations),
		"limits":         func(p []string, v any) { d.limits(p, v, &a.Limits) },
	})
}

func (d *decoder) agent(path []string, v any, a *Agent) {
	d.table(path, v, map[string]fieldFunc{
		"name":              d.str(&a.Name),
		"description":       d.str(&a.Description),
		"instructions":      d.str(&a.Instructions),
		"max_iterations":    d.integer(&a.MaxIterations),
		"max_tool_calls":    d.integer(&a.MaxToolCalls),
		"tool_timeout":      d.duration(&a.ToolTimeout),
		"temperature":       d.floatPtr(&a.Temperature),
		"citation_style":    d.str(&a.CitationStyle),
		"max_conversations": d.integer(&a.MaxConversations),
		"conversation_ttl":  d.duration(&a.ConversationTTL),
		"output_retries":    d.integer(&a.OutputRetries),
		"tool_search":       func(p []string, v any) { d.toolSearch(p, v, &a.ToolSearch) },
		// The short form's threshold, beside `tool_search = "MODE"` (which leaves no table to hold it).
		"tool_search_threshold": d.integer(&a.ToolSearch.Threshold),
		"output": func(p []string, v any) {
			o := &Output{}
			d.table(p, v, map[string]fieldFunc{
				"schema":      d.jsonTable(&o.Schema),
				"schema_file": d.str(&o.SchemaFile),
			})
			a.Output = o
		},
	})
}

// toolSearch decodes [agent.tool_search], or its short form: the mode as a string.
func (d *decoder) toolSearch(path []string, v any, ts *ToolSearch) {
	if mode, ok := v.(string); ok {
		d.str(&ts.Mode)(path, mode)
		return
	}
	d.table(path, v, map[string]fieldFunc{
		"mode":             d.str(&ts.Mode),
		"threshold":        d.integer(&ts.Threshold),
		"embeddings_model": d.str(&ts.EmbeddingsModel),
		"base_url":         d.str(&ts.BaseURL),
		"api_key_env":      d.str(&ts.APIKeyEnv),
	})
}

// jsonTable decodes a table taken as it is, as JSON: a JSON Schema written in TOML. Its strings are not expanded
// (a pattern may hold "$").
func (d *decoder) jsonTable(dst *json.RawMessage) fieldFunc {
	return func(path []string, v any) {
		m, ok := v.(map[string]any)
		if !ok {
			d.fail(path, "must be a table (got %s)", describe(v))
			return
		}
		b, err := json.Marshal(m)
		if err != nil {
			d.fail(path, "cannot be written as JSON: %v", err)
			return
		}
		*dst = b
	}
}

func (d *decoder) model(path []string, v any, m *Model) {
	d.table(path, v, map[string]fieldFunc{
		"provider":          d.str(&m.Provider),
		"model":             d.str(&m.Model),
		"base_url":          d.str(&m.BaseURL),
		"api_key_env":       d.str(&m.APIKeyEnv),
		"request_timeout":   d.duration(&m.RequestTimeout),
		"idle_timeout":      d.duration(&m.IdleTimeout),
		"max_retries":       d.integer(&m.MaxRetries),
		"max_tokens":        d.integer(&m.MaxTokens),
		"context_tokens":    d.integer(&m.ContextTokens),
		"script":            d.str(&m.Script),
		"structured_output": d.boolPtr(&m.StructuredOutput),
	})
}

func (d *decoder) limits(path []string, v any, l *Limits) {
	d.table(path, v, map[string]fieldFunc{
		"requests":     d.integer(&l.Requests),
		"total_tokens": d.int64(&l.TotalTokens),
		"tool_calls":   d.integer(&l.ToolCalls),
	})
}

func (d *decoder) toolPolicy(path []string, v any, p *ToolPolicy) {
	d.table(path, v, map[string]fieldFunc{
		"enabled":             d.boolPtr(&p.Enabled),
		"exclusive":           d.boolean(&p.Exclusive),
		"forced":              d.boolean(&p.Forced),
		"takes_control":       d.boolean(&p.TakesControl),
		"require_approval":    d.boolean(&p.RequireApproval),
		"prompt":              d.str(&p.Prompt),
		"format_prompt":       d.str(&p.FormatPrompt),
		"retry_on_disconnect": d.boolean(&p.RetryOnDisconnect),
		"read_only":           d.boolean(&p.ReadOnly),
		"evaluation_checks":   d.strList(&p.EvaluationChecks),
		"pinned":              d.boolPtr(&p.Pinned),
	})
}

func (d *decoder) mcpServer(path []string, v any, s *MCPServer) {
	d.table(path, v, map[string]fieldFunc{
		"transport":           d.str(&s.Transport),
		"command":             d.str(&s.Command),
		"args":                d.strList(&s.Args),
		"env":                 d.strMap(&s.Env),
		"cwd":                 d.str(&s.Cwd),
		"env_passthrough":     d.strList(&s.EnvPassthrough),
		"url":                 d.str(&s.URL),
		"headers":             d.strMap(&s.Headers),
		"auth":                d.str(&s.Auth),
		"client_id":           d.str(&s.ClientID),
		"client_secret_env":   d.str(&s.ClientSecretEnv),
		"client_metadata_url": d.str(&s.ClientMetadataURL),
		"scopes":              d.strList(&s.Scopes),
		"redirect_port":       d.integer(&s.RedirectPort),
		"protocol_version":    d.str(&s.ProtocolVersion),
		"connect_timeout":     d.duration(&s.ConnectTimeout),
		"reconnect_wait":      d.duration(&s.ReconnectWait),
		"required":            d.boolean(&s.Required),
		"include":             d.strList(&s.Include),
		"exclude":             d.strList(&s.Exclude),
		"prefix":              d.strPtr(&s.Prefix),
		"use_instructions":    d.boolPtr(&s.UseInstructions),
		"allow_sampling":      d.boolPtr(&s.AllowSampling),
		"sampling_max_tokens": d.integer(&s.SamplingMaxTokens),
		"sampling":            d.str(&s.Sampling),
	})
}

func (d *decoder) a2aPeer(path []string, v any, p *A2APeer) {
	d.table(path, v, map[string]fieldFunc{
		"url":              d.str(&p.URL),
		"description":      d.str(&p.Description),
		"headers":          d.strMap(&p.Headers),
		"timeout":          d.duration(&p.Timeout),
		"required":         d.boolean(&p.Required),
		"protocol_version": d.str(&p.ProtocolVersion),
		"poll_interval":    d.duration(&p.PollInterval),
	})
}

func (d *decoder) serve(path []string, v any, s *Serve) {
	d.table(path, v, map[string]fieldFunc{
		"tool_name":         d.str(&s.ToolName),
		"http":              d.str(&s.HTTP),
		"a2a":               d.str(&s.A2A),
		"a2a_public_url":    d.str(&s.A2APublicURL),
		"skills":            d.skills(&s.Skills),
		"card_lists_tools":  d.boolean(&s.CardListsTools),
		"path":              d.str(&s.Path),
		"stateless":         d.boolean(&s.Stateless),
		"auth_token_env":    d.str(&s.AuthTokenEnv),
		"auth_tokens_env":   d.strList(&s.AuthTokensEnv),
		"allowed_hosts":     d.strList(&s.AllowedHosts),
		"allowed_origins":   d.strList(&s.AllowedOrigins),
		"max_body_bytes":    d.int64(&s.MaxBodyBytes),
		"expose_tools":      d.boolean(&s.ExposeTools),
		"gateway_tools":     d.str(&s.GatewayTools),
		"expose_prompts":    d.boolPtr(&s.ExposePrompts),
		"expose_resources":  d.boolPtr(&s.ExposeResources),
		"progress_interval": d.duration(&s.ProgressInterval),
		"input_timeout":     d.duration(&s.InputTimeout),
		"max_waiting_calls": d.integer(&s.MaxWaitingCalls),
		"oauth":             d.serveOAuth(&s.OAuth),

		"read_header_timeout":  d.duration(&s.ReadHeaderTimeout),
		"read_body_timeout":    d.duration(&s.ReadBodyTimeout),
		"idle_timeout":         d.duration(&s.IdleTimeout),
		"max_sessions":         d.integer(&s.MaxSessions),
		"session_idle_timeout": d.duration(&s.SessionIdleTimeout),

		"max_sessions_per_subject": d.integer(&s.MaxSessionsPerSubject),
		"max_tasks_per_subject":    d.integer(&s.MaxTasksPerSubject),
	})
}

// serveOAuth decodes [serve.oauth].
func (d *decoder) serveOAuth(dst **ServeOAuth) fieldFunc {
	return func(path []string, v any) {
		o := &ServeOAuth{}
		d.table(path, v, map[string]fieldFunc{
			"issuer":          d.str(&o.Issuer),
			"audience":        d.str(&o.Audience),
			"jwks_url":        d.str(&o.JWKSURL),
			"required_scopes": d.strList(&o.RequiredScopes),
		})
		*dst = o
	}
}

// skills decodes [[serve.skills]]. A skill with a problem is kept with what could be decoded, so that its other
// fields are still checked; Validate leaves out the problems of keys that failed to decode.
func (d *decoder) skills(dst *[]Skill) fieldFunc {
	return func(path []string, v any) {
		out := []Skill{}
		d.tables(path, v, func(path []string, v any) {
			var s Skill
			d.table(path, v, map[string]fieldFunc{
				"id":          d.str(&s.ID),
				"name":        d.str(&s.Name),
				"description": d.str(&s.Description),
				"tags":        d.strList(&s.Tags),
				"examples":    d.strList(&s.Examples),
			})
			out = append(out, s)
		})
		if !d.failed[formatKey(path)] {
			*dst = out
		}
	}
}

// tables decodes an array of tables, written as [[header]] sections or as an array of inline tables. The path of
// each element ends in its indexPart, so that its problems carry its own line and a key such as serve.skills[2].id.
func (d *decoder) tables(path []string, v any, each func(path []string, v any)) {
	var list []any
	switch x := v.(type) {
	case []map[string]any:
		for _, m := range x {
			list = append(list, m)
		}
	case []any:
		list = x
	default:
		d.fail(path, "must be an array of tables (got %s)", describe(v))
		return
	}
	for i, e := range list {
		each(append(slices.Clip(path), indexPart(i+1)), e)
	}
}

// text expands the variables in a string value. ok is false when the value is not a string or cannot be
// expanded; the problem is then recorded under key.
func (d *decoder) text(path []string, key string, v any, want string) (s string, used, ok bool) {
	raw, isString := v.(string)
	if !isString {
		d.failed[formatKey(path)] = true
		d.issues.addKey(path, key, "must be %s (got %s)", want, describe(v))
		return "", false, false
	}
	s, used, err := expand(raw, d.env)
	if err != nil {
		d.failed[formatKey(path)] = true
		d.issues.addKey(path, key, "%v", err)
		return "", used, false
	}
	return s, used, true
}

func (d *decoder) str(dst *string) fieldFunc {
	return func(path []string, v any) {
		if s, _, ok := d.text(path, formatKey(path), v, "a string"); ok {
			*dst = s
		}
	}
}

func (d *decoder) strPtr(dst **string) fieldFunc {
	return func(path []string, v any) {
		if s, _, ok := d.text(path, formatKey(path), v, "a string"); ok {
			*dst = &s
		}
	}
}

func (d *decoder) strList(dst *[]string) fieldFunc {
	return func(path []string, v any) {
		list, ok := v.([]any)
		if !ok {
			d.fail(path, "must be an array of strings (got %s)", describe(v))
			return
		}
		out := make([]string, 0, len(list))
		good := true
		for i, e := range list {
			s, _, ok := d.text(path, fmt.Sprintf("%s[%d]", formatKey(path), i), e, "a string")
			good = good && ok
			out = append(out, s)
		}
		if good {
			*dst = out
		}
	}
}

func (d *decoder) strMap(dst *map[string]string) fieldFunc {
	return func(path []string, v any) {
		m, ok := v.(map[string]any)
		if !ok {
			d.fail(path, "must be a table of strings (got %s)", describe(v))
			return
		}
		out := make(map[string]string, len(m))
		good := true
		for _, k := range sortedKeys(m) {
			sub := append(slices.Clip(path), k)
			s, _, ok := d.text(sub, formatKey(sub), m[k], "a string")
			good = good && ok
			out[k] = s
		}
		if good {
			*dst = out
		}
	}
}

func (d *decoder) boolean(dst *bool) fieldFunc {
	return func(path []string, v any) {
		if b, ok := d.boolValue(path, v); ok {
			*dst = b
		}
	}
}

func (d *decoder) boolPtr(dst **bool) fieldFunc {
	return func(path []string, v any) {
		if b, ok := d.boolValue(path, v); ok {
			*dst = &b
		}
	}
}

func (d *decoder) boolValue(path []string, v any) (bool, bool) {
	const want = "a boolean"
	if b, ok := v.(bool); ok {
		return b, true
	}
	s, ok := d.fromVariable(path, v, want)
	if !ok {
		return false, false
	}
	switch strings.TrimSpace(s) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	d.fail(path, "must be %s (got %q after expansion)", want, s)
	return false, false
}

func (d *decoder) integer(dst *int) fieldFunc {
	return func(path []string, v any) {
		if n, ok := d.intValue(path, v); ok {
			if n < math.MinInt || n > math.MaxInt {
				d.fail(path, "out of range (got %d)", n)
				return
			}
			*dst = int(n)
		}
	}
}

func (d *decoder) int64(dst *int64) fieldFunc {
	return func(path []string, v any) {
		if n, ok := d.intValue(path, v); ok {
			*dst = n
		}
	}
}

func (d *decoder) intValue(path []string, v any) (int64, bool) {
	const want = "an integer"
	if n, ok := v.(int64); ok {
		return n, true
	}
	s, ok := d.fromVariable(path, v, want)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		d.fail(path, "must be %s (got %q after expansion)", want, s)
		return 0, false
	}
	return n, true
}

func (d *decoder) floatPtr(dst **float64) fieldFunc {
	return func(path []string, v any) {
		const want = "a number"
		var f float64
		switch x := v.(type) {
		case float64:
			f = x
		case int64:
			f = float64(x)
		default:
			s, ok := d.fromVariable(path, v, want)
			if !ok {
				return
			}
			var err error
			if f, err = strconv.ParseFloat(strings.TrimSpace(s), 64); err != nil {
				d.fail(path, "must be %s (got %q after expansion)", want, s)
				return
			}
		}
		*dst = &f
	}
}

func (d *decoder) duration(dst *Duration) fieldFunc {
	return func(path []string, v any) {
		s, _, ok := d.text(path, formatKey(path), v, `a duration such as "30s" or "2m"`)
		if !ok {
			return
		}
		dur, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			d.fail(path, `must be a duration such as "30s" or "2m" (got %q)`, s)
			return
		}
		*dst = Duration{dur}
	}
}

// fromVariable returns the expansion of a string that refers to a variable, for a field of another type.
// Any other value is a type error.
func (d *decoder) fromVariable(path []string, v any, want string) (string, bool) {
	raw, isString := v.(string)
	if !isString || !strings.Contains(raw, "${") {
		d.fail(path, "must be %s (got %s)", want, describe(v))
		return "", false
	}
	s, used, ok := d.text(path, formatKey(path), v, want)
	if !ok {
		return "", false
	}
	if !used {
		d.fail(path, "must be %s (got %s)", want, describe(v))
		return "", false
	}
	return s, true
}

// describe names a decoded TOML value's type for a message, with the value itself when it is short.
func describe(v any) string {
	switch x := v.(type) {
	case string:
		if len(x) > 40 {
			return "a string"
		}
		return fmt.Sprintf("string %q", x)
	case int64:
		return fmt.Sprintf("integer %d", x)
	case float64:
		return fmt.Sprintf("float %v", x)
	case bool:
		return fmt.Sprintf("boolean %v", x)
	case map[string]any:
		return "a table"
	case []map[string]any:
		return "an array of tables"
	case []any:
		return "an array"
	case nil:
		return "nothing"
	}
	return "a date-time"
}

// suggest returns ` (did you mean "x"?)` for the known key closest to an unknown one, or "".
func suggest(unknown string, fields map[string]fieldFunc) string {
	best, _ := closest(unknown, sortedKeys(fields))
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// closest returns the name of known closest to unknown, the first in alphabetical order among equals, and its edit
// distance; "" when none is within two edits (farther is not a typo).
func closest(unknown string, known []string) (string, int) {
	best, bestDist := "", 3
	for _, k := range known {
		if dist := editDistance(unknown, k); dist < bestDist || dist == bestDist && k < best {
			best, bestDist = k, dist
		}
	}
	return best, bestDist
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
