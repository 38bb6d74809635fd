package garbagecollector

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "garbagecollector"

// RediscoveryPeriod is how often new resource types (e.g. a new CRD) are picked up.
const RediscoveryPeriod = 30 * time.Second

const (
	ownerIndex = "ownerUID"
	uidIndex   = "uid"
)

// Controller is the garbage collector.
type Controller struct {
	dynamic  dynamic.Interface
	discover ctrlutil.DiscoverFunc
	factory  dynamicinformer.DynamicSharedInformerFactory
	// typed is the controller manager's shared factory: resources it has a Go type for are
	// followed through its informers (shared with the other controllers, and in a control-plane
	// process fed by the API server's cache) instead of a second, unstructured copy. May be nil.
	typed informers.SharedInformerFactory
	clock clock.WithTicker
	loop  *ctrlutil.Loop
	log   *slog.Logger

	mu       sync.RWMutex
	monitors map[schema.GroupVersionResource]*monitor
	kinds    map[schema.GroupKind]ctrlutil.APIResource
}

type monitor struct {
	res      ctrlutil.APIResource
	informer cache.SharedIndexInformer
}

// New builds the garbage collector; discover lists the resources to watch.
func New(deps ctrlutil.Deps, client dynamic.Interface, discover ctrlutil.DiscoverFunc) *Controller {
	c := &Controller{
		dynamic:  client,
		discover: discover,
		factory:  dynamicinformer.NewDynamicSharedInformerFactory(client, 0),
		typed:    deps.Informers,
		clock:    deps.Clock,
		log:      deps.Log(),
		monitors: map[schema.GroupVersionResource]*monitor{},
		kinds:    map[schema.GroupKind]ctrlutil.APIResource{},
	}
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	return c
}

// Run watches every deletable resource and collects garbage until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	c.rediscover(ctx)
	c.startInformers(ctx)
	defer c.factory.Shutdown()
	go func() {
		ticker := c.clock.NewTicker(RediscoveryPeriod)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C():
				c.rediscover(ctx)
				c.startInformers(ctx)
			}
		}
	}()
	c.loop.Run(ctx, workers, c.synced)
}

// synced: every monitor's cache has synced (monitors added later join when synced).
func (c *Controller) synced() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, m := range c.monitors {
		if !m.informer.HasSynced() {
			return false
		}
	}
	return true
}

func (c *Controller) rediscover(ctx context.Context) {
	resources, err := c.discover(ctx)
	if err != nil {
		c.log.Warn("garbage collector discovery incomplete", "err", err)
	}
	if err := c.AddResources(resources); err != nil {
		c.log.Error("garbage collector monitors", "err", err)
	}
}

// AddResources starts tracking the given resources (those that can be
// listed, watched and deleted); already tracked ones are skipped.
func (c *Controller) AddResources(resources []ctrlutil.APIResource) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range resources {
		gk := schema.GroupKind{Group: r.GVR.Group, Kind: r.Kind}
		if _, ok := c.kinds[gk]; !ok {
			c.kinds[gk] = r
		}
		if !r.Verbs.HasAll("list", "watch", "delete") || ignored(r.GVR.GroupResource()) {
			continue
		}
		if _, ok := c.monitors[r.GVR]; ok {
			continue
		}
		inf, err := c.informerFor(r.GVR)
		if err != nil {
			return err
		}
		gvr := r.GVR
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.changed(gvr, nil, obj) },
			UpdateFunc: func(old, obj any) { c.changed(gvr, old, obj) },
			DeleteFunc: func(obj any) { c.deleted(gvr, obj) },
		}); err != nil {
			return fmt.Errorf("watch %s: %w", r.GVR, err)
		}
		c.monitors[r.GVR] = &monitor{res: r, informer: inf}
	}
	return nil
}

// informerFor is the indexed informer of gvr: the typed factory's when it knows the resource
// (only metadata is read, so a typed object serves as well as an unstructured one), otherwise a
// dynamic one.
func (c *Controller) informerFor(gvr schema.GroupVersionResource) (cache.SharedIndexInformer, error) {
	indexers := cache.Indexers{ownerIndex: indexByOwner, uidIndex: indexByUID}
	if c.typed != nil {
		if generic, err := c.typed.ForResource(gvr); err == nil {
			inf := generic.Informer()
			if err := inf.AddIndexers(indexers); err == nil {
				return inf, nil
			}
		}
	}
	inf := c.factory.ForResource(gvr).Informer()
	if err := inf.AddIndexers(indexers); err != nil {
		return nil, fmt.Errorf("index %s: %w", gvr, err)
	}
	return inf, nil
}

