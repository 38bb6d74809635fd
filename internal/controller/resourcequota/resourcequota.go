package resourcequota

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
	"github.com/skiff-sh/skiff/internal/quota"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "resourcequota"

// FullResyncPeriod re-counts every quota (Kubernetes' --resource-quota-sync-period).
const FullResyncPeriod = 5 * time.Minute

// counter counts the objects of one kind in a namespace.
type counter func(namespace string) (int, error)

// Controller keeps ResourceQuota usage.
type Controller struct {
	client   kubernetes.Interface
	rqLister corelisters.ResourceQuotaLister
	// rqIndexer answers whether a namespace has any quota without listing them.
	rqIndexer cache.Indexer
	podLister corelisters.PodLister
	svcLister corelisters.ServiceLister
	pvcLister corelisters.PersistentVolumeClaimLister
	counters  map[corev1.ResourceName]counter
	// dynamic counts the count/ names no counter covers (dynamic.go); nil counts none of them.
	dynamic *dynamicCounts
	clock   clock.WithTicker
	loop    *ctrlutil.Loop
	// written is the status this controller last wrote, per quota key (*corev1.ResourceQuotaStatus).
	written sync.Map
	synced  []cache.InformerSynced
}

func countOf[T any](list func(string) ([]T, error)) counter {
	return func(ns string) (int, error) {
		items, err := list(ns)
		return len(items), err
	}
}

// New builds the controller and registers its informers' handlers; with client and discover, a
// quota may also count any other resource discovery lists (custom resources included).
func New(deps ctrlutil.Deps, client dynamic.Interface, discover ctrlutil.DiscoverFunc) (*Controller, error) {
	f := deps.Informers
	c := &Controller{
		client:    deps.Client,
		rqLister:  f.Core().V1().ResourceQuotas().Lister(),
		rqIndexer: f.Core().V1().ResourceQuotas().Informer().GetIndexer(),
		podLister: f.Core().V1().Pods().Lister(),
		svcLister: f.Core().V1().Services().Lister(),
		pvcLister: f.Core().V1().PersistentVolumeClaims().Lister(),
		clock:     deps.Clock,
	}
	everything := labels.Everything()
	cm, sec, rq := f.Core().V1().ConfigMaps(), f.Core().V1().Secrets(), f.Core().V1().ResourceQuotas()
	apps, batch, rcs := f.Apps().V1(), f.Batch().V1(), f.Core().V1().ReplicationControllers()
	c.counters = map[corev1.ResourceName]counter{
		"configmaps": countOf(func(ns string) ([]*corev1.ConfigMap, error) { return cm.Lister().ConfigMaps(ns).List(everything) }),
		"secrets":    countOf(func(ns string) ([]*corev1.Secret, error) { return sec.Lister().Secrets(ns).List(everything) }),
		"resourcequotas": countOf(func(ns string) ([]*corev1.ResourceQuota, error) {
			return rq.Lister().ResourceQuotas(ns).List(everything)
		}),
		"persistentvolumeclaims": countOf(func(ns string) ([]*corev1.PersistentVolumeClaim, error) {
			return c.pvcLister.PersistentVolumeClaims(ns).List(everything)
		}),
		"services": countOf(func(ns string) ([]*corev1.Service, error) { return c.svcLister.Services(ns).List(everything) }),
	}
	for name, inf := range map[string]cache.SharedIndexInformer{
		"deployments.apps": apps.Deployments().Informer(), "replicasets.apps": apps.ReplicaSets().Informer(),
		"statefulsets.apps": apps.StatefulSets().Informer(), "daemonsets.apps": apps.DaemonSets().Informer(),
		"jobs.batch": batch.Jobs().Informer(), "cronjobs.batch": batch.CronJobs().Informer(),
		"replicationcontrollers": rcs.Informer(),
	} {
		indexer := inf.GetIndexer()
		c.counters[corev1.ResourceName("count/"+name)] = func(ns string) (int, error) {
			items, err := indexer.ByIndex(cache.NamespaceIndex, ns)
			return len(items), err
		}
		c.synced = append(c.synced, inf.HasSynced)
	}
	for _, name := range []string{"configmaps", "secrets", "resourcequotas", "persistentvolumeclaims", "services"} {
		c.counters[corev1.ResourceName("count/"+name)] = c.counters[corev1.ResourceName(name)]
	}
	c.counters[corev1.ResourceReplicationControllers] = c.counters["count/replicationcontrollers"]
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	changed := func(o any) {
		if tomb, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = tomb.Obj
		}
		if m, ok := o.(metav1.Object); ok {
			c.enqueueNamespace(m.GetNamespace())
		}
	}
	c.dynamic = newDynamicCounts(client, discover, changed, deps.Clock)
	// Counted objects start a recount when they go (replenishment) or an update changes what they
	// hold (a pod that terminated, a claim that grew), not when they are added: the API server's
	// ResourceQuota admission charged them before they were stored, and a recount started before a
	// charged object reaches the informers would take the charge back and let another write past
	// the limit. Likewise a quota's status-only changes (admission's charges, this controller's
	// writes) start none. The full resync (FullResyncPeriod) catches anything else, as upstream.
	// An update in a namespace without quotas is not looked at: computing what the old and the new
	// object hold costs two usage evaluations per pod status change, for nothing to recount.
	handler := cache.ResourceEventHandlerFuncs{DeleteFunc: changed, UpdateFunc: func(old, o any) {
		if m, ok := o.(metav1.Object); ok && !c.hasQuota(m.GetNamespace()) {
			return
		}
		if usageChanged(old, o) {
			changed(o)
		}
	}}
	quotaHandler := cache.ResourceEventHandlerFuncs{AddFunc: changed, DeleteFunc: changed, UpdateFunc: func(old, o any) {
		oq, ok1 := old.(*corev1.ResourceQuota)
		nq, ok2 := o.(*corev1.ResourceQuota)
		if !ok1 || !ok2 || !apiequality.Semantic.DeepEqual(oq.Spec, nq.Spec) || !apiequality.Semantic.DeepEqual(nq.Spec.Hard, nq.Status.Hard) {
			changed(o)
		}
	}}
	if _, err := rq.Informer().AddEventHandler(quotaHandler); err != nil {
		return nil, fmt.Errorf("resourcequota handler: %w", err)
	}
	c.synced = append(c.synced, rq.Informer().HasSynced)
	for _, inf := range []cache.SharedIndexInformer{f.Core().V1().Pods().Informer(), f.Core().V1().Services().Informer(),
		f.Core().V1().PersistentVolumeClaims().Informer(), cm.Informer(), sec.Informer(),
		apps.Deployments().Informer(), apps.ReplicaSets().Informer(), apps.StatefulSets().Informer(), apps.DaemonSets().Informer(),
		batch.Jobs().Informer(), batch.CronJobs().Informer(), rcs.Informer()} {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, fmt.Errorf("resourcequota handler: %w", err)
		}
		c.synced = append(c.synced, inf.HasSynced)
	}
	return c, nil
}

