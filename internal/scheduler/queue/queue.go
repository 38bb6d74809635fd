package queue

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/scheduler/framework"
)

// ErrClosed is returned by Pop after Close.
var ErrClosed = errors.New("scheduling queue is closed")

// Kubernetes' periods for the background flushes.
const (
	DefaultMaxInUnschedulable  = 5 * time.Minute
	backoffFlushPeriod         = time.Second
	unschedulableFlushInterval = 30 * time.Second
)

// QueuedPodInfo is a pending pod with its queueing history.
type QueuedPodInfo struct {
	*framework.PodInfo
	// Timestamp is when the pod last entered a queue (orders equal priorities;
	// backoff starts here).
	Timestamp time.Time
	// InitialAttemptTimestamp is when the pod was first popped, for e2e latency.
	InitialAttemptTimestamp *time.Time
	// Attempts counts scheduling attempts.
	Attempts int
	// UnschedulablePlugins rejected the pod in its last attempt; their events move it.
	UnschedulablePlugins sets.Set[string]
	// Errored is true when the last attempt failed with an internal error.
	Errored bool
}

// Options configure the queue.
type Options struct {
	Clock              clock.WithTicker
	InitialBackoff     time.Duration
	MaxBackoff         time.Duration
	MaxInUnschedulable time.Duration
	// PluginEvents maps plugin names to the events that may make pods they rejected fit.
	PluginEvents map[string][]framework.ClusterEvent
	// Pending, if set, is updated with the pods per queue ("active", "backoff", "unschedulable", "gated").
	Pending *prometheus.GaugeVec
}

// PriorityQueue is the scheduling queue. Safe for concurrent use.
type PriorityQueue struct {
	opts Options

	mu               sync.Mutex
	cond             *sync.Cond
	active           *keyedHeap[*QueuedPodInfo]
	backoff          *keyedHeap[*QueuedPodInfo]
	unschedulable    map[string]*QueuedPodInfo
	gated            map[string]*QueuedPodInfo
	schedulingCycle  int64
	moveRequestCycle int64
	closed           bool

	nominatedByNode map[string][]*v1.Pod
	nominatedNode   map[types.UID]string
}

// New returns an empty queue.
func New(opts Options) *PriorityQueue {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.InitialBackoff <= 0 {
		opts.InitialBackoff = time.Second
	}
	if opts.MaxBackoff < opts.InitialBackoff {
		opts.MaxBackoff = max(10*time.Second, opts.InitialBackoff)
	}
	if opts.MaxInUnschedulable <= 0 {
		opts.MaxInUnschedulable = DefaultMaxInUnschedulable
	}
	q := &PriorityQueue{
		opts:             opts,
		unschedulable:    map[string]*QueuedPodInfo{},
		gated:            map[string]*QueuedPodInfo{},
		nominatedByNode:  map[string][]*v1.Pod{},
		nominatedNode:    map[types.UID]string{},
		moveRequestCycle: -1,
	}
	q.cond = sync.NewCond(&q.mu)
	q.active = newKeyedHeap(keyOf, func(a, b *QueuedPodInfo) bool {
		pa, pb := a.PodInfo.Priority, b.PodInfo.Priority
		if pa != pb {
			return pa > pb
		}
		return a.Timestamp.Before(b.Timestamp)
	})
	q.backoff = newKeyedHeap(keyOf, func(a, b *QueuedPodInfo) bool {
		return q.backoffExpiry(a).Before(q.backoffExpiry(b))
	})
	return q
}

func keyOf(p *QueuedPodInfo) string { return PodKey(p.Pod) }

// PodKey is namespace/name.
func PodKey(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }

// backoffDuration doubles from the initial backoff per attempt, capped.
func (q *PriorityQueue) backoffDuration(p *QueuedPodInfo) time.Duration {
	d := q.opts.InitialBackoff
	for i := 1; i < p.Attempts; i++ {
		if d >= q.opts.MaxBackoff/2 {
			return q.opts.MaxBackoff
		}
		d *= 2
	}
	return min(d, q.opts.MaxBackoff)
}