// startInformers starts the informers of resources added since the last call (Start skips
// running ones).
func (c *Controller) startInformers(ctx context.Context) {
	c.factory.Start(ctx.Done())
	if c.typed != nil {
		c.typed.Start(ctx.Done())
	}
}

// ignored: Events churn constantly and are never owners or dependants worth
// tracking, as in Kubernetes' garbage collector.
func ignored(gr schema.GroupResource) bool {
	return gr.Resource == "events" && (gr.Group == "" || gr.Group == "events.k8s.io")
}

// Informer exposes the cache of one tracked resource (tests seed it).
func (c *Controller) Informer(gvr schema.GroupVersionResource) cache.SharedIndexInformer {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if m, ok := c.monitors[gvr]; ok {
		return m.informer
	}
	return nil
}

func indexByOwner(obj any) ([]string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil
	}
	var uids []string
	for _, ref := range m.GetOwnerReferences() {
		uids = append(uids, string(ref.UID))
	}
	return uids, nil
}

func indexByUID(obj any) ([]string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil
	}
	return []string{string(m.GetUID())}, nil
}

// Item keys are "group/version/resource/namespace/name".
func itemKey(gvr schema.GroupVersionResource, namespace, name string) string {
	return strings.Join([]string{gvr.Group, gvr.Version, gvr.Resource, namespace, name}, "/")
}

func parseItemKey(key string) (schema.GroupVersionResource, string, string, bool) {
	parts := strings.Split(key, "/")
	if len(parts) != 5 {
		return schema.GroupVersionResource{}, "", "", false
	}
	return schema.GroupVersionResource{Group: parts[0], Version: parts[1], Resource: parts[2]}, parts[3], parts[4], true
}

func accessor(obj any) metav1.Object {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	return m
}

func (c *Controller) enqueue(gvr schema.GroupVersionResource, m metav1.Object) {
	c.loop.Queue.Add(itemKey(gvr, m.GetNamespace(), m.GetName()))
}

func (c *Controller) changed(gvr schema.GroupVersionResource, oldObj, obj any) {
	m := accessor(obj)
	if m == nil {
		return
	}
	c.enqueue(gvr, m)
	old := accessor(oldObj)
	if m.GetDeletionTimestamp() != nil || old == nil || !slices.Equal(old.GetFinalizers(), m.GetFinalizers()) {
		c.enqueueDependents(m.GetUID())
	}
	if old != nil && !slices.EqualFunc(old.GetOwnerReferences(), m.GetOwnerReferences(), func(a, b metav1.OwnerReference) bool { return a.UID == b.UID }) {
		// An owner waiting in foreground may have lost a blocking dependant.
		c.enqueueOwners(old)
	}
}

func (c *Controller) deleted(gvr schema.GroupVersionResource, obj any) {
	m := accessor(obj)
	if m == nil {
		return
	}
	c.enqueueDependents(m.GetUID())
	c.enqueueOwners(m)
}

func (c *Controller) enqueueDependents(uid types.UID) {
	for _, d := range c.dependents(uid) {
		c.enqueue(d.gvr, d.obj)
	}
}

func (c *Controller) enqueueOwners(m metav1.Object) {
	for _, ref := range m.GetOwnerReferences() {
		if owner, gvr, ok := c.cachedByUID(ref.UID); ok {
			c.enqueue(gvr, owner)
		}
	}
}

type dependent struct {
	gvr schema.GroupVersionResource
	obj metav1.Object
}

func (c *Controller) dependents(uid types.UID) []dependent {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []dependent
	for gvr, m := range c.monitors {
		objs, err := m.informer.GetIndexer().ByIndex(ownerIndex, string(uid))
		if err != nil {
			continue
		}
		for _, o := range objs {
			if a := accessor(o); a != nil {
				out = append(out, dependent{gvr, a})
			}
		}
	}
	return out
}

func (c *Controller) cachedByUID(uid types.UID) (metav1.Object, schema.GroupVersionResource, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for gvr, m := range c.monitors {
		objs, err := m.informer.GetIndexer().ByIndex(uidIndex, string(uid))
		if err == nil && len(objs) > 0 {
			if a := accessor(objs[0]); a != nil {
				return a, gvr, true
			}
		}
	}
	return nil, schema.GroupVersionResource{}, false
}

