package redact

import (
	"context"
	"fmt"
	"log/slog"
)

// Handler returns a slog.Handler that passes each record to h with its message and attribute values redacted by
// Text: errors, strings and anything else printed as text. A log line is printed, so it holds no URL's secret either.
func Handler(h slog.Handler) slog.Handler {
	if _, ok := h.(handler); ok {
		return h
	}
	return handler{h}
}

type handler struct{ next slog.Handler }

func (h handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

func (h handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, Text(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = attr(a)
	}
	return handler{h.next.WithAttrs(clean)}
}

func (h handler) WithGroup(name string) slog.Handler { return handler{h.next.WithGroup(name)} }

// attr redacts an attribute's value; numbers, booleans, times and durations hold no URL and stay as they are.
func attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, Text(v.String()))
	case slog.KindGroup:
		group := v.Group()
		clean := make([]any, len(group))
		for i, g := range group {
			clean[i] = attr(g)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.Any(a.Key, Error(x))
		case fmt.Stringer:
			return slog.String(a.Key, Text(x.String()))
		case []byte:
			return slog.String(a.Key, Text(string(x)))
		default:
			s := fmt.Sprint(x)
			if t := Text(s); t != s {
				return slog.String(a.Key, t)
			}
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
