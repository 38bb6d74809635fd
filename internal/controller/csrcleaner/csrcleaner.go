package csrcleaner

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	certificateslisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "csrcleaner"

// Kubernetes' deadlines.
const (
	pollingInterval = time.Hour
	// decidedExpiration applies to issued, denied and failed requests, from the condition's last update.
	decidedExpiration = time.Hour
	// pendingExpiration applies to requests without any condition, from their creation.
	pendingExpiration = 24 * time.Hour
)

// Config is what the cleaner needs besides the common controller dependencies.
type Config struct {
	// Logger receives the controller's log lines; nil discards them.
	Logger *slog.Logger
}

// Controller deletes finished and abandoned requests.
type Controller struct {
	client kubernetes.Interface
	lister certificateslisters.CertificateSigningRequestLister
	clock  clock.WithTicker
	log    *slog.Logger
	synced cache.InformerSynced
}

// New builds the cleaner.
func New(deps ctrlutil.Deps, cfg Config) *Controller {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	informer := deps.Informers.Certificates().V1().CertificateSigningRequests()
	return &Controller{
		client: deps.Client, lister: informer.Lister(), clock: deps.Clock, log: cfg.Logger,
		synced: informer.Informer().HasSynced,
	}
}

// Run sweeps once the cache has synced and then every hour until ctx is done. Sweeps are cheap
// and idempotent, so one worker does them whatever workers says.
func (c *Controller) Run(ctx context.Context, _ int) {
	defer utilruntime.HandleCrash()
	if !ctrlutil.WaitForCaches(ctx, c.log, c.synced) {
		return
	}
	c.sweepLogged(ctx)
	// The ticker starts after the first sweep, so a test's fake clock sees its waiter only then.
	ticker := c.clock.NewTicker(pollingInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
			c.sweepLogged(ctx)
		}
	}
}

func (c *Controller) sweepLogged(ctx context.Context) {
	if err := c.Sweep(ctx); err != nil {
		c.log.Error("sweep failed", "err", err)
	}
}

// Sweep deletes every request that is due, going on past failures and reporting them together.
func (c *Controller) Sweep(ctx context.Context) error {
	csrs, err := c.lister.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list csrs: %w", err)
	}
	now := c.clock.Now()
	var errs []error
	for _, csr := range csrs {
		why := dueReason(csr, now)
		if why == "" {
			continue
		}
		err := c.client.CertificatesV1().CertificateSigningRequests().Delete(ctx, csr.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &csr.UID},
		})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete csr %s: %w", csr.Name, err))
			continue
		}
		c.log.Info("deleted certificate signing request", "csr", csr.Name, "why", why)
	}
	return errors.Join(errs...)
}

// dueReason says why csr should be deleted at now, "" when it should stay.
func dueReason(csr *certificatesv1.CertificateSigningRequest, now time.Time) string {
	if len(csr.Status.Conditions) == 0 && len(csr.Status.Certificate) == 0 && olderThan(csr.CreationTimestamp, now, pendingExpiration) {
		return "pending for more than 24h"
	}
	for _, cond := range csr.Status.Conditions {
		if !olderThan(cond.LastUpdateTime, now, decidedExpiration) {
			continue
		}
		switch {
		case cond.Type == certificatesv1.CertificateApproved && len(csr.Status.Certificate) > 0:
			return "issued more than 1h ago"
		case cond.Type == certificatesv1.CertificateDenied:
			return "denied more than 1h ago"
		case cond.Type == certificatesv1.CertificateFailed:
			return "failed more than 1h ago"
		}
	}
	if certificateExpired(csr.Status.Certificate, now) {
		return "certificate expired"
	}
	return ""
}

func olderThan(t metav1.Time, now time.Time, d time.Duration) bool {
	return !t.IsZero() && now.Sub(t.Time) > d
}

// certificateExpired reports whether any certificate of the PEM bundle is past its NotAfter.
func certificateExpired(bundle []byte, now time.Time) bool {
	for {
		block, rest := pem.Decode(bundle)
		if block == nil {
			return false
		}
		bundle = rest
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err == nil && now.After(cert.NotAfter) {
			return true
		}
	}
}
