package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	schedcache "github.com/skiff-sh/skiff/internal/scheduler/cache"
	"github.com/skiff-sh/skiff/internal/scheduler/framework"
	"github.com/skiff-sh/skiff/internal/scheduler/plugins"
	"github.com/skiff-sh/skiff/internal/scheduler/queue"
)

// Kubernetes' bounds for adaptive percentageOfNodesToScore.
const (
	minFeasibleNodesToFind           = 100
	minFeasibleNodesPercentageToFind = 5
)

// noNodesPlugin is the pseudo-plugin blamed when the cluster has no nodes,
// so that a node being added retries the pod.
const noNodesPlugin = "NoNodes"

// Scheduler schedules pods of its profiles. Build with New, then Run it.
type Scheduler struct {
	client      kubernetes.Interface
	cache       *schedcache.Cache
	queue       *queue.PriorityQueue
	profiles    map[string]*framework.Framework
	podLister   listersv1.PodLister
	metrics     *Metrics
	clock       clock.WithTicker
	logger      *slog.Logger
	broadcaster record.EventBroadcaster
	percentage  int32

	// Touched only by the scheduling goroutine.
	snapshot           *schedcache.Snapshot
	nextStartNodeIndex int
	rng                *rand.Rand
	// filterScratch holds a cycle's per-node Filter verdicts (findNodesThatFit), reused from cycle
	// to cycle: one slot per node, 40 KB at 5,000 nodes, was the largest allocation of a cycle.
	filterScratch []*framework.Status
	// feasibleScratch holds a cycle's feasible nodes, reused likewise: the slice is handed to
	// PreScore and Score of the same cycle only, and no plugin keeps it.
	feasibleScratch []*framework.NodeInfo

	bindings sync.WaitGroup
	// bindSlots bounds the Binding calls in flight; a binding goroutine waits for a slot, the
	// scheduling loop does not.
	bindSlots   chan struct{}
	eventClient kubernetes.Interface
	running     atomic.Bool
	// handlers are the event handlers' registrations: each has synced once the informer's
	// initial list has been delivered to it, which is later than the informer's own sync.
	handlers []cache.ResourceEventHandlerRegistration
}

// defaultMaxConcurrentBinds bounds Binding calls in flight.
const defaultMaxConcurrentBinds = 64

// New builds a scheduler whose informers come from factory (the caller starts
// the factory after New, so every informer the plugins need is registered).
func New(cfg Config, factory informers.SharedInformerFactory) (*Scheduler, error) {
	cfg.Default()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	client := cfg.Client
	if client == nil {
		var err error
		if client, err = kubernetes.NewForConfig(cfg.RestConfig); err != nil {
			return nil, fmt.Errorf("scheduler client: %w", err)
		}
	}
	metrics, err := NewMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	s := &Scheduler{
		client:     client,
		cache:      schedcache.New(),
		profiles:   map[string]*framework.Framework{},
		metrics:    metrics,
		clock:      cfg.Clock,
		logger:     cfg.Logger.With("component", "scheduler"),
		snapshot:   schedcache.NewEmptySnapshot(),
		percentage: *cfg.Configuration.PercentageOfNodesToScore,
		rng:        rand.New(rand.NewPCG(uint64(cfg.Clock.Now().UnixNano()), 0x5c1ff)),
	}
	if cfg.MaxConcurrentBinds <= 0 {
		cfg.MaxConcurrentBinds = defaultMaxConcurrentBinds
	}
	s.bindSlots = make(chan struct{}, cfg.MaxConcurrentBinds)
	s.eventClient = cfg.EventClient
	if s.eventClient == nil {
		s.eventClient = client
	}
	s.broadcaster = record.NewBroadcaster()
	registry := plugins.NewInTreeRegistry()
	for name, f := range cfg.Registry {
		registry[name] = f
	}
	pluginEvents := map[string][]framework.ClusterEvent{
		noNodesPlugin: {{Resource: framework.KindNode, ActionType: framework.Add}},
	}
	for _, profile := range cfg.Configuration.Profiles {
		recorder := s.broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: profile.SchedulerName})
		fwk, err := framework.NewFramework(registry, plugins.DefaultPlugins(), profile, framework.Options{
			Client: client, InformerFactory: factory, EventRecorder: recorder, Parallelism: int(*cfg.Configuration.Parallelism),
		})
		if err != nil {
			return nil, err
		}
		s.profiles[profile.SchedulerName] = fwk
		for _, ext := range fwk.EnqueueExtensions() {
			pluginEvents[ext.Name()] = append(pluginEvents[ext.Name()], ext.EventsToRegister()...)
		}
	}
	s.queue = queue.New(queue.Options{
		Clock:          cfg.Clock,
		InitialBackoff: time.Duration(*cfg.Configuration.PodInitialBackoffSeconds) * time.Second,
		MaxBackoff:     time.Duration(*cfg.Configuration.PodMaxBackoffSeconds) * time.Second,
		PluginEvents:   pluginEvents,
		Pending:        metrics.Pending,
	})
	s.podLister = factory.Core().V1().Pods().Lister()
	if err := s.addEventHandlers(factory); err != nil {
		return nil, err
	}
	return s, nil
}

