package values

import (
	"context"
	"fmt"
	"log/slog"
)

// LogHandler wraps h so that every record's message and attribute values
// have their secret texts replaced by Redacted (Text): hooks' output,
// errors and values logged by any part (docs/operator.md, "Secrets").
// While the Redactor is empty records pass unchanged.
func (r *Redactor) LogHandler(h slog.Handler) slog.Handler {
	return &redactHandler{r: r, h: h}
}

type redactHandler struct {
	r *Redactor
	h slog.Handler
}

var _ slog.Handler = (*redactHandler)(nil)

func (h *redactHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h *redactHandler) Handle(ctx context.Context, rec slog.Record) error {
	if h.r.Empty() {
		return h.h.Handle(ctx, rec)
	}
	out := slog.NewRecord(rec.Time, rec.Level, h.r.Text(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h *redactHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = h.attr(a)
	}
	return &redactHandler{r: h.r, h: h.h.WithAttrs(red)}
}

func (h *redactHandler) WithGroup(name string) slog.Handler {
	return &redactHandler{r: h.r, h: h.h.WithGroup(name)}
}

// attr redacts one attribute: strings and errors always, other values
// when their printed form holds a secret (they are logged as that text
// then).
func (h *redactHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.Text(v.String()))
	case slog.KindGroup:
		g := v.Group()
		red := make([]any, len(g))
		for i, e := range g {
			red[i] = h.attr(e)
		}
		return slog.Group(a.Key, red...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, h.r.Text(x.Error()))
		case fmt.Stringer:
			s := x.String()
			if t := h.r.Text(s); t != s {
				return slog.String(a.Key, t)
			}
		default:
			s := fmt.Sprint(x)
			if t := h.r.Text(s); t != s {
				return slog.String(a.Key, t)
			}
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
