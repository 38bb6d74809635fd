package namespacelifecycle

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
)

// Name is the plugin's name in Kubernetes' admission chain.
const Name = "NamespaceLifecycle"

// LiveLookupAfterDelete is how long after a namespace's deletion passed this plugin its lookups
// skip the watch cache (upstream's forceLiveLookupTTL).
const LiveLookupAfterDelete = 30 * time.Second

// LatestGetter reads an object as the store has it now, past any cache; the API server's Lookup
// implements it.
type LatestGetter interface {
	GetLatest(ctx context.Context, group, resource, namespace, name string) (runtime.Object, error)
}

// Plugin refuses new namespaced objects in a namespace that is missing or terminating.
type Plugin struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	// deleted are the namespaces whose deletion this server admitted, until when their lookups
	// are live: the Lookup may answer from the watch cache, which learns of the namespace's
	// terminating phase a moment after the deletion is acknowledged, and a client that deletes
	// a namespace and at once creates in it must be refused, as upstream's plugin does.
	deleted map[string]time.Time
}

// New returns the plugin; c times the live lookups after a namespace's deletion.
func New(c clock.PassiveClock) *Plugin {
	return &Plugin{clock: c, deleted: map[string]time.Time{}}
}

// Name implements admission.Plugin.
func (*Plugin) Name() string { return Name }

// Admit implements admission.Plugin: the plugin only validates.
func (*Plugin) Admit(context.Context, *admission.Attributes, admission.Lookup) error { return nil }

// Validate implements admission.Plugin.
func (p *Plugin) Validate(ctx context.Context, a *admission.Attributes, lookup admission.Lookup) error {
	if a.Verb == "delete" && a.Resource.GroupVersion.Group == "" && a.Resource.Plural == "namespaces" {
		p.noteDeleted(a.Name)
		return nil
	}
	if a.Verb != "create" || !a.Resource.Namespaced || a.Namespace == "" {
		return nil
	}
	ns, err := p.namespace(ctx, a.Namespace, lookup)
	if err != nil {
		return err
	}
	if ns.Status.Phase != corev1.NamespaceTerminating {
		return nil
	}
	// Events about a terminating namespace's last objects are still welcome.
	if a.Resource.Plural == "events" {
		return nil
	}
	forbidden := apierrors.NewForbidden(a.Resource.GroupResource(), a.Name,
		fmt.Errorf("unable to create new content in namespace %s because it is being terminated", a.Namespace))
	forbidden.ErrStatus.Details.Causes = append(forbidden.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: corev1.NamespaceTerminatingCause, Message: fmt.Sprintf("namespace %s is being terminated", a.Namespace), Field: "metadata.namespace",
	})
	return forbidden
}

// namespace reads name through lookup, or past its cache for a namespace recently deleted and
// still seen active there.
func (p *Plugin) namespace(ctx context.Context, name string, lookup admission.Lookup) (*corev1.Namespace, error) {
	obj, err := lookup.Get(ctx, "", "namespaces", "", name)
	if err != nil {
		return nil, err
	}
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("namespace %s: read a %T", name, obj))
	}
	latest, canRead := lookup.(LatestGetter)
	if ns.Status.Phase == corev1.NamespaceTerminating || !canRead || !p.recentlyDeleted(name) {
		return ns, nil
	}
	if obj, err = latest.GetLatest(ctx, "", "namespaces", "", name); err != nil {
		return nil, err
	}
	if ns, ok = obj.(*corev1.Namespace); !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("namespace %s: read a %T", name, obj))
	}
	return ns, nil
}

func (p *Plugin) noteDeleted(name string) {
	now := p.clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for n, until := range p.deleted {
		if !now.Before(until) {
			delete(p.deleted, n)
		}
	}
	p.deleted[name] = now.Add(LiveLookupAfterDelete)
}

func (p *Plugin) recentlyDeleted(name string) bool {
	p.mu.Lock()
	until, ok := p.deleted[name]
	p.mu.Unlock()
	return ok && p.clock.Now().Before(until)
}