// Queue exposes the scheduling queue (tests, metrics).
func (s *Scheduler) Queue() *queue.PriorityQueue { return s.queue }

// Cache exposes the scheduler cache (tests).
func (s *Scheduler) Cache() *schedcache.Cache { return s.cache }

// Profile returns the framework for a scheduler name.
func (s *Scheduler) Profile(name string) *framework.Framework { return s.profiles[name] }

func (s *Scheduler) responsibleFor(pod *v1.Pod) bool {
	return s.profileFor(pod) != nil
}

// profileFor returns the pod's profile; an empty schedulerName (a client
// that skipped defaulting) means the default scheduler.
func (s *Scheduler) profileFor(pod *v1.Pod) *framework.Framework {
	name := pod.Spec.SchedulerName
	if name == "" {
		name = v1.DefaultSchedulerName
	}
	return s.profiles[name]
}

func asPod(obj any) (*v1.Pod, bool) {
	switch t := obj.(type) {
	case *v1.Pod:
		return t, true
	case cache.DeletedFinalStateUnknown:
		p, ok := t.Obj.(*v1.Pod)
		return p, ok
	}
	return nil, false
}

func asNode(obj any) (*v1.Node, bool) {
	switch t := obj.(type) {
	case *v1.Node:
		return t, true
	case cache.DeletedFinalStateUnknown:
		n, ok := t.Obj.(*v1.Node)
		return n, ok
	}
	return nil, false
}