func (q *PriorityQueue) backoffExpiry(p *QueuedPodInfo) time.Time {
	return p.Timestamp.Add(q.backoffDuration(p))
}

func (q *PriorityQueue) isBackingOff(p *QueuedPodInfo) bool {
	return p.Attempts > 0 && q.backoffExpiry(p).After(q.opts.Clock.Now())
}

func (q *PriorityQueue) newInfo(pod *v1.Pod) *QueuedPodInfo {
	return &QueuedPodInfo{PodInfo: framework.NewPodInfo(pod), Timestamp: q.opts.Clock.Now()}
}

// Add enqueues a new pending pod.
func (q *PriorityQueue) Add(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := PodKey(pod)
	q.removeLocked(key)
	p := q.newInfo(pod)
	// A nomination made by a previous leader keeps reserving its node.
	if nn := pod.Status.NominatedNodeName; nn != "" {
		q.deleteNominatedLocked(pod)
		q.addNominatedLocked(pod, nn)
	}
	if len(pod.Spec.SchedulingGates) > 0 {
		q.gated[key] = p
	} else {
		q.active.AddOrUpdate(p)
		q.cond.Broadcast()
	}
	q.updateMetricsLocked()
}

func (q *PriorityQueue) removeLocked(key string) (*QueuedPodInfo, bool) {
	if p, ok := q.active.Delete(key); ok {
		return p, true
	}
	if p, ok := q.backoff.Delete(key); ok {
		return p, true
	}
	if p, ok := q.unschedulable[key]; ok {
		delete(q.unschedulable, key)
		return p, true
	}
	if p, ok := q.gated[key]; ok {
		delete(q.gated, key)
		return p, true
	}
	return nil, false
}

// Update replaces a pending pod. A change that could affect scheduling (spec,
// labels, annotations) moves it out of the unschedulable set; status-only
// changes (such as the scheduler's own condition) do not.
func (q *PriorityQueue) Update(oldPod, newPod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := PodKey(newPod)
	if nn, ok := q.nominatedNode[newPod.UID]; ok && newPod.Status.NominatedNodeName != "" && nn != newPod.Status.NominatedNodeName {
		q.deleteNominatedLocked(newPod)
		q.addNominatedLocked(newPod, newPod.Status.NominatedNodeName)
	}
	if p, ok := q.active.Get(key); ok {
		p.PodInfo = framework.NewPodInfo(newPod)
		q.active.AddOrUpdate(p)
		return
	}
	if p, ok := q.backoff.Get(key); ok {
		p.PodInfo = framework.NewPodInfo(newPod)
		q.backoff.AddOrUpdate(p)
		return
	}
	if p, ok := q.gated[key]; ok {
		p.PodInfo = framework.NewPodInfo(newPod)
		if len(newPod.Spec.SchedulingGates) == 0 {
			delete(q.gated, key)
			p.Timestamp = q.opts.Clock.Now()
			q.active.AddOrUpdate(p)
			q.cond.Broadcast()
			q.updateMetricsLocked()
		}
		return
	}
	if p, ok := q.unschedulable[key]; ok {
		p.PodInfo = framework.NewPodInfo(newPod)
		if oldPod != nil && schedulingRelevantChange(oldPod, newPod) {
			delete(q.unschedulable, key)
			q.requeueLocked(p)
			q.updateMetricsLocked()
		}
		return
	}
	// Not queued (e.g. being scheduled right now): nothing to do; the
	// in-flight attempt's result decides where it goes.
}

func schedulingRelevantChange(oldPod, newPod *v1.Pod) bool {
	return !reflect.DeepEqual(oldPod.Spec, newPod.Spec) || !reflect.DeepEqual(oldPod.Labels, newPod.Labels) ||
		!reflect.DeepEqual(oldPod.Annotations, newPod.Annotations)
}

// Delete removes a pod from every queue and the nominator.
func (q *PriorityQueue) Delete(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.removeLocked(PodKey(pod))
	q.deleteNominatedLocked(pod)
	q.updateMetricsLocked()
}

