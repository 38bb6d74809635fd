package main

import (
	"context"
	"errors"
	"log/slog"
)

// stopCutHandler lowers to DEBUG the ERROR records of libraries (klog in client-go's leader
// election and reflectors) whose error is only the node's own stop cancelling a request in
// flight: "Error initially creating lease lock: context canceled" is how a clean stop looks
// from inside client-go, not a fault an operator should be shown.
type stopCutHandler struct {
	slog.Handler
}

func (h stopCutHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError && recordCancelled(r) {
		lowered := slog.NewRecord(r.Time, slog.LevelDebug, r.Message, r.PC)
		r.Attrs(func(a slog.Attr) bool {
			lowered.AddAttrs(a)
			return true
		})
		if !h.Handler.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		r = lowered
	}
	return h.Handler.Handle(ctx, r)
}

func (h stopCutHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return stopCutHandler{h.Handler.WithAttrs(attrs)}
}

func (h stopCutHandler) WithGroup(name string) slog.Handler {
	return stopCutHandler{h.Handler.WithGroup(name)}
}

// recordCancelled reports whether any error attribute of r is, or wraps, context.Canceled.
func recordCancelled(r slog.Record) bool {
	cancelled := false
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && errors.Is(err, context.Canceled) {
			cancelled = true
			return false
		}
		return true
	})
	return cancelled
}
