package value

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// Reloader serves the transformers of an EncryptionConfiguration file and follows changes to the
// file while it runs (Kubernetes' --encryption-provider-config-automatic-reload): a rotation adds
// a key, every API server picks it up, and no restart is needed. A file that no longer parses is
// logged and the configuration in force is kept.
type Reloader struct {
	path    string
	log     *slog.Logger
	current atomic.Pointer[Config]
	// loaded is called with the hash of each configuration put in force (for metrics).
	loaded func(hash string, err error)
}

// NewReloader loads path; the first load must succeed.
func NewReloader(path string, log *slog.Logger, loaded func(hash string, err error)) (*Reloader, error) {
	cfg, err := LoadFile(path)
	if err != nil {
		return nil, err
	}
	if loaded == nil {
		loaded = func(string, error) {}
	}
	r := &Reloader{path: path, log: log, loaded: loaded}
	r.current.Store(cfg)
	loaded(cfg.Hash, nil)
	return r, nil
}

// Hash identifies the configuration in force.
func (r *Reloader) Hash() string { return r.current.Load().Hash }

// Run checks the file every interval until ctx ends.
func (r *Reloader) Run(ctx context.Context, clk clock.WithTicker, interval time.Duration) {
	ticker := clk.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
			r.check()
		}
	}
}

// check puts the file's configuration in force if it changed and is valid.
func (r *Reloader) check() {
	data, err := os.ReadFile(r.path)
	if err != nil {
		r.log.Error("encryption configuration unreadable; keeping the one in force", "path", r.path, "err", err)
		r.loaded("", err)
		return
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) == r.Hash() {
		return
	}
	cfg, err := Parse(data)
	if err != nil {
		r.log.Error("encryption configuration invalid; keeping the one in force", "path", r.path, "err", err)
		r.loaded("", err)
		return
	}
	r.current.Store(cfg)
	r.loaded(cfg.Hash, nil)
	r.log.Info("encryption configuration reloaded", "path", r.path, "hash", cfg.Hash[:12])
}

// For returns the transformer of a resource under whatever configuration is in force at each
// call, so a store built once follows reloads.
func (r *Reloader) For(group, resource string) Transformer {
	return reloading{r: r, group: group, resource: resource}
}

type reloading struct {
	r               *Reloader
	group, resource string
}

func (t reloading) TransformFromStorage(data []byte, key string) ([]byte, bool, error) {
	if tr := t.r.current.Load().For(t.group, t.resource); tr != nil {
		return tr.TransformFromStorage(data, key)
	}
	// A resource the configuration does not name: plain values read as they are, values sealed
	// under a configuration that named it are refused with a clear error.
	unconfigured := Prefixes{identity: true, writeIdentity: true}
	return unconfigured.TransformFromStorage(data, key)
}

func (t reloading) TransformToStorage(plain []byte, key string) ([]byte, error) {
	if tr := t.r.current.Load().For(t.group, t.resource); tr != nil {
		return tr.TransformToStorage(plain, key)
	}
	return plain, nil
}
