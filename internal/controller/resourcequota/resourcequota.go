package resourcequota

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "resourcequota"

// FullResyncPeriod re-counts every quota (Kubernetes' --resource-quota-sync-period).
const FullResyncPeriod = 5 * time.Minute

// counter counts the objects of one kind in a namespace.
type counter func(namespace string) (int, error)

// Controller keeps ResourceQuota usage.
type Controller struct {
	client    kubernetes.Interface
	rqLister  corelisters.ResourceQuotaLister
	podLister corelisters.PodLister
	svcLister corelisters.ServiceLister
	pvcLister corelisters.PersistentVolumeClaimLister
	counters  map[corev1.ResourceName]counter
	clock     clock.WithTicker
	loop      *ctrlutil.Loop
	synced    []cache.InformerSynced
}

func countOf[T any](list func(string) ([]T, error)) counter {
	return func(ns string) (int, error) {
		items, err := list(ns)
		return len(items), err
	}
}

// New builds the controller and registers its informers' handlers.
func New(deps ctrlutil.Deps) (*Controller, error) {
	f := deps.Informers
	c := &Controller{
		client:    deps.Client,
		rqLister:  f.Core().V1().ResourceQuotas().Lister(),
		podLister: f.Core().V1().Pods().Lister(),
		svcLister: f.Core().V1().Services().Lister(),
		pvcLister: f.Core().V1().PersistentVolumeClaims().Lister(),
		clock:     deps.Clock,
	}
	everything := labels.Everything()
	cm, sec, rq := f.Core().V1().ConfigMaps(), f.Core().V1().Secrets(), f.Core().V1().ResourceQuotas()
	apps, batch := f.Apps().V1(), f.Batch().V1()
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
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	changed := func(o any) {
		if tomb, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = tomb.Obj
		}
		if m, ok := o.(metav1.Object); ok {
			c.enqueueNamespace(m.GetNamespace())
		}
	}
	handler := cache.ResourceEventHandlerFuncs{AddFunc: changed, UpdateFunc: func(_, o any) { changed(o) }, DeleteFunc: changed}
	for _, inf := range []cache.SharedIndexInformer{f.Core().V1().Pods().Informer(), f.Core().V1().Services().Informer(),
		f.Core().V1().PersistentVolumeClaims().Informer(), cm.Informer(), sec.Informer(), rq.Informer(),
		apps.Deployments().Informer(), apps.ReplicaSets().Informer(), apps.StatefulSets().Informer(), apps.DaemonSets().Informer(),
		batch.Jobs().Informer(), batch.CronJobs().Informer()} {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, fmt.Errorf("resourcequota handler: %w", err)
		}
		c.synced = append(c.synced, inf.HasSynced)
	}
	return c, nil
}

// Run runs workers until ctx is done, re-counting everything every FullResyncPeriod.
func (c *Controller) Run(ctx context.Context, workers int) {
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
		return nil
	}
	if err != nil {
		return fmt.Errorf("get resourcequota %s: %w", key, err)
	}
	used, err := c.usage(namespace, cached.Spec.Hard, cached.Spec.Scopes)
	if err != nil {
		return err
	}
	q := cached.DeepCopy()
	q.Status.Hard = cached.Spec.Hard.DeepCopy()
	q.Status.Used = used
	if apiequality.Semantic.DeepEqual(q.Status, cached.Status) {
		return nil
	}
	if _, err := c.client.CoreV1().ResourceQuotas(namespace).UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update status of resourcequota %s: %w", key, err)
	}
	return nil
}

