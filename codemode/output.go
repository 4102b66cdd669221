package codemode

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/host"
)

// outcome is how a script ended: its report and log, or the cause of its cancellation.
type outcome struct {
	report    report
	log       []logLine
	cancelled error
}

// structured is Result.Structured of a script, for callers: the value (absent when it was undefined or cut), the log
// lines kept, and the error.
type structured struct {
	Value     json.RawMessage `json:"value,omitempty"`
	Log       []string        `json:"log"`
	Error     *scriptError    `json:"error,omitempty"`
	Truncated bool            `json:"truncated,omitempty"`
}

// result is what the model reads: the value as JSON, then the log, then the error with its line and column, each
// bounded by maxBytes in all, with a note where something was cut.
func (o *outcome) result(maxBytes int) *host.Result {
	var b strings.Builder
	st := structured{Log: []string{}, Error: o.report.Error}
	budget := maxBytes
	if o.report.Error == nil {
		value := "undefined"
		if len(o.report.Value) > 0 {
			value = string(o.report.Value)
		}
		if len(value) > budget {
			fmt.Fprintf(&b, "Returned (cut to %d of its %d bytes):\n%s\n", budget, len(value), cut(value, budget))
			st.Truncated = true
			budget = 0
		} else {
			fmt.Fprintf(&b, "Returned:\n%s\n", value)
			st.Value = o.report.Value
			budget -= len(value)
		}
	}
	if len(o.log) > 0 {
		b.WriteString("Log:\n")
		for i, l := range o.log {
			if l.Level == "dropped" {
				b.WriteString("(log cut: the lines after this were not kept)\n")
				st.Truncated = true
				break
			}
			text := l.Text
			if l.Level == "warn" || l.Level == "error" {
				text = "[" + l.Level + "] " + text
			}
			if len(text) > budget {
				fmt.Fprintf(&b, "%s\n(log cut: %d more lines not shown)\n", cut(text, budget), len(o.log)-i-1)
				st.Log = append(st.Log, cut(text, budget))
				st.Truncated = true
				break
			}
			b.WriteString(text + "\n")
			st.Log = append(st.Log, text)
			budget -= len(text) + 1
		}
	}
	if e := o.report.Error; e != nil {
		if e.Line > 0 {
			fmt.Fprintf(&b, "Error at line %d, column %d: %s\n", e.Line, e.Column, e.Message)
		} else {
			fmt.Fprintf(&b, "Error: %s\n", e.Message)
		}
	}
	data, err := json.Marshal(st)
	if err != nil { // a value the prelude wrote is valid JSON; this is only the guard
		data = nil
	}
	return &host.Result{Text: strings.TrimSuffix(b.String(), "\n"), Structured: data, IsError: o.report.Error != nil}
}

// cut returns s's first n bytes, backing off to the start of a UTF-8 sequence.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:max(n, 0)]
}

// bytesText writes n bytes as people read a limit: "64 MiB", "512 KiB", "1000 bytes".
func bytesText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