func (s *Scheduler) addEventHandlers(factory informers.SharedInformerFactory) error {
	reg, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			pod, ok := asPod(obj)
			if !ok {
				return
			}
			if pod.Spec.NodeName != "" {
				if terminal(pod) {
					return
				}
				s.cache.AddPod(pod)
				s.queue.DeleteNominatedPodIfExists(pod)
				s.queue.MoveAllToActiveOrBackoffQueue(framework.ClusterEvent{Resource: framework.KindAssignedPod, ActionType: framework.Add})
				return
			}
			if s.responsibleFor(pod) && pod.DeletionTimestamp == nil {
				s.queue.Add(pod)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			oldPod, ok1 := asPod(oldObj)
			pod, ok2 := asPod(newObj)
			if !ok1 || !ok2 {
				return
			}
			switch {
			case pod.Spec.NodeName != "" && terminal(pod):
				// A finished pod frees its resources.
				if s.cache.Has(pod) {
					s.cache.RemovePod(pod)
					s.queue.MoveAllToActiveOrBackoffQueue(framework.ClusterEvent{Resource: framework.KindAssignedPod, ActionType: framework.Delete})
				}
			case pod.Spec.NodeName != "" && oldPod.Spec.NodeName == "":
				s.queue.Delete(pod)
				s.cache.AddPod(pod)
				s.queue.MoveAllToActiveOrBackoffQueue(framework.ClusterEvent{Resource: framework.KindAssignedPod, ActionType: framework.Add})
			case pod.Spec.NodeName != "":
				s.cache.UpdatePod(oldPod, pod)
				// A resize the kubelet took in changes no spec but may free room (what the pod holds
				// is the larger of its spec and its node's allocation until then).
				if !reflect.DeepEqual(oldPod.Labels, pod.Labels) || !reflect.DeepEqual(oldPod.Spec, pod.Spec) || (oldPod.DeletionTimestamp == nil) != (pod.DeletionTimestamp == nil) ||
					framework.RequestsShrank(oldPod, pod) {
					s.queue.MoveAllToActiveOrBackoffQueue(framework.ClusterEvent{Resource: framework.KindAssignedPod, ActionType: framework.Update})
				}
			case s.responsibleFor(pod):
				if pod.DeletionTimestamp != nil {
					s.queue.Delete(pod)
					return
				}
				s.queue.Update(oldPod, pod)
			}
		},
		DeleteFunc: func(obj any) {
			pod, ok := asPod(obj)
			if !ok {
				return
			}
			s.queue.Delete(pod)
			if pod.Spec.NodeName != "" || s.cache.Has(pod) {
				s.cache.RemovePod(pod)
				s.queue.MoveAllToActiveOrBackoffQueue(framework.ClusterEvent{Resource: framework.KindAssignedPod, ActionType: framework.Delete})
			}
		},
	})
	if err != nil {
		return fmt.Errorf("pod event handler: %w", err)
	}
	s.handlers = append(s.handlers, reg)
	reg, err = factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if node, ok := asNode(obj); ok {
				s.cache.AddNode(node)
				s.queue.MoveAllToActiveOrBackoffQueue(framework.ClusterEvent{Resource: framework.KindNode, ActionType: framework.Add})
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			oldNode, ok1 := asNode(oldObj)
			node, ok2 := asNode(newObj)
			if !ok1 || !ok2 {
				return
			}
			s.cache.UpdateNode(oldNode, node)
			if nodeSchedulingPropertiesChanged(oldNode, node) {
				s.queue.MoveAllToActiveOrBackoffQueue(framework.ClusterEvent{Resource: framework.KindNode, ActionType: framework.Update})
			}
		},
		DeleteFunc: func(obj any) {
			if node, ok := asNode(obj); ok {
				s.cache.RemoveNode(node)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("node event handler: %w", err)
	}
	s.handlers = append(s.handlers, reg)
	reg, err = factory.Core().V1().Namespaces().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) {
			s.queue.MoveAllToActiveOrBackoffQueue(framework.ClusterEvent{Resource: framework.KindNamespace, ActionType: framework.Add})
		},
		UpdateFunc: func(o, n any) {
			on, ok1 := o.(*v1.Namespace)
			nn, ok2 := n.(*v1.Namespace)
			if ok1 && ok2 && !reflect.DeepEqual(on.Labels, nn.Labels) {
				s.queue.MoveAllToActiveOrBackoffQueue(framework.ClusterEvent{Resource: framework.KindNamespace, ActionType: framework.Update})
			}
		},
	})
	if err != nil {
		return fmt.Errorf("namespace event handler: %w", err)
	}
	s.handlers = append(s.handlers, reg)
	// A claim bound or provisioned, a volume created and a class added are what VolumeBinding's
	// rejections wait for; a CSI driver's capacity published or its node limit raised, and an
	// attachment gone, are what its storage capacity check and NodeVolumeLimits wait for.
	for kind, informer := range map[string]cache.SharedIndexInformer{
		framework.KindPersistentVolumeClaim: factory.Core().V1().PersistentVolumeClaims().Informer(),
		framework.KindPersistentVolume:      factory.Core().V1().PersistentVolumes().Informer(),
		framework.KindStorageClass:          factory.Storage().V1().StorageClasses().Informer(),
		framework.KindCSINode:               factory.Storage().V1().CSINodes().Informer(),
		framework.KindCSIDriver:             factory.Storage().V1().CSIDrivers().Informer(),
		framework.KindCSIStorageCapacity:    factory.Storage().V1().CSIStorageCapacities().Informer(),
		framework.KindVolumeAttachment:      factory.Storage().V1().VolumeAttachments().Informer(),
	} {
		reg, err = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) {
				s.queue.MoveAllToActiveOrBackoffQueue(framework.ClusterEvent{Resource: kind, ActionType: framework.Add})
			},
			UpdateFunc: func(any, any) {
				s.queue.MoveAllToActiveOrBackoffQueue(framework.ClusterEvent{Resource: kind, ActionType: framework.Update})
			},
			DeleteFunc: func(any) {
				s.queue.MoveAllToActiveOrBackoffQueue(framework.ClusterEvent{Resource: kind, ActionType: framework.Delete})
			},
		})
		if err != nil {
			return fmt.Errorf("%s event handler: %w", kind, err)
		}
		s.handlers = append(s.handlers, reg)
	}
	return nil
}