// Sync reconciles one object, keyed as itemKey.
func (c *Controller) Sync(ctx context.Context, key string) error {
	gvr, namespace, name, ok := parseItemKey(key)
	if !ok {
		return nil
	}
	c.mu.RLock()
	mon := c.monitors[gvr]
	c.mu.RUnlock()
	if mon == nil {
		return nil
	}
	cacheKey := name
	if namespace != "" {
		cacheKey = namespace + "/" + name
	}
	obj, exists, err := mon.informer.GetIndexer().GetByKey(cacheKey)
	if err != nil || !exists {
		return nil
	}
	item := accessor(obj)
	if item == nil {
		return nil
	}
	if item.GetDeletionTimestamp() != nil {
		switch {
		case slices.Contains(item.GetFinalizers(), metav1.FinalizerOrphanDependents):
			return c.orphanDependents(ctx, mon, item)
		case slices.Contains(item.GetFinalizers(), metav1.FinalizerDeleteDependents):
			return c.deleteDependentsFirst(ctx, mon, item)
		}
		return nil
	}
	if len(item.GetOwnerReferences()) == 0 {
		return nil
	}
	solid, dangling, waiting, err := c.classifyOwners(ctx, mon, item)
	if err != nil {
		return err
	}
	switch {
	case len(solid) > 0:
		stale := append(dangling, waiting...)
		if len(stale) == 0 {
			return nil
		}
		return c.removeOwnerRefs(ctx, mon.res.GVR, item, stale)
	case len(waiting) > 0 && len(c.dependents(item.GetUID())) > 0:
		// Our owner waits for us in foreground while we have dependants of
		// our own: stop blocking it, then delete ourselves in foreground too.
		if err := c.unblockOwners(ctx, mon.res.GVR, item, waiting); err != nil {
			return err
		}
		return c.deleteItem(ctx, mon.res.GVR, item, metav1.DeletePropagationForeground)
	default:
		policy := metav1.DeletePropagationBackground
		switch {
		case slices.Contains(item.GetFinalizers(), metav1.FinalizerOrphanDependents):
			policy = metav1.DeletePropagationOrphan
		case slices.Contains(item.GetFinalizers(), metav1.FinalizerDeleteDependents):
			policy = metav1.DeletePropagationForeground
		}
		return c.deleteItem(ctx, mon.res.GVR, item, policy)
	}
}

// classifyOwners sorts item's owners into solid (present, not deleting in
// foreground), dangling (gone, or replaced by a namesake) and waiting
// (deleting in foreground, waiting for dependants).
func (c *Controller) classifyOwners(ctx context.Context, mon *monitor, item metav1.Object) (solid, dangling, waiting []metav1.OwnerReference, err error) {
	for _, ref := range item.GetOwnerReferences() {
		owner, found, err := c.lookupOwner(ctx, mon, item, ref)
		if err != nil {
			return nil, nil, nil, err
		}
		switch {
		case !found:
			dangling = append(dangling, ref)
		case owner != nil && owner.GetDeletionTimestamp() != nil && slices.Contains(owner.GetFinalizers(), metav1.FinalizerDeleteDependents):
			waiting = append(waiting, ref)
		default:
			solid = append(solid, ref)
		}
	}
	return solid, dangling, waiting, nil
}

// lookupOwner finds ref's owner in the caches, else with a live read (the
// cache may lag behind a just-created owner). An owner of an unknown kind, or
// a namespaced owner of a cluster-scoped object, cannot be resolved: it
// counts as present (nil owner), so nothing is deleted on a guess.
func (c *Controller) lookupOwner(ctx context.Context, mon *monitor, item metav1.Object, ref metav1.OwnerReference) (metav1.Object, bool, error) {
	if owner, _, ok := c.cachedByUID(ref.UID); ok {
		return owner, true, nil
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, true, nil
	}
	c.mu.RLock()
	res, known := c.kinds[gv.WithKind(ref.Kind).GroupKind()]
	c.mu.RUnlock()
	if !known {
		c.log.Warn("owner kind not served; leaving dependant alone", "kind", ref.Kind, "apiVersion", ref.APIVersion,
			"dependant", item.GetNamespace()+"/"+item.GetName())
		return nil, true, nil
	}
	namespace := ""
	if res.Namespaced {
		if !mon.res.Namespaced {
			return nil, true, nil
		}
		namespace = item.GetNamespace()
	}
	live, err := c.dynamic.Resource(res.GVR).Namespace(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("look up owner %s %s of %s: %w", ref.Kind, ref.Name, item.GetName(), err)
	}
	if live.GetUID() != ref.UID {
		return nil, false, nil
	}
	return live, true, nil
}

