package cluster

import "github.com/skiff-sh/skiff/internal/apiserver"

// defaultTolerationSeconds are the seconds of the not-ready and unreachable tolerations the
// DefaultTolerationSeconds admission plugin adds: the flags', else kube-apiserver's 300.
func defaultTolerationSeconds(cfg *Config) (notReady, unreachable int64) {
	notReady, unreachable = apiserver.DefaultTolerationSecondsValue, apiserver.DefaultTolerationSecondsValue
	if cfg.DefaultNotReadyTolerationSeconds != nil {
		notReady = *cfg.DefaultNotReadyTolerationSeconds
	}
	if cfg.DefaultUnreachableTolerationSeconds != nil {
		unreachable = *cfg.DefaultUnreachableTolerationSeconds
	}
	return notReady, unreachable
}