// nodeSchedulingPropertiesChanged ignores heartbeats: only what plugins look at counts.
func nodeSchedulingPropertiesChanged(a, b *v1.Node) bool {
	return a.Spec.Unschedulable != b.Spec.Unschedulable ||
		!reflect.DeepEqual(a.Status.Allocatable, b.Status.Allocatable) ||
		!reflect.DeepEqual(a.Labels, b.Labels) ||
		!reflect.DeepEqual(a.Spec.Taints, b.Spec.Taints) ||
		!reflect.DeepEqual(a.Status.Images, b.Status.Images)
}

// Run schedules until ctx ends; it returns after in-flight bindings finish.
// The informer factory must be started and synced.
func (s *Scheduler) Run(ctx context.Context) {
	if !s.running.CompareAndSwap(false, true) {
		s.logger.Error("scheduler Run called twice")
		return
	}
	defer s.running.Store(false)
	// A cycle before every handler has its initial list would judge a pod against part of the
	// cluster (a FailedScheduling that counts two nodes of five), as right after a leader change.
	if !cache.WaitForCacheSync(ctx.Done(), s.handlersSynced) {
		return
	}
	stopEvents := s.startEvents()
	defer stopEvents()
	// The queue's flush loop ends with ctx; Run waits for it so that nothing of
	// the scheduler outlives the call.
	var queueLoop sync.WaitGroup
	queueLoop.Go(func() { s.queue.Run(ctx) })
	defer queueLoop.Wait()
	for ctx.Err() == nil {
		s.ScheduleOne(ctx)
	}
	s.bindings.Wait()
}

// handlersSynced reports whether every event handler has received its informer's initial list.
func (s *Scheduler) handlersSynced() bool {
	for _, reg := range s.handlers {
		if !reg.HasSynced() {
			return false
		}
	}
	return true
}

func (s *Scheduler) startEvents() func() {
	w := s.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: s.eventClient.CoreV1().Events("")})
	return w.Stop
}

// Shutdown stops the event broadcaster and closes the queue.
func (s *Scheduler) Shutdown() {
	s.queue.Close()
	s.broadcaster.Shutdown()
}

// ScheduleOne pops one pod and runs its scheduling cycle; binding continues
// in the background.
func (s *Scheduler) ScheduleOne(ctx context.Context) {
	pInfo, err := s.queue.Pop(ctx)
	if err != nil {
		return
	}
	pod := pInfo.Pod
	fwk := s.profileFor(pod)
	if fwk == nil || pod.DeletionTimestamp != nil || s.cache.Has(pod) {
		return
	}
	start := s.clock.Now()
	cycle := s.queue.SchedulingCycle()
	s.cache.UpdateSnapshot(s.snapshot)
	state := framework.NewCycleState()
	host, err := s.schedulePod(ctx, fwk, state, pod)
	if err != nil {
		nominated := ""
		var fitErr *framework.FitError
		if errors.As(err, &fitErr) && fwk.HasPostFilter() && s.snapshot.NumNodes() > 0 {
			s.metrics.PreemptionAttempts.Inc()
			result, status := fwk.RunPostFilterPlugins(ctx, state, pod, fitErr.Diagnosis.NodeToStatus, s.snapshot)
			if status.Code() == framework.Error {
				s.logger.Error("preemption failed", "pod", queue.PodKey(pod), "err", status.AsError())
			} else if msg := status.Message(); msg != "" {
				fitErr.Diagnosis.PostFilterMsg = msg
			}
			if result != nil && result.NominatedNodeName != "" {
				nominated = result.NominatedNodeName
			}
		}
		s.handleFailure(ctx, fwk, pInfo, err, nominated, cycle, start)
		return
	}
	assumed := assumedOn(pod, host)
	if err := s.cache.AssumePod(assumed); err != nil {
		s.handleFailure(ctx, fwk, pInfo, err, "", cycle, start)
		return
	}
	s.queue.DeleteNominatedPodIfExists(pod)
	if st := fwk.RunReservePlugins(ctx, state, assumed, host); !st.IsSuccess() {
		fwk.RunUnreservePlugins(ctx, state, assumed, host)
		_ = s.cache.ForgetPod(assumed)
		s.handleFailure(ctx, fwk, pInfo, st.AsError(), "", cycle, start)
		return
	}
	s.bindings.Add(1)
	go func() {
		defer s.bindings.Done()
		select {
		case s.bindSlots <- struct{}{}:
		case <-ctx.Done():
			// Leadership lost before a slot freed: undo as a failed bind would.
			_ = s.cache.ForgetPod(assumed)
			fwk.RunUnreservePlugins(ctx, state, assumed, host)
			return
		}
		defer func() { <-s.bindSlots }()
		s.bind(ctx, fwk, state, pInfo, assumed, host, cycle, start)
	}()
}