// Pop blocks until a pod is active (or the queue is closed / ctx done).
func (q *PriorityQueue) Pop(ctx context.Context) (*QueuedPodInfo, error) {
	stop := context.AfterFunc(ctx, func() {
		q.mu.Lock()
		q.cond.Broadcast()
		q.mu.Unlock()
	})
	defer stop()
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.active.Len() == 0 {
		if q.closed {
			return nil, ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		q.cond.Wait()
	}
	p, _ := q.active.Pop()
	p.Attempts++
	q.schedulingCycle++
	if p.InitialAttemptTimestamp == nil {
		now := q.opts.Clock.Now()
		p.InitialAttemptTimestamp = &now
	}
	q.updateMetricsLocked()
	return p, nil
}

// SchedulingCycle is the number of pods popped so far.
func (q *PriorityQueue) SchedulingCycle() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.schedulingCycle
}

// AddUnschedulableIfNotPresent returns a pod after a failed attempt made in
// podSchedulingCycle. Pods that errored, or that missed a move request
// while being scheduled, go to backoff; others wait for an event.
func (q *PriorityQueue) AddUnschedulableIfNotPresent(p *QueuedPodInfo, podSchedulingCycle int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := keyOf(p)
	if _, ok := q.active.Get(key); ok {
		return
	}
	if _, ok := q.backoff.Get(key); ok {
		return
	}
	if _, ok := q.unschedulable[key]; ok {
		return
	}
	p.Timestamp = q.opts.Clock.Now()
	if p.Errored || len(p.UnschedulablePlugins) == 0 || q.moveRequestCycle >= podSchedulingCycle {
		q.backoff.AddOrUpdate(p)
	} else {
		q.unschedulable[key] = p
	}
	q.updateMetricsLocked()
}

// requeueLocked puts a pod to backoffQ if still backing off, else activeQ.
func (q *PriorityQueue) requeueLocked(p *QueuedPodInfo) {
	if q.isBackingOff(p) {
		q.backoff.AddOrUpdate(p)
		return
	}
	q.active.AddOrUpdate(p)
	q.cond.Broadcast()
}

// MoveAllToActiveOrBackoffQueue moves unschedulable pods that a plugin
// interested in event rejected. Pods in flight at this moment will go to
// backoff instead of the unschedulable set when they fail.
func (q *PriorityQueue) MoveAllToActiveOrBackoffQueue(event framework.ClusterEvent) {
	q.mu.Lock()
	defer q.mu.Unlock()
	moved := false
	for key, p := range q.unschedulable {
		if q.eventMatters(p, event) {
			delete(q.unschedulable, key)
			q.requeueLocked(p)
			moved = true
		}
	}
	q.moveRequestCycle = q.schedulingCycle
	if moved {
		q.updateMetricsLocked()
	}
}

func (q *PriorityQueue) eventMatters(p *QueuedPodInfo, event framework.ClusterEvent) bool {
	if event.Resource == framework.KindWildcard || len(p.UnschedulablePlugins) == 0 {
		return true
	}
	for plugin := range p.UnschedulablePlugins {
		for _, interest := range q.opts.PluginEvents[plugin] {
			if interest.Match(event) {
				return true
			}
		}
	}
	return false
}

// FlushBackoffQCompleted moves pods whose backoff expired to activeQ.
func (q *PriorityQueue) FlushBackoffQCompleted() {
	q.mu.Lock()
	defer q.mu.Unlock()
	moved := false
	for {
		p, ok := q.backoff.Peek()
		if !ok || q.isBackingOff(p) {
			break
		}
		q.backoff.Pop()
		q.active.AddOrUpdate(p)
		moved = true
	}
	if moved {
		q.cond.Broadcast()
		q.updateMetricsLocked()
	}
}

