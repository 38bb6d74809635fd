package cluster

import (
	"log/slog"
	"time"
)

// startPhases logs, at debug level, how long each step of a node's start took and the time since
// the start began: where a slow start goes (docs/bench/startup.md), read from any node's log with
// debug logging on.
type startPhases struct {
	log         *slog.Logger
	began, last time.Time
}

func newStartPhases(log *slog.Logger) *startPhases {
	now := time.Now()
	return &startPhases{log: log, began: now, last: now}
}

// done logs the step that just ended.
func (p *startPhases) done(step string) {
	now := time.Now()
	p.log.Debug("start phase done", "phase", step, "took", now.Sub(p.last).Round(time.Millisecond), "sinceStart", now.Sub(p.began).Round(time.Millisecond))
	p.last = now
}
