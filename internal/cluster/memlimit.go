package cluster

import (
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// The Go runtime's soft memory limit (debug.SetMemoryLimit) for the skiff process.
//
// With the collector's default pacing (GOGC=100) the heap grows to twice what is live before it
// collects, so a control plane holding 400 MiB of objects sits near 800 MiB of RSS, half of it
// garbage. A soft limit makes the collector run sooner as the heap nears it, trading CPU for
// memory only when memory is short; under it nothing changes. The limit is soft: when more than it
// is live, the runtime caps the collector's CPU (about half) rather than failing.

// MemoryLimitOff is Config.MemoryLimit for "no limit from skiff" (the GOMEMLIMIT environment
// variable, when set, still applies: the runtime reads it itself).
const MemoryLimitOff = -1

// ParseMemoryLimit reads --memory-limit: "" or "off" (no limit from skiff), or a quantity such as
// "1Gi" or "900Mi".
func ParseMemoryLimit(s string) (int64, error) {
	switch strings.TrimSpace(s) {
	case "", "off", "none":
		return MemoryLimitOff, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("--memory-limit %q: %w", s, err)
	}
	v, ok := q.AsInt64()
	if !ok || v <= 0 {
		return 0, fmt.Errorf("--memory-limit %q: must be a positive number of bytes (e.g. 1Gi), or off", s)
	}
	return v, nil
}

// memoryLimitPlan is what to do about the runtime's soft limit: set it to Limit, or leave it.
type memoryLimitPlan struct {
	Set   bool
	Limit int64
	// Source says where the limit comes from, for the log.
	Source string
}

// planMemoryLimit decides the soft limit from the configured value (bytes, MemoryLimitOff or 0
// meaning off) and GOMEMLIMIT from the environment: a value given to skiff wins over the
// environment; otherwise the environment's limit (already applied by the runtime) stays.
func planMemoryLimit(configured int64, env string) memoryLimitPlan {
	if configured > 0 {
		return memoryLimitPlan{Set: true, Limit: configured, Source: "--memory-limit"}
	}
	if env != "" && env != "off" {
		return memoryLimitPlan{Source: "GOMEMLIMIT"}
	}
	return memoryLimitPlan{Source: "none"}
}

// applyMemoryLimit carries out the plan; setLimit is debug.SetMemoryLimit in production.
func applyMemoryLimit(plan memoryLimitPlan, setLimit func(int64) int64, log *slog.Logger) {
	if plan.Set {
		setLimit(plan.Limit)
	}
	current := setLimit(-1) // a negative value reads the limit without changing it
	if current == math.MaxInt64 {
		log.Info("Go runtime soft memory limit", "limit", "none", "source", plan.Source)
		return
	}
	log.Info("Go runtime soft memory limit", "limit", resource.NewQuantity(current, resource.BinarySI).String(), "source", plan.Source)
}

// setProcessMemoryLimit is the production setter.
func setProcessMemoryLimit(limit int64) int64 { return debug.SetMemoryLimit(limit) }
