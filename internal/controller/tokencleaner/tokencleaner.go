package tokencleaner

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "tokencleaner"

const (
	tokenNamespace = "kube-system"
	tokenType      = corev1.SecretType("bootstrap.kubernetes.io/token")
	tokenPrefix    = "bootstrap-token-"
	expirationKey  = "expiration"
)

// Due says what to do with a Secret at now: delete it (its expiration passed or does not parse),
// look again after wait (it expires later), or leave it for good (not a token, or no expiration).
func Due(s *corev1.Secret, now time.Time) (remove bool, wait time.Duration) {
	if s.Namespace != tokenNamespace || s.Type != tokenType || !strings.HasPrefix(s.Name, tokenPrefix) {
		return false, 0
	}
	raw, ok := s.Data[expirationKey]
	if !ok {
		return false, 0
	}
	exp, err := time.Parse(time.RFC3339, string(raw))
	if err != nil {
		return true, 0
	}
	if !now.Before(exp) {
		return true, 0
	}
	return false, exp.Sub(now)
}

// Controller deletes expired token Secrets.
type Controller struct {
	client kubernetes.Interface
	lister corelisters.SecretLister
	clock  clock.PassiveClock
	log    *slog.Logger
	loop   *ctrlutil.Loop
	synced cache.InformerSynced
}

// New builds the cleaner.
func New(deps ctrlutil.Deps) (*Controller, error) {
	informer := deps.Informers.Core().V1().Secrets()
	c := &Controller{client: deps.Client, lister: informer.Lister(), clock: deps.Clock, log: deps.Log(), synced: informer.Informer().HasSynced}
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	enqueue := func(obj any) {
		if s, ok := obj.(*corev1.Secret); ok && s.Namespace == tokenNamespace && s.Type == tokenType {
			c.loop.Enqueue(obj)
		}
	}
	if _, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) },
	}); err != nil {
		return nil, fmt.Errorf("secret informer handler: %w", err)
	}
	return c, nil
}

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers, c.synced) }

// Sync deletes the token Secret named key if it has expired, or looks again when it will.
func (c *Controller) Sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	s, err := c.lister.Secrets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get secret %s: %w", key, err)
	}
	remove, wait := Due(s, c.clock.Now())
	if wait > 0 {
		c.loop.EnqueueAfter(key, wait)
		return nil
	}
	if !remove {
		return nil
	}
	// The UID precondition keeps a token re-created under the same name since the cache saw it.
	err = c.client.CoreV1().Secrets(ns).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(s.UID)}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete expired token %s: %w", key, err)
	}
	c.log.Info("deleted expired bootstrap token", "secret", key)
	return nil
}