func (s *Scheduler) bind(ctx context.Context, fwk *framework.Framework, state *framework.CycleState, pInfo *queue.QueuedPodInfo, assumed *v1.Pod, host string, cycle int64, start time.Time) {
	st := fwk.RunPreBindPlugins(ctx, state, assumed, host)
	if st.IsSuccess() {
		st = fwk.RunBindPlugins(ctx, state, assumed, host)
	}
	if !st.IsSuccess() {
		if err := s.cache.ForgetPod(assumed); err != nil {
			s.logger.Error("forget assumed pod", "pod", queue.PodKey(assumed), "err", err)
		}
		fwk.RunUnreservePlugins(ctx, state, assumed, host)
		if ctx.Err() != nil {
			// Stopped (leadership lost): the pod stays pending for the next leader.
			return
		}
		// The space the pod held is free again for others.
		s.queue.MoveAllToActiveOrBackoffQueue(framework.ClusterEvent{Resource: framework.KindAssignedPod, ActionType: framework.Delete})
		s.handleFailure(ctx, fwk, pInfo, st.AsError(), "", cycle, start)
		return
	}
	s.cache.FinishBinding(assumed)
	now := s.clock.Now()
	s.metrics.Attempts.WithLabelValues("scheduled", fwk.ProfileName()).Inc()
	s.metrics.AttemptDuration.WithLabelValues("scheduled", fwk.ProfileName()).Observe(now.Sub(start).Seconds())
	if pInfo.InitialAttemptTimestamp != nil {
		s.metrics.E2EDuration.WithLabelValues(fwk.ProfileName()).Observe(now.Sub(*pInfo.InitialAttemptTimestamp).Seconds())
	}
	fwk.EventRecorder().Eventf(assumed, v1.EventTypeNormal, "Scheduled", "Successfully assigned %s/%s to %s", assumed.Namespace, assumed.Name, host)
}

// schedulePod is the pure decision: snapshot in, node name (or FitError) out.
func (s *Scheduler) schedulePod(ctx context.Context, fwk *framework.Framework, state *framework.CycleState, pod *v1.Pod) (string, error) {
	nodes := s.snapshot.List()
	if len(nodes) == 0 {
		return "", &framework.FitError{Pod: pod, Diagnosis: framework.Diagnosis{
			PreFilterMsg: "no nodes available to schedule pods", UnschedulablePlugins: map[string]bool{noNodesPlugin: true}}}
	}
	feasible, diagnosis, err := s.findNodesThatFit(ctx, fwk, state, pod)
	if err != nil {
		return "", err
	}
	if len(feasible) == 0 {
		return "", &framework.FitError{Pod: pod, NumAllNodes: len(nodes), Diagnosis: diagnosis}
	}
	if len(feasible) == 1 {
		return feasible[0].Node().Name, nil
	}
	if st := fwk.RunPreScorePlugins(ctx, state, pod, feasible, s.snapshot); !st.IsSuccess() {
		return "", st.AsError()
	}
	scores, st := fwk.RunScorePlugins(ctx, state, pod, feasible)
	if !st.IsSuccess() {
		return "", st.AsError()
	}
	defer scores.Release()
	return selectHost(feasible, scores.Totals, s.rng), nil
}

// selectHost picks the highest total, breaking ties uniformly at random.
func selectHost(nodes []*framework.NodeInfo, totals []int64, rng *rand.Rand) string {
	best, ties := 0, 1
	for i := 1; i < len(nodes); i++ {
		switch {
		case totals[i] > totals[best]:
			best, ties = i, 1
		case totals[i] == totals[best]:
			ties++
			if rng.IntN(ties) == 0 {
				best = i
			}
		}
	}
	return nodes[best].Node().Name
}

