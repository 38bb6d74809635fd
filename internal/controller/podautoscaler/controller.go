package podautoscaler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	autoscalinglisters "k8s.io/client-go/listers/autoscaling/v2"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Name is the controller's name in --controllers, as kube-controller-manager spells it.
const Name = "horizontalpodautoscaling"

// DefaultSyncPeriod is --horizontal-pod-autoscaler-sync-period's default.
const DefaultSyncPeriod = 15 * time.Second

// Mapper resolves a scale target's kind to its resources; Reset forgets cached discovery after
// a miss (a CRD may have been added since).
type Mapper interface {
	RESTMappings(gk schema.GroupKind, versions ...string) ([]*apimeta.RESTMapping, error)
	Reset()
}

// Options are the controller's collaborators and tunables beyond ctrlutil.Deps.
type Options struct {
	// Scales reads and writes the targets' /scale subresource.
	Scales scale.ScalesGetter
	Mapper Mapper
	// Metrics is where metric values come from.
	Metrics MetricsSource
	// SyncPeriod is how often every HPA is synced (default 15s).
	SyncPeriod time.Duration
	Config     Config
}

// Clients are the scale client, mapper and metrics source built over one REST config.
type Clients struct {
	Scales  scale.ScalesGetter
	Mapper  Mapper
	Metrics *RESTMetrics
}

// NewClients builds the /scale client over the discovery REST mapper (so every kind with a
// scale subresource, CRDs included, works) and the metrics APIs' clients.
func NewClients(cfg *rest.Config) (Clients, error) {
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return Clients{}, fmt.Errorf("discovery client: %w", err)
	}
	cached := memory.NewMemCacheClient(disc)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cached)
	scales, err := scale.NewForConfig(cfg, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(cached))
	if err != nil {
		return Clients{}, fmt.Errorf("scale client: %w", err)
	}
	metrics, err := NewRESTMetrics(cfg, disc, mapper)
	if err != nil {
		return Clients{}, err
	}
	return Clients{Scales: scales, Mapper: mapper, Metrics: metrics}, nil
}

// Controller syncs HorizontalPodAutoscalers.
type Controller struct {
	client     kubernetes.Interface
	hpaLister  autoscalinglisters.HorizontalPodAutoscalerLister
	podLister  corelisters.PodLister
	recorder   record.EventRecorder
	clock      clock.PassiveClock
	log        *slog.Logger
	opts       Options
	loop       *ctrlutil.Loop
	synced     []cache.InformerSynced
	historyMu  sync.Mutex
	histories  map[string]History
	selectors  map[string]labels.Selector // each HPA's target selector at its last sync
	syncPeriod time.Duration
}

// New builds the controller and registers its informers' handlers.
func New(deps ctrlutil.Deps, opts Options) (*Controller, error) {
	if opts.Scales == nil || opts.Mapper == nil || opts.Metrics == nil {
		return nil, errors.New("horizontal pod autoscaler: scales, mapper and metrics are required")
	}
	if opts.SyncPeriod <= 0 {
		opts.SyncPeriod = DefaultSyncPeriod
	}
	opts.Config.Default()
	hpas := deps.Informers.Autoscaling().V2().HorizontalPodAutoscalers()
	pods := deps.Informers.Core().V1().Pods()
	c := &Controller{
		client: deps.Client, hpaLister: hpas.Lister(), podLister: pods.Lister(), recorder: deps.Recorder,
		clock: deps.Clock, log: deps.Log(), opts: opts, histories: map[string]History{}, selectors: map[string]labels.Selector{}, syncPeriod: opts.SyncPeriod,
		synced: []cache.InformerSynced{hpas.Informer().HasSynced, pods.Informer().HasSynced},
	}
	c.loop = ctrlutil.NewLoop(Name, deps, c.sync)
	if _, err := hpas.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.loop.Enqueue,
		UpdateFunc: func(oldObj, newObj any) {
			// A status write (ours, mostly) is no reason to sync again; a spec change is.
			o, ok1 := oldObj.(*autoscalingv2.HorizontalPodAutoscaler)
			n, ok2 := newObj.(*autoscalingv2.HorizontalPodAutoscaler)
			if ok1 && ok2 && equality.Semantic.DeepEqual(o.Spec, n.Spec) {
				return
			}
			c.loop.Enqueue(newObj)
		},
		DeleteFunc: c.loop.Enqueue,
	}); err != nil {
		return nil, fmt.Errorf("horizontalpodautoscaler informer handler: %w", err)
	}
	// The pod informer only feeds the lister.
	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{}); err != nil {
		return nil, fmt.Errorf("pod informer handler: %w", err)
	}
	return c, nil
}

// Run implements ctrlutil.Runner.
func (c *Controller) Run(ctx context.Context, workers int) {
	c.loop.Run(ctx, workers, c.synced...)
}