func (c *Controller) deleteItem(ctx context.Context, gvr schema.GroupVersionResource, item metav1.Object, policy metav1.DeletionPropagation) error {
	uid := item.GetUID()
	err := c.dynamic.Resource(gvr).Namespace(item.GetNamespace()).Delete(ctx, item.GetName(),
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &policy})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete %s %s/%s: %w", gvr.Resource, item.GetNamespace(), item.GetName(), err)
	}
	return nil
}

// removeOwnerRefs drops the references in remove from item (merge patch
// guarded by uid, so a recreated namesake is not touched).
func (c *Controller) removeOwnerRefs(ctx context.Context, gvr schema.GroupVersionResource, item metav1.Object, remove []metav1.OwnerReference) error {
	drop := map[types.UID]bool{}
	for _, r := range remove {
		drop[r.UID] = true
	}
	kept := []metav1.OwnerReference{}
	for _, r := range item.GetOwnerReferences() {
		if !drop[r.UID] {
			kept = append(kept, r)
		}
	}
	return c.patchOwnerRefs(ctx, gvr, item, kept)
}

func (c *Controller) unblockOwners(ctx context.Context, gvr schema.GroupVersionResource, item metav1.Object, waiting []metav1.OwnerReference) error {
	unblock := map[types.UID]bool{}
	for _, r := range waiting {
		unblock[r.UID] = true
	}
	changed := false
	refs := slices.Clone(item.GetOwnerReferences())
	for i := range refs {
		if unblock[refs[i].UID] && refs[i].BlockOwnerDeletion != nil && *refs[i].BlockOwnerDeletion {
			no := false
			refs[i].BlockOwnerDeletion = &no
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return c.patchOwnerRefs(ctx, gvr, item, refs)
}

func (c *Controller) patchOwnerRefs(ctx context.Context, gvr schema.GroupVersionResource, item metav1.Object, refs []metav1.OwnerReference) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": refs, "uid": item.GetUID()}})
	if err != nil {
		return fmt.Errorf("owner references patch: %w", err)
	}
	_, err = c.dynamic.Resource(gvr).Namespace(item.GetNamespace()).Patch(ctx, item.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("update owner references of %s %s/%s: %w", gvr.Resource, item.GetNamespace(), item.GetName(), err)
	}
	return nil
}

func (c *Controller) removeFinalizer(ctx context.Context, gvr schema.GroupVersionResource, item metav1.Object, finalizer string) error {
	var kept []string
	for _, f := range item.GetFinalizers() {
		if f != finalizer {
			kept = append(kept, f)
		}
	}
	// resourceVersion makes this compare-and-swap: another finalizer added
	// meanwhile must not be dropped.
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": kept, "resourceVersion": item.GetResourceVersion()}})
	if err != nil {
		return fmt.Errorf("finalizer patch: %w", err)
	}
	_, err = c.dynamic.Resource(gvr).Namespace(item.GetNamespace()).Patch(ctx, item.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove finalizer %s from %s %s/%s: %w", finalizer, gvr.Resource, item.GetNamespace(), item.GetName(), err)
	}
	return nil
}

// orphanDependents strips item's reference from every dependant, then
// removes the orphan finalizer so the API server can finish the delete.
func (c *Controller) orphanDependents(ctx context.Context, mon *monitor, item metav1.Object) error {
	for _, d := range c.dependents(item.GetUID()) {
		if err := c.removeOwnerRefs(ctx, d.gvr, d.obj, []metav1.OwnerReference{{UID: item.GetUID()}}); err != nil {
			return err
		}
	}
	return c.removeFinalizer(ctx, mon.res.GVR, item, metav1.FinalizerOrphanDependents)
}

// deleteDependentsFirst handles foreground deletion: dependants are deleted
// (each reconciles itself against this waiting owner); once no dependant
// blocks (blockOwnerDeletion) any more, the foregroundDeletion finalizer goes.
func (c *Controller) deleteDependentsFirst(ctx context.Context, mon *monitor, item metav1.Object) error {
	blocking := 0
	for _, d := range c.dependents(item.GetUID()) {
		c.enqueue(d.gvr, d.obj)
		for _, ref := range d.obj.GetOwnerReferences() {
			if ref.UID == item.GetUID() && ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
				blocking++
			}
		}
	}
	if blocking > 0 {
		return nil
	}
	return c.removeFinalizer(ctx, mon.res.GVR, item, metav1.FinalizerDeleteDependents)
}
