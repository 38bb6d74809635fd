package simnode

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Simulator is a running set of simulated nodes.
type Simulator struct {
	cfg    Config
	nodes  []*simNode
	byName map[string]*simNode

	informer cache.SharedIndexInformer
	lister   corelisters.PodLister
	queue    workqueue.TypedRateLimitingInterface[string]

	// mu guards pods and every node's pod addresses.
	mu   sync.Mutex
	pods map[string]*podState

	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopOnce sync.Once
}

// Run simulates the nodes until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	s, err := Start(ctx, cfg)
	if err != nil {
		return err
	}
	<-ctx.Done()
	s.Stop()
	return nil
}

// Start registers the nodes and their Leases, waits for the pod informer to sync and returns with
// the simulation running in the background until ctx ends or Stop is called.
func Start(ctx context.Context, cfg Config) (*Simulator, error) {
	cfg.Default()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("simnode config: %w", err)
	}
	s := &Simulator{
		cfg:    cfg,
		nodes:  make([]*simNode, cfg.Nodes),
		byName: make(map[string]*simNode, cfg.Nodes),
		pods:   map[string]*podState{},
	}
	for i := range s.nodes {
		index := cfg.FirstIndex + i
		n := &simNode{name: NodeName(cfg.NamePrefix, index), index: index, hostIP: hostIP(index), pods: newPodAddresses(index)}
		s.nodes[i] = n
		s.byName[n.name] = n
	}
	if err := s.registerNodes(ctx); err != nil {
		return nil, err
	}

	runCtx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	s.queue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Clock: cfg.Clock})
	// One informer over every bound pod in the cluster: at 5,000 nodes a watch per node would be
	// 5,000 watches on the API server.
	s.informer = coreinformers.NewFilteredPodInformer(cfg.Client, metav1.NamespaceAll, 0, cache.Indexers{},
		func(opts *metav1.ListOptions) {
			opts.FieldSelector = fields.OneTermNotEqualSelector("spec.nodeName", "").String()
		})
	// The cache holds every bound pod in the cluster, not only this simulator's: managedFields are
	// a large share of each and never needed. A status update without them keeps the server's.
	if err := s.informer.SetTransform(dropManagedFields); err != nil {
		cancel()
		return nil, fmt.Errorf("simnode: pod informer transform: %w", err)
	}
	s.lister = corelisters.NewPodLister(s.informer.GetIndexer())
	if _, err := s.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: s.onPod,
		UpdateFunc: func(old, cur any) {
			if o, ok := old.(*corev1.Pod); ok {
				if c, ok := cur.(*corev1.Pod); ok && o.ResourceVersion == c.ResourceVersion {
					return
				}
			}
			s.onPod(cur)
		},
		DeleteFunc: s.onPod,
	}); err != nil {
		cancel()
		return nil, fmt.Errorf("simnode: watch pods: %w", err)
	}
	s.wg.Go(func() { s.informer.RunWithContext(runCtx) })
	if !cache.WaitFor(runCtx, "", s.informer.HasSyncedChecker()) {
		s.Stop()
		return nil, errors.Join(errors.New("simnode: pod informer did not sync"), ctx.Err())
	}
	s.scheduleFirstRenewals(cfg.Clock.Now())
	// The ticker exists before Start returns, so a test's fake clock step is never missed.
	ticker := s.newHeartbeatTicker()
	s.wg.Go(func() { s.heartbeatLoop(runCtx, ticker) })
	for range cfg.Workers {
		s.wg.Go(func() {
			for s.processNext(runCtx) {
			}
		})
	}
	s.wg.Go(func() {
		<-runCtx.Done()
		s.queue.ShutDown()
	})
	return s, nil
}

// Stop ends the simulation and waits for it. Nodes and Leases stay in the cluster; without
// renewals the node lifecycle controller marks the nodes unreachable, as for crashed kubelets.
func (s *Simulator) Stop() {
	s.stopOnce.Do(func() {
		s.cancel()
		s.wg.Wait()
	})
}

// NodeNames lists the simulated nodes in index order.
func (s *Simulator) NodeNames() []string {
	names := make([]string, len(s.nodes))
	for i, n := range s.nodes {
		names[i] = n.name
	}
	return names
}

// onPod queues a pod of one of this simulator's nodes; every other pod is ignored.
func (s *Simulator) onPod(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok || s.byName[pod.Spec.NodeName] == nil {
		return
	}
	s.queue.Add(pod.Namespace + "/" + pod.Name)
}

func (s *Simulator) processNext(ctx context.Context) bool {
	key, shutdown := s.queue.Get()
	if shutdown {
		return false
	}
	defer s.queue.Done(key)
	if err := s.syncPod(ctx, key); err != nil {
		if ctx.Err() == nil && !apierrors.IsConflict(err) {
			s.cfg.Logger.Warn("simnode: pod sync failed; retrying", "pod", key, "err", err)
		}
		s.queue.AddRateLimited(key)
		return true
	}
	s.queue.Forget(key)
	return true
}

func dropManagedFields(obj any) (any, error) {
	if pod, ok := obj.(*corev1.Pod); ok {
		pod.ManagedFields = nil
	}
	return obj, nil
}