// Loop exposes the work queue so tests can drive it.
func (c *Controller) Loop() *ctrlutil.Loop { return c.loop }

// sync reconciles one HPA and schedules its next sync one period later, success or not, as
// upstream does (a failing metric is retried at the sync period, not in a hot loop).
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	hpa, err := c.hpaLister.HorizontalPodAutoscalers(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.historyMu.Lock()
		delete(c.histories, key)
		delete(c.selectors, key)
		c.historyMu.Unlock()
		return nil
	}
	if err != nil {
		return fmt.Errorf("get hpa %s: %w", key, err)
	}
	c.loop.EnqueueAfter(key, c.syncPeriod)
	if err := c.reconcile(ctx, key, hpa.DeepCopy()); err != nil {
		if apierrors.IsConflict(err) || ctx.Err() != nil {
			c.log.Debug("hpa sync failed", "hpa", key, "err", err)
		} else {
			c.log.Warn("hpa sync failed", "hpa", key, "err", err)
		}
	}
	return nil
}

// reconcile reads the inputs, asks Decide, and carries its plan out.
func (c *Controller) reconcile(ctx context.Context, key string, hpa *autoscalingv2.HorizontalPodAutoscaler) error {
	in := Input{HPA: hpa, Now: c.clock.Now(), Config: c.opts.Config}
	c.historyMu.Lock()
	in.History = c.histories[key]
	c.historyMu.Unlock()

	sc, gr, err := c.getScale(ctx, hpa)
	in.Scale, in.ScaleErr = sc, err
	if sc != nil && sc.Spec.Replicas != 0 {
		if sel, err := labels.Parse(sc.Status.Selector); err == nil && sc.Status.Selector != "" {
			pods, err := c.podLister.Pods(hpa.Namespace).List(sel)
			if err != nil {
				return fmt.Errorf("list pods of %s: %w", key, err)
			}
			in.Pods = pods
			c.historyMu.Lock()
			c.selectors[key] = sel
			in.OtherHPAs = OverlappingHPAs(key, c.selectors, pods)
			c.historyMu.Unlock()
			in.Metrics = fetchMetrics(ctx, c.opts.Metrics, hpa, sel)
		}
	}

	plan := Decide(in)
	if plan.Rescale {
		next := sc.DeepCopy()
		next.Spec.Replicas = plan.DesiredReplicas
		if _, err := c.opts.Scales.Scales(hpa.Namespace).Update(ctx, gr, next, metav1.UpdateOptions{}); err != nil {
			plan = plan.RescaleFailed(err)
		} else {
			c.log.Info("rescaled", "hpa", key, "from", sc.Spec.Replicas, "to", plan.DesiredReplicas, "reason", plan.Reason)
		}
	}
	c.historyMu.Lock()
	c.histories[key] = plan.History
	c.historyMu.Unlock()
	for _, e := range plan.Events {
		c.recorder.Event(hpa, e.Type, e.Reason, e.Message)
	}
	if !equality.Semantic.DeepEqual(hpa.Status, plan.Status) {
		next := hpa.DeepCopy()
		next.Status = plan.Status
		if _, err := c.client.AutoscalingV2().HorizontalPodAutoscalers(hpa.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
			c.recorder.Event(hpa, corev1.EventTypeWarning, "FailedUpdateStatus", err.Error())
			return errors.Join(plan.Err, fmt.Errorf("update status of %s: %w", key, err))
		}
	}
	return plan.Err
}

// getScale reads the target's /scale through each resource its kind maps to.
func (c *Controller) getScale(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler) (*autoscalingv1.Scale, schema.GroupResource, error) {
	ref := hpa.Spec.ScaleTargetRef
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, schema.GroupResource{}, fmt.Errorf("invalid API version in scale target reference: %w", err)
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
	mappings, err := c.opts.Mapper.RESTMappings(gk)
	if err != nil {
		// A kind added since the last discovery (a new CRD) is found after a reset.
		c.opts.Mapper.Reset()
		if mappings, err = c.opts.Mapper.RESTMappings(gk); err != nil {
			return nil, schema.GroupResource{}, fmt.Errorf("unable to determine resource for scale target reference: %w", err)
		}
	}
	var firstErr error
	for i, m := range mappings {
		gr := m.Resource.GroupResource()
		sc, err := c.opts.Scales.Scales(hpa.Namespace).Get(ctx, gr, ref.Name, metav1.GetOptions{})
		if err == nil {
			return sc, gr, nil
		}
		if i == 0 {
			firstErr = err
		}
	}
	if firstErr == nil {
		firstErr = errors.New("unrecognized resource")
	}
	return nil, schema.GroupResource{}, fmt.Errorf("query scale subresource of %s/%s: %w", ref.Kind, ref.Name, firstErr)
}
