package namespace

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "namespace"

// RecheckDelay is how long to wait before looking again at a namespace whose
// content is still going away (pods terminating gracefully, finalizers).
const RecheckDelay = 5 * time.Second

// Controller finalizes terminating namespaces.
type Controller struct {
	client   kubernetes.Interface
	dynamic  dynamic.Interface
	discover ctrlutil.DiscoverFunc
	lister   corelisters.NamespaceLister
	clock    clock.PassiveClock
	loop     *ctrlutil.Loop
	synced   cache.InformerSynced
}

// New builds the controller; discover lists the resources to empty.
func New(deps ctrlutil.Deps, client dynamic.Interface, discover ctrlutil.DiscoverFunc) (*Controller, error) {
	inf := deps.Informers.Core().V1().Namespaces()
	c := &Controller{
		client:   deps.Client,
		dynamic:  client,
		discover: discover,
		lister:   inf.Lister(),
		clock:    deps.Clock,
		synced:   inf.Informer().HasSynced,
	}
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueIfDeleting,
		UpdateFunc: func(_, obj any) { c.enqueueIfDeleting(obj) },
	}); err != nil {
		return nil, fmt.Errorf("namespace informer handler: %w", err)
	}
	return c, nil
}

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers, c.synced) }

func (c *Controller) enqueueIfDeleting(obj any) {
	if ns, ok := obj.(*corev1.Namespace); ok && ns.DeletionTimestamp != nil {
		c.loop.Enqueue(ns)
	}
}

// Sync empties and finalizes one terminating namespace.
func (c *Controller) Sync(ctx context.Context, name string) error {
	cached, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get namespace %s: %w", name, err)
	}
	if cached.DeletionTimestamp == nil || !hasKubernetesFinalizer(cached) {
		return nil
	}
	ns := cached.DeepCopy()
	if ns.Status.Phase != corev1.NamespaceTerminating {
		ns.Status.Phase = corev1.NamespaceTerminating
		updated, err := c.client.CoreV1().Namespaces().UpdateStatus(ctx, ns, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("mark namespace %s terminating: %w", name, err)
		}
		ns = updated
	}

	resources, discoverErr := c.discover(ctx)
	remaining := map[string]int{}  // "resource.group" -> items left
	finalizers := map[string]int{} // finalizer -> items carrying it
	var deleteErrs []error
	for _, r := range resources {
		if !r.Namespaced || !r.Verbs.HasAll("list", "delete") {
			continue
		}
		left, err := c.deleteAll(ctx, name, r, finalizers)
		if err != nil {
			deleteErrs = append(deleteErrs, err)
		}
		if left > 0 {
			remaining[r.GVR.Resource+"."+r.GVR.Group] += left
		}
	}

	conditions := c.conditions(discoverErr, deleteErrs, remaining, finalizers)
	if err := c.updateConditions(ctx, ns, conditions); err != nil {
		return err
	}
	if discoverErr != nil || len(deleteErrs) > 0 {
		return fmt.Errorf("delete content of namespace %s: %w", name, errors.Join(append([]error{discoverErr}, deleteErrs...)...))
	}
	if len(remaining) > 0 {
		c.loop.EnqueueAfter(name, RecheckDelay)
		return nil
	}
	return c.finalize(ctx, ns)
}

func hasKubernetesFinalizer(ns *corev1.Namespace) bool {
	for _, f := range ns.Spec.Finalizers {
		if f == corev1.FinalizerKubernetes {
			return true
		}
	}
	return false
}

// deleteAll deletes every item of one resource in the namespace (one
// deletecollection when served, else one delete per item) and returns how
// many are still there, counting their finalizers.
func (c *Controller) deleteAll(ctx context.Context, namespace string, r ctrlutil.APIResource, finalizers map[string]int) (int, error) {
	client := c.dynamic.Resource(r.GVR).Namespace(namespace)
	// Background, as upstream's namespace deleter: a type whose default is to orphan (core/v1
	// ReplicationControllers) would otherwise wait for the garbage collector to orphan its pods,
	// which are going anyway.
	background := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &background}
	if r.Verbs.Has("deletecollection") {
		err := client.DeleteCollection(ctx, opts, metav1.ListOptions{})
		if err == nil {
			return c.countRemaining(ctx, namespace, r, finalizers)
		}
		if !apierrors.IsMethodNotSupported(err) && !apierrors.IsNotFound(err) {
			return 0, fmt.Errorf("deletecollection %s in %s: %w", r.GVR.Resource, namespace, err)
		}
	}
	list, err := client.List(ctx, metav1.ListOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
			return 0, nil
		}
		return 0, fmt.Errorf("list %s in %s: %w", r.GVR.Resource, namespace, err)
	}
	var errs []error
	for _, item := range list.Items {
		if item.GetDeletionTimestamp() != nil {
			continue
		}
		if err := client.Delete(ctx, item.GetName(), opts); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete %s %s/%s: %w", r.GVR.Resource, namespace, item.GetName(), err))
		}
	}
	if len(errs) > 0 {
		return len(list.Items), errors.Join(errs...)
	}
	return c.countRemaining(ctx, namespace, r, finalizers)
}