// FlushUnschedulableLeftover moves pods unschedulable for longer than
// MaxInUnschedulable, in case an event that would have helped was missed.
func (q *PriorityQueue) FlushUnschedulableLeftover() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.opts.Clock.Now()
	moved := false
	for key, p := range q.unschedulable {
		if now.Sub(p.Timestamp) > q.opts.MaxInUnschedulable {
			delete(q.unschedulable, key)
			q.requeueLocked(p)
			moved = true
		}
	}
	if moved {
		q.updateMetricsLocked()
	}
}

// Run flushes backoffQ every second and the unschedulable set every 30s until ctx ends.
func (q *PriorityQueue) Run(ctx context.Context) {
	backoffTicker := q.opts.Clock.NewTicker(backoffFlushPeriod)
	defer backoffTicker.Stop()
	leftoverTicker := q.opts.Clock.NewTicker(unschedulableFlushInterval)
	defer leftoverTicker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-backoffTicker.C():
			q.FlushBackoffQCompleted()
		case <-leftoverTicker.C():
			q.FlushUnschedulableLeftover()
		}
	}
}

// Close wakes Pop callers with ErrClosed.
func (q *PriorityQueue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.cond.Broadcast()
}

// Counts returns the pods in each queue.
func (q *PriorityQueue) Counts() (active, backoff, unschedulable, gated int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.active.Len(), q.backoff.Len(), len(q.unschedulable), len(q.gated)
}

// Has reports whether the pod is in any queue.
func (q *PriorityQueue) Has(pod *v1.Pod) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := PodKey(pod)
	_, a := q.active.Get(key)
	_, b := q.backoff.Get(key)
	_, u := q.unschedulable[key]
	_, g := q.gated[key]
	return a || b || u || g
}

func (q *PriorityQueue) updateMetricsLocked() {
	if q.opts.Pending == nil {
		return
	}
	q.opts.Pending.WithLabelValues("active").Set(float64(q.active.Len()))
	q.opts.Pending.WithLabelValues("backoff").Set(float64(q.backoff.Len()))
	q.opts.Pending.WithLabelValues("unschedulable").Set(float64(len(q.unschedulable)))
	q.opts.Pending.WithLabelValues("gated").Set(float64(len(q.gated)))
}

// AddNominatedPod records that pod waits for room on nodeName (after preempting).
func (q *PriorityQueue) AddNominatedPod(pod *v1.Pod, nodeName string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.deleteNominatedLocked(pod)
	q.addNominatedLocked(pod, nodeName)
}

func (q *PriorityQueue) addNominatedLocked(pod *v1.Pod, nodeName string) {
	if nodeName == "" {
		return
	}
	q.nominatedNode[pod.UID] = nodeName
	q.nominatedByNode[nodeName] = append(q.nominatedByNode[nodeName], pod)
}

// DeleteNominatedPodIfExists forgets a nomination (pod bound or deleted).
func (q *PriorityQueue) DeleteNominatedPodIfExists(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.deleteNominatedLocked(pod)
}

func (q *PriorityQueue) deleteNominatedLocked(pod *v1.Pod) {
	node, ok := q.nominatedNode[pod.UID]
	if !ok {
		return
	}
	delete(q.nominatedNode, pod.UID)
	list := q.nominatedByNode[node]
	for i, p := range list {
		if p.UID == pod.UID {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(q.nominatedByNode, node)
	} else {
		q.nominatedByNode[node] = list
	}
}

// NominatedPodsByNode copies the nominations (nil when there are none), so a
// scheduling cycle reads them without taking the queue lock per node.
func (q *PriorityQueue) NominatedPodsByNode() map[string][]*v1.Pod {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.nominatedByNode) == 0 {
		return nil
	}
	out := make(map[string][]*v1.Pod, len(q.nominatedByNode))
	for node, pods := range q.nominatedByNode {
		out[node] = append([]*v1.Pod(nil), pods...)
	}
	return out
}

// NominatedPodsForNode returns the pods nominated to nodeName.
func (q *PriorityQueue) NominatedPodsForNode(nodeName string) []*v1.Pod {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]*v1.Pod(nil), q.nominatedByNode[nodeName]...)
}