// NumFeasibleNodesToFind is how many feasible nodes a cycle looks for:
// all in small clusters, else percentage (adaptive when 0: 50% minus 1% per
// 125 nodes, at least 5%), at least 100.
func NumFeasibleNodesToFind(percentage int32, numAllNodes int) int {
	if numAllNodes < minFeasibleNodesToFind || percentage >= 100 {
		return numAllNodes
	}
	pct := int(percentage)
	if pct <= 0 {
		pct = 50 - numAllNodes/125
		if pct < minFeasibleNodesPercentageToFind {
			pct = minFeasibleNodesPercentageToFind
		}
	}
	n := numAllNodes * pct / 100
	if n < minFeasibleNodesToFind {
		return minFeasibleNodesToFind
	}
	return n
}

func (s *Scheduler) findNodesThatFit(ctx context.Context, fwk *framework.Framework, state *framework.CycleState, pod *v1.Pod) ([]*framework.NodeInfo, framework.Diagnosis, error) {
	all := s.snapshot.List()
	diagnosis := framework.Diagnosis{NodeToStatus: framework.NodeToStatus{}, UnschedulablePlugins: map[string]bool{}}
	if st := fwk.RunPreFilterPlugins(ctx, state, pod, s.snapshot); !st.IsSuccess() {
		if !st.IsRejected() {
			return nil, diagnosis, st.AsError()
		}
		for _, ni := range all {
			diagnosis.NodeToStatus[ni.Node().Name] = st
		}
		diagnosis.PreFilterMsg = st.Message()
		diagnosis.UnschedulablePlugins[st.Plugin()] = true
		return nil, diagnosis, nil
	}
	percentage := s.percentage
	if p := fwk.PercentageOfNodesToScore(); p != nil {
		percentage = *p
	}
	want := NumFeasibleNodesToFind(percentage, len(all))
	if cap(s.feasibleScratch) < want {
		s.feasibleScratch = make([]*framework.NodeInfo, want)
	}
	feasible := s.feasibleScratch[:want]
	if cap(s.filterScratch) < len(all) {
		s.filterScratch = make([]*framework.Status, len(all))
	}
	// Every entry is nil between cycles: only the failed nodes' entries are set, and cleared
	// again below (clearing thousands of pointers twice a cycle, with GC write barriers, cost
	// more than the filters of a cluster where every node fits).
	statuses := s.filterScratch[:len(all)]
	var found, processed, failed atomic.Int64
	var firstErr atomic.Pointer[framework.Status]
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := s.nextStartNodeIndex
	prio := framework.PodPriority(pod)
	nominated := s.queue.NominatedPodsByNode()
	filters := fwk.FiltersToRun(state)
	fwk.Parallelizer().Until(cctx, len(all), func(i int) {
		ni := all[(start+i)%len(all)]
		if nominated != nil {
			ni = withNominatedPods(pod, prio, ni, nominated[ni.Node().Name])
		}
		st := fwk.RunFilters(cctx, filters, state, pod, ni)
		processed.Add(1)
		if st.IsSuccess() {
			n := found.Add(1)
			if n > int64(want) {
				cancel()
				return
			}
			feasible[n-1] = ni
			if n == int64(want) {
				cancel()
			}
			return
		}
		if st.Code() == framework.Error {
			firstErr.CompareAndSwap(nil, st)
			cancel()
			return
		}
		statuses[(start+i)%len(all)] = st
		failed.Add(1)
	})
	if failed.Load() > 0 {
		// The verdicts go into the diagnosis; the scratch must not keep them alive after.
		for i, st := range statuses {
			if st != nil {
				diagnosis.NodeToStatus[all[i].Node().Name] = st
				diagnosis.UnschedulablePlugins[st.Plugin()] = true
				statuses[i] = nil
			}
		}
	}
	if st := firstErr.Load(); st != nil {
		return nil, diagnosis, st.AsError()
	}
	s.nextStartNodeIndex = (start + int(processed.Load())) % len(all)
	n := min(int(found.Load()), want)
	// Nodes past want found by other workers were not stored; drop the holes in place.
	out := feasible[:0]
	for _, ni := range feasible[:n] {
		if ni != nil {
			out = append(out, ni)
		}
	}
	return out, diagnosis, nil
}