// Run runs workers until ctx is done, re-counting everything every FullResyncPeriod.
func (c *Controller) Run(ctx context.Context, workers int) {
	c.dynamic.start(ctx)
	defer c.dynamic.shutdown()
	go func() {
		ticker := c.clock.NewTicker(FullResyncPeriod)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C():
				all, err := c.rqLister.List(labels.Everything())
				if err != nil {
					continue
				}
				for _, q := range all {
					c.loop.Enqueue(q)
				}
			}
		}
	}()
	c.loop.Run(ctx, workers, c.synced...)
}

// hasQuota reports whether namespace holds a ResourceQuota (true when the index cannot answer).
func (c *Controller) hasQuota(namespace string) bool {
	keys, err := c.rqIndexer.IndexKeys(cache.NamespaceIndex, namespace)
	return err != nil || len(keys) > 0
}

func (c *Controller) enqueueNamespace(namespace string) {
	quotas, err := c.rqLister.ResourceQuotas(namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, q := range quotas {
		c.loop.Enqueue(q)
	}
}

// Sync recomputes one quota's usage.
func (c *Controller) Sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.rqLister.ResourceQuotas(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.written.Delete(key)
		return nil
	}
	if err != nil {
		return fmt.Errorf("get resourcequota %s: %w", key, err)
	}
	used, err := c.usage(ctx, namespace, cached)
	if err != nil {
		return err
	}
	q := cached.DeepCopy()
	q.Status.Hard = cached.Spec.Hard.DeepCopy()
	q.Status.Used = used
	// The cache may not have seen this controller's last write yet: a count that went 0 -> 1 -> 0
	// would then match the stale 0 and never be written back, with nothing to start another sync
	// before the full resync. Skip the write only when the cache also shows what was last written.
	if apiequality.Semantic.DeepEqual(q.Status, cached.Status) {
		last, ok := c.written.Load(key)
		if !ok || apiequality.Semantic.DeepEqual(last.(*corev1.ResourceQuotaStatus), &cached.Status) {
			return nil
		}
	}
	updated, err := c.client.CoreV1().ResourceQuotas(namespace).UpdateStatus(ctx, q, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update status of resourcequota %s: %w", key, err)
	}
	c.written.Store(key, updated.Status.DeepCopy())
	return nil
}

