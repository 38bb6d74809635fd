package etcd

import (
	"context"
	"log/slog"
	"slices"
	"sync/atomic"

	"go.uber.org/zap/zapcore"
)

// slogCore is a zapcore.Core that writes etcd's zap logs into skiff's slog logger, so a node logs
// in one format (etcd would otherwise print its own JSON lines beside skiff's).
type slogCore struct {
	log      *slog.Logger
	minLevel zapcore.Level
	fields   []zapcore.Field
	// stopping, once set, turns etcd's errors into debug lines: while the member is being stopped
	// on purpose, its listeners failing with "use of closed network connection" is expected, and a
	// clean stop should print no error.
	stopping *atomic.Bool
}

var _ zapcore.Core = (*slogCore)(nil)

func (c *slogCore) Enabled(l zapcore.Level) bool { return l >= c.minLevel }

func (c *slogCore) With(fields []zapcore.Field) zapcore.Core {
	next := *c
	next.fields = append(slices.Clone(c.fields), fields...)
	return &next
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	level := slogLevel(e.Level)
	if level > slog.LevelInfo && c.stopping != nil && c.stopping.Load() {
		level = slog.LevelDebug
	}
	ctx := context.Background()
	if !c.log.Enabled(ctx, level) {
		return nil
	}
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fields {
		f.AddTo(enc)
	}
	attrs := make([]slog.Attr, 0, len(enc.Fields)+1)
	if e.LoggerName != "" {
		attrs = append(attrs, slog.String("logger", e.LoggerName))
	}
	keys := make([]string, 0, len(enc.Fields))
	for k := range enc.Fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		attrs = append(attrs, slog.Any(k, enc.Fields[k]))
	}
	c.log.LogAttrs(ctx, level, e.Message, attrs...)
	return nil
}

func (c *slogCore) Sync() error { return nil }

func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l <= zapcore.DebugLevel:
		return slog.LevelDebug
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	default:
		return slog.LevelError
	}
}