// withNominatedPods adds pods nominated to the node with at least pod's
// priority, so the room a preemptor freed is not taken by a lesser pod.
func withNominatedPods(pod *v1.Pod, prio int32, ni *framework.NodeInfo, nominated []*v1.Pod) *framework.NodeInfo {
	if len(nominated) == 0 {
		return ni
	}
	var out *framework.NodeInfo
	for _, p := range nominated {
		if p.UID == pod.UID || framework.PodPriority(p) < prio {
			continue
		}
		if out == nil {
			out = ni.Clone()
		}
		out.AddPod(assumedOn(p, ni.Node().Name))
	}
	if out == nil {
		return ni
	}
	return out
}

// assumedOn is pod as if bound to node: a copy of the Pod struct with spec.nodeName set. The
// maps and slices it holds are the informer's, shared: objects from the informers are never
// changed, by the scheduler or anyone else, so a deep copy per scheduled pod (6 % of the
// process's allocations while binding) bought nothing.
func assumedOn(pod *v1.Pod, node string) *v1.Pod {
	assumed := *pod
	assumed.Spec.NodeName = node
	return &assumed
}

// handleFailure records the failure (event, condition, metrics) and requeues.
func (s *Scheduler) handleFailure(ctx context.Context, fwk *framework.Framework, pInfo *queue.QueuedPodInfo, err error, nominated string, cycle int64, start time.Time) {
	pod := pInfo.Pod
	reason, result := v1.PodReasonSchedulerError, "error"
	var fitErr *framework.FitError
	if errors.As(err, &fitErr) {
		reason, result = v1.PodReasonUnschedulable, "unschedulable"
		pInfo.UnschedulablePlugins = sets.New[string]()
		for p := range fitErr.Diagnosis.UnschedulablePlugins {
			if p != "" {
				pInfo.UnschedulablePlugins.Insert(p)
			}
		}
		pInfo.Errored = false
	} else {
		pInfo.Errored = true
		pInfo.UnschedulablePlugins = nil
	}
	s.metrics.Attempts.WithLabelValues(result, fwk.ProfileName()).Inc()
	s.metrics.AttemptDuration.WithLabelValues(result, fwk.ProfileName()).Observe(s.clock.Now().Sub(start).Seconds())
	msg := err.Error()
	s.logger.Info("unable to schedule pod", "pod", queue.PodKey(pod), "reason", reason, "message", msg)

	// Requeue only a pod that still exists and is still pending.
	current, getErr := s.podLister.Pods(pod.Namespace).Get(pod.Name)
	switch {
	case getErr != nil && apierrors.IsNotFound(getErr):
		return
	case getErr == nil && (current.UID != pod.UID || current.Spec.NodeName != ""):
		return
	case getErr == nil:
		pInfo.PodInfo = framework.NewPodInfo(current)
		pod = current
	}
	if nominated != "" {
		s.queue.AddNominatedPod(pod, nominated)
	}
	s.queue.AddUnschedulableIfNotPresent(pInfo, cycle)
	fwk.EventRecorder().Event(pod, v1.EventTypeWarning, "FailedScheduling", msg)
	if err := s.updatePodStatus(ctx, pod, reason, msg, nominated); err != nil {
		s.logger.Error("update pod status", "pod", queue.PodKey(pod), "err", err)
	}
}

// updatePodStatus sets PodScheduled=False (and nominatedNodeName) through
// pods/status, skipping the write when nothing would change.
func (s *Scheduler) updatePodStatus(ctx context.Context, pod *v1.Pod, reason, msg, nominated string) error {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == reason && c.Message == msg &&
			(nominated == "" || pod.Status.NominatedNodeName == nominated) {
			return nil
		}
	}
	status := map[string]any{"conditions": []map[string]any{{
		"type": string(v1.PodScheduled), "status": string(v1.ConditionFalse), "reason": reason, "message": msg,
		"lastProbeTime": nil, "lastTransitionTime": metav1.NewTime(s.clock.Now()).Rfc3339Copy(),
	}}}
	if nominated != "" {
		status["nominatedNodeName"] = nominated
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return fmt.Errorf("encode status patch: %w", err)
	}
	if _, err := s.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patch status of %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}