// usage measures every resource named in hard.
func (c *Controller) usage(namespace string, hard corev1.ResourceList, scopes []corev1.ResourceQuotaScope) (corev1.ResourceList, error) {
	pods, err := c.podLister.Pods(namespace).List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	var active []*corev1.Pod
	for _, p := range pods {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && inScopes(p, scopes) {
			active = append(active, p)
		}
	}
	used := corev1.ResourceList{}
	for name := range hard {
		switch {
		case name == corev1.ResourcePods || name == "count/pods":
			used[name] = *resource.NewQuantity(int64(len(active)), resource.DecimalSI)
		case name == corev1.ResourceServicesLoadBalancers || name == corev1.ResourceServicesNodePorts:
			svcs, err := c.svcLister.Services(namespace).List(labels.Everything())
			if err != nil {
				return nil, fmt.Errorf("list services: %w", err)
			}
			var n int64
			for _, s := range svcs {
				if name == corev1.ResourceServicesLoadBalancers && s.Spec.Type == corev1.ServiceTypeLoadBalancer {
					n++
				}
				if name == corev1.ResourceServicesNodePorts && (s.Spec.Type == corev1.ServiceTypeNodePort || s.Spec.Type == corev1.ServiceTypeLoadBalancer) {
					for _, p := range s.Spec.Ports {
						if p.NodePort != 0 || s.Spec.Type == corev1.ServiceTypeNodePort {
							n++
						}
					}
				}
			}
			used[name] = *resource.NewQuantity(n, resource.DecimalSI)
		case name == corev1.ResourceRequestsStorage:
			claims, err := c.pvcLister.PersistentVolumeClaims(namespace).List(labels.Everything())
			if err != nil {
				return nil, fmt.Errorf("list claims: %w", err)
			}
			total := resource.Quantity{Format: resource.BinarySI}
			for _, pvc := range claims {
				if q, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
					total.Add(q)
				}
			}
			used[name] = total
		case c.counters[name] != nil:
			n, err := c.counters[name](namespace)
			if err != nil {
				return nil, fmt.Errorf("count %s: %w", name, err)
			}
			used[name] = *resource.NewQuantity(int64(n), resource.DecimalSI)
		default:
			if kind, res, ok := computeResource(name); ok {
				total := resource.Quantity{}
				for _, p := range active {
					q := PodResource(p, kind, res)
					total.Add(q)
				}
				used[name] = total
			}
		}
	}
	return used, nil
}

// computeResource maps a quota name to (requests|limits, resource).
func computeResource(name corev1.ResourceName) (string, corev1.ResourceName, bool) {
	s := string(name)
	switch {
	case strings.HasPrefix(s, "requests."):
		return "requests", corev1.ResourceName(strings.TrimPrefix(s, "requests.")), true
	case strings.HasPrefix(s, "limits."):
		return "limits", corev1.ResourceName(strings.TrimPrefix(s, "limits.")), true
	case name == corev1.ResourceCPU || name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage:
		return "requests", name, true
	}
	return "", "", false
}

// PodResource is what a pod holds of one resource: the larger of its
// containers' sum and any single init container, plus pod overhead.
func PodResource(p *corev1.Pod, kind string, name corev1.ResourceName) resource.Quantity {
	pick := func(r corev1.ResourceRequirements) (resource.Quantity, bool) {
		list := r.Requests
		if kind == "limits" {
			list = r.Limits
		}
		q, ok := list[name]
		return q, ok
	}
	var sum resource.Quantity
	for _, ctr := range p.Spec.Containers {
		if q, ok := pick(ctr.Resources); ok {
			sum.Add(q)
		}
	}
	for _, ctr := range p.Spec.InitContainers {
		if q, ok := pick(ctr.Resources); ok && q.Cmp(sum) > 0 {
			sum = q.DeepCopy()
		}
	}
	if q, ok := p.Spec.Overhead[name]; ok {
		sum.Add(q)
	}
	return sum
}

func bestEffort(p *corev1.Pod) bool {
	for _, ctr := range append(append([]corev1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...) {
		if len(ctr.Resources.Requests) > 0 || len(ctr.Resources.Limits) > 0 {
			return false
		}
	}
	return true
}

func inScopes(p *corev1.Pod, scopes []corev1.ResourceQuotaScope) bool {
	for _, s := range scopes {
		switch s {
		case corev1.ResourceQuotaScopeTerminating:
			if p.Spec.ActiveDeadlineSeconds == nil {
				return false
			}
		case corev1.ResourceQuotaScopeNotTerminating:
			if p.Spec.ActiveDeadlineSeconds != nil {
				return false
			}
		case corev1.ResourceQuotaScopeBestEffort:
			if !bestEffort(p) {
				return false
			}
		case corev1.ResourceQuotaScopeNotBestEffort:
			if bestEffort(p) {
				return false
			}
		}
	}
	return true
}