func (c *Controller) countRemaining(ctx context.Context, namespace string, r ctrlutil.APIResource, finalizers map[string]int) (int, error) {
	list, err := c.dynamic.Resource(r.GVR).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return 0, nil
		}
		return 0, fmt.Errorf("list remaining %s in %s: %w", r.GVR.Resource, namespace, err)
	}
	for _, item := range list.Items {
		for _, f := range item.GetFinalizers() {
			finalizers[f]++
		}
	}
	return len(list.Items), nil
}

// conditions are the five deletion conditions Kubernetes reports, each True
// with the problem or False with the all-clear message.
func (c *Controller) conditions(discoverErr error, deleteErrs []error, remaining, finalizers map[string]int) []corev1.NamespaceCondition {
	now := metav1.NewTime(c.clock.Now())
	cond := func(t corev1.NamespaceConditionType, bad bool, badReason, badMsg, okReason, okMsg string) corev1.NamespaceCondition {
		if bad {
			return corev1.NamespaceCondition{Type: t, Status: corev1.ConditionTrue, Reason: badReason, Message: badMsg, LastTransitionTime: now}
		}
		return corev1.NamespaceCondition{Type: t, Status: corev1.ConditionFalse, Reason: okReason, Message: okMsg, LastTransitionTime: now}
	}
	discoveryMsg := ""
	if discoverErr != nil {
		discoveryMsg = fmt.Sprintf("Discovery failed for some groups: %v", discoverErr)
	}
	deleteMsg := ""
	if len(deleteErrs) > 0 {
		msgs := make([]string, len(deleteErrs))
		for i, e := range deleteErrs {
			msgs[i] = e.Error()
		}
		deleteMsg = fmt.Sprintf("Failed to delete all resource types, %d remaining: %s", len(deleteErrs), strings.Join(msgs, ", "))
	}
	return []corev1.NamespaceCondition{
		cond(corev1.NamespaceDeletionDiscoveryFailure, discoverErr != nil, "DiscoveryFailed", discoveryMsg,
			"ResourcesDiscovered", "All resources successfully discovered"),
		cond(corev1.NamespaceDeletionGVParsingFailure, false, "GroupVersionParsingFailed", "",
			"ParsedGroupVersions", "All legacy kube types successfully parsed"),
		cond(corev1.NamespaceDeletionContentFailure, len(deleteErrs) > 0, "ContentDeletionFailed", deleteMsg,
			"ContentDeleted", "All content successfully deleted, may be waiting on finalization"),
		cond(corev1.NamespaceContentRemaining, len(remaining) > 0, "SomeResourcesRemain",
			"Some resources are remaining: "+summarize(remaining, "%s has %d resource instances"),
			"ContentRemoved", "All content successfully removed"),
		cond(corev1.NamespaceFinalizersRemaining, len(finalizers) > 0, "SomeFinalizersRemain",
			"Some content in the namespace has finalizers remaining: "+summarize(finalizers, "%s in %d resource instances"),
			"ContentHasNoFinalizers", "All content-preserving finalizers finished"),
	}
}

func summarize(counts map[string]int, format string) string {
	var parts []string
	for k, n := range counts {
		parts = append(parts, fmt.Sprintf(format, k, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// updateConditions writes the conditions when their status, reason or
// message changed, keeping lastTransitionTime when the status did not.
func (c *Controller) updateConditions(ctx context.Context, ns *corev1.Namespace, want []corev1.NamespaceCondition) error {
	changed := false
	for _, w := range want {
		found := false
		for i := range ns.Status.Conditions {
			cur := &ns.Status.Conditions[i]
			if cur.Type != w.Type {
				continue
			}
			found = true
			if cur.Status == w.Status && cur.Reason == w.Reason && cur.Message == w.Message {
				break
			}
			if cur.Status == w.Status {
				w.LastTransitionTime = cur.LastTransitionTime
			}
			*cur = w
			changed = true
		}
		if !found {
			ns.Status.Conditions = append(ns.Status.Conditions, w)
			changed = true
		}
	}
	if !changed {
		return nil
	}
	updated, err := c.client.CoreV1().Namespaces().UpdateStatus(ctx, ns, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update conditions of namespace %s: %w", ns.Name, err)
	}
	*ns = *updated
	return nil
}

// finalize removes the "kubernetes" finalizer; the API server then deletes
// the namespace.
func (c *Controller) finalize(ctx context.Context, ns *corev1.Namespace) error {
	var kept []corev1.FinalizerName
	for _, f := range ns.Spec.Finalizers {
		if f != corev1.FinalizerKubernetes {
			kept = append(kept, f)
		}
	}
	ns.Spec.Finalizers = kept
	_, err := c.client.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("finalize namespace %s: %w", ns.Name, err)
	}
	return nil
}