// usage measures every resource named in the quota's hard with internal/quota, the measure the
// API server's ResourceQuota admission charges writes by, so the two agree: pods (in the quota's
// scopes, terminated ones holding nothing), claims and services summed per object, other kinds
// counted.
func (c *Controller) usage(ctx context.Context, namespace string, q *corev1.ResourceQuota) (corev1.ResourceList, error) {
	totals := corev1.ResourceList{}
	add := func(gr schema.GroupResource, obj runtime.Object) {
		if !quota.Matches(q, gr, obj) {
			return
		}
		for name, v := range quota.Usage(gr, obj) {
			sum := totals[name]
			sum.Add(v)
			totals[name] = sum
		}
	}
	pods, err := c.podLister.Pods(namespace).List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	for _, p := range pods {
		add(podsGR, p)
	}
	claims, err := c.pvcLister.PersistentVolumeClaims(namespace).List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list claims: %w", err)
	}
	for _, pvc := range claims {
		add(claimsGR, pvc)
	}
	svcs, err := c.svcLister.Services(namespace).List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list services: %w", err)
	}
	for _, svc := range svcs {
		add(servicesGR, svc)
	}
	scoped := len(q.Spec.Scopes) > 0 || q.Spec.ScopeSelector != nil
	used := corev1.ResourceList{}
	for name := range q.Spec.Hard {
		switch {
		case quota.Covers(q, podsGR, name) || quota.Covers(q, claimsGR, name) || quota.Covers(q, servicesGR, name):
			used[name] = totals[name]
		case c.counters[name] != nil:
			n := 0
			if !scoped { // scopes select pods only
				if n, err = c.counters[name](namespace); err != nil {
					return nil, fmt.Errorf("count %s: %w", name, err)
				}
			}
			used[name] = *resource.NewQuantity(int64(n), resource.DecimalSI)
		default:
			n, known, err := c.dynamic.count(ctx, name, namespace)
			if err != nil {
				return nil, fmt.Errorf("count %s: %w", name, err)
			}
			if known {
				if scoped {
					n = 0
				}
				used[name] = *resource.NewQuantity(int64(n), resource.DecimalSI)
			}
		}
	}
	return used, nil
}

// usageChanged reports whether an update changed what an object holds of a quota.
func usageChanged(old, o any) bool {
	var gr schema.GroupResource
	switch pod := o.(type) {
	case *corev1.Pod:
		// A pod whose activeDeadlineSeconds changed moved between the Terminating and
		// NotTerminating scopes: the quota it left must give its usage back.
		if oldPod, ok := old.(*corev1.Pod); ok && quota.IsTerminating(oldPod) != quota.IsTerminating(pod) {
			return true
		}
		gr = podsGR
	case *corev1.PersistentVolumeClaim:
		gr = claimsGR
	case *corev1.Service:
		gr = servicesGR
	default:
		return false
	}
	before, ok1 := old.(runtime.Object)
	after, ok2 := o.(runtime.Object)
	return !ok1 || !ok2 || !apiequality.Semantic.DeepEqual(quota.Usage(gr, before), quota.Usage(gr, after))
}

var (
	podsGR     = schema.GroupResource{Resource: "pods"}
	claimsGR   = schema.GroupResource{Resource: "persistentvolumeclaims"}
	servicesGR = schema.GroupResource{Resource: "services"}
)
