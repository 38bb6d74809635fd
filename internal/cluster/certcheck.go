package cluster

import (
	"context"
	"log/slog"
	"path/filepath"
	"time"

	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/pki"
)

// certCheckInterval is how often a running node looks at its certificates' expiry.
const certCheckInterval = 12 * time.Hour

// certChecker logs, once per check, the node's certificates (<data-dir>/pki/*.crt) that expire
// within pki.RenewWithin and those renewed since the previous check: the first check compares with
// the files as they were before the node started (when skiff renews the leaves it issues), later
// ones with the check before (a joined node's renewed client certificate). The decision is
// pki.CheckExpiries; this is its thin I/O.
type certChecker struct {
	dir   string
	clock clock.WithTicker
	log   *slog.Logger
	last  []pki.CertExpiry
}

// newCertChecker reads the certificates as they are now, before the node ensures its own.
func newCertChecker(cfg *Config, c clock.WithTicker) *certChecker {
	dir := filepath.Join(cfg.DataDir, "pki")
	last, err := pki.ReadExpiries(dir)
	if err != nil {
		cfg.Logger.Warn("read certificates", "dir", dir, "err", err)
	}
	return &certChecker{dir: dir, clock: c, log: cfg.Logger.With("component", "pki"), last: last}
}

// check reads the certificates again and logs what expires soon and what was renewed.
func (c *certChecker) check() {
	current, err := pki.ReadExpiries(c.dir)
	if err != nil {
		c.log.Warn("read certificates", "dir", c.dir, "err", err)
		return
	}
	now := c.clock.Now()
	found := pki.CheckExpiries(c.last, current, now, pki.RenewWithin)
	c.last = current
	for _, r := range found.Renewed {
		c.log.Info("certificate renewed", "name", r.Name, "path", r.Path, "notAfter", r.NotAfter.UTC().Format(time.RFC3339))
	}
	for _, e := range found.Expiring {
		c.log.Warn("certificate expires within 30 days", "name", e.Name, "path", e.Path, "notAfter", e.NotAfter.UTC().Format(time.RFC3339),
			"in", e.NotAfter.Sub(now).Round(time.Hour).String(),
			"fix", "a leaf a node issues itself is renewed while it runs (at two thirds of its lifetime; skiff certificate rotate renews now); one issued through the API (a joined node's) by its CSR; a CA must be replaced by hand")
	}
	for _, d := range found.Damaged {
		c.log.Error("certificate unreadable", "name", d.Name, "path", d.Path, "err", d.Error)
	}
	c.log.Debug("certificates checked", "count", len(current), "expiring", len(found.Expiring), "renewed", len(found.Renewed))
}

// run checks at once and then every certCheckInterval until ctx ends.
func (c *certChecker) run(ctx context.Context) error {
	c.check()
	t := c.clock.NewTicker(certCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
			c.check()
		}
	}
}
