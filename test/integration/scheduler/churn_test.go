package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/retry"

	st "github.com/skiff-sh/skiff/internal/scheduler/schedtest"
)

// Churn sizing: few nodes so that they are full most of the time (overcommit is possible only
// when capacity is tight), allocatable varying between half and all of the base.
const (
	churnNodes = 20
	// raceWindow is how long after a node's allocatable shrank a binding may still fit the value
	// before: the scheduler decided on the node as it was, and the change was in flight. Kubernetes
	// has the same window (it does not evict on allocatable changes).
	raceWindow = 2 * time.Second
)

var (
	churnCPU    = []string{"2", "3", "4"}
	churnMemory = []string{"4Gi", "6Gi", "8Gi"}
	churnPodCap = []string{"20", "30", "40"}
	podCPU      = []string{"100m", "200m", "300m", "500m"}
	podMemory   = []string{"64Mi", "128Mi", "256Mi"}
)

var checkedResources = []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourcePods}

// recorded is one watch event, stamped when it arrived.
type recorded struct {
	rv      uint64
	arrived time.Time
	typ     watch.EventType
	pod     *v1.Pod
	node    *v1.Node
}

// recorder keeps every pod and node event of the test, from one resourceVersion on, without gaps
// (retry watchers resume where they stopped).
type recorder struct {
	mu     sync.Mutex
	events []recorded
	// bound is the set of currently bound pods by name (for the deleter), everBound counts pods
	// that were bound at least once.
	bound     map[string]bool
	everBound map[string]bool
	changed   chan struct{}
}

func (r *recorder) add(ev watch.Event) error {
	if ev.Type == watch.Error {
		return apierrors.FromObject(ev.Object)
	}
	if ev.Type == watch.Bookmark {
		return nil
	}
	obj, ok := ev.Object.(metav1.Object)
	if !ok {
		return fmt.Errorf("unexpected watch object %T", ev.Object)
	}
	rv, err := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	if err != nil {
		return fmt.Errorf("resourceVersion %q: %w", obj.GetResourceVersion(), err)
	}
	rec := recorded{rv: rv, arrived: time.Now(), typ: ev.Type}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch o := ev.Object.(type) {
	case *v1.Pod:
		rec.pod = o
		switch {
		case ev.Type == watch.Deleted:
			delete(r.bound, o.Name)
		case o.Spec.NodeName != "":
			r.bound[o.Name] = true
			r.everBound[o.Name] = true
		}
	case *v1.Node:
		rec.node = o
	}
	r.events = append(r.events, rec)
	select {
	case r.changed <- struct{}{}:
	default:
	}
	return nil
}

func (r *recorder) counts() (bound, everBound int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.bound), len(r.everBound)
}

func (r *recorder) randomBound(rng *rand.Rand) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.bound) == 0 {
		return ""
	}
	i := rng.IntN(len(r.bound))
	for name := range r.bound {
		if i == 0 {
			return name
		}
		i--
	}
	return ""
}

func (e *env) recordWatch(ctx context.Context, t *testing.T, rec *recorder, rv string, lw cache.WatcherWithContext) {
	t.Helper()
	w, err := watchtools.NewRetryWatcherWithContext(ctx, rv, lw)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		<-ctx.Done()
		w.Stop()
	}()
	go func() {
		for ev := range w.ResultChan() {
			if err := rec.add(ev); err != nil {
				t.Errorf("watch: %v", err)
				return
			}
		}
	}()
}

type watchFunc func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)

func (f watchFunc) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return f(ctx, opts)
}

func pick(rng *rand.Rand, values []string) resource.Quantity {
	return resource.MustParse(values[rng.IntN(len(values))])
}

// TestNoOvercommitUnderChurn schedules --churn-pods pods onto few, mostly full fake nodes while
// their allocatable changes and bound pods are deleted, then checks (1) every binding against a
// replay of all pod and node events in resourceVersion order and (2) a final, saturated state
// against the nodes' final allocatable.
func TestNoOvercommitUnderChurn(t *testing.T) {
	e := newEnv(t)
	n := *churnPods
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	label := map[string]string{"churn": e.ns}
	var nodeNames []string
	for i := range churnNodes {
		name := fmt.Sprintf("%s-n%02d", e.ns, i)
		nodeNames = append(nodeNames, name)
		nw := node(name).Capacity(st.Res{v1.ResourceCPU: "4", v1.ResourceMemory: "8Gi", v1.ResourcePods: "40"})
		for k, v := range label {
			nw.Label(k, v)
		}
		e.createNodes(nw.Obj())
	}

	rec := &recorder{bound: map[string]bool{}, everBound: map[string]bool{}, changed: make(chan struct{}, 1)}
	podList, err := e.client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodeSel := metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: label})
	nodeList, err := e.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: nodeSel})
	if err != nil {
		t.Fatal(err)
	}
	// The replay starts from the nodes as listed.
	for i := range nodeList.Items {
		nd := &nodeList.Items[i]
		rv, _ := strconv.ParseUint(nd.ResourceVersion, 10, 64)
		rec.events = append(rec.events, recorded{rv: rv, arrived: time.Now(), typ: watch.Added, node: nd})
	}
	e.recordWatch(ctx, t, rec, podList.ResourceVersion, watchFunc(func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return e.client.CoreV1().Pods(e.ns).Watch(ctx, o)
	}))
	e.recordWatch(ctx, t, rec, nodeList.ResourceVersion, watchFunc(func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.LabelSelector = nodeSel
		return e.client.CoreV1().Nodes().Watch(ctx, o)
	}))

	var wg sync.WaitGroup
	churnCtx, stopChurn := context.WithCancel(ctx)
	// Creators: n pods with random requests, at most maxPending unscheduled at a time (thousands
	// of pending pods would retry on every deletion and swamp the server with FailedScheduling).
	const maxPending = 100
	var next, created atomic.Int64
	pending := func() int64 {
		_, ever := rec.counts()
		return created.Load() - int64(ever)
	}
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for {
				if pending() > maxPending {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				i := next.Add(1) - 1
				if i >= int64(n) || churnCtx.Err() != nil {
					return
				}
				p := pod(fmt.Sprintf("churn-%05d", i)).Obj()
				p.Spec.Containers = []v1.Container{{Name: "c", Image: "pause", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
					v1.ResourceCPU: pick(r, podCPU), v1.ResourceMemory: pick(r, podMemory)}}}}
				p.Namespace, p.UID = e.ns, ""
				if _, err := e.client.CoreV1().Pods(e.ns).Create(churnCtx, p, metav1.CreateOptions{}); err != nil && churnCtx.Err() == nil {
					t.Errorf("create pod: %v", err)
					return
				}
				created.Add(1)
			}
		}()
	}
	// Deleters: once pods queue up (the nodes are full), delete bound ones so pending pods keep
	// landing on freed room; after the last creation, delete until every pod was bound once.
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 2))
			zero := int64(0)
			for churnCtx.Err() == nil {
				name := rec.randomBound(r)
				if name == "" || pending() < 20 && created.Load() < int64(n) {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				err := e.client.CoreV1().Pods(e.ns).Delete(churnCtx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
				if err != nil && !apierrors.IsNotFound(err) && churnCtx.Err() == nil {
					t.Errorf("delete pod: %v", err)
					return
				}
			}
		}()
	}
	// Allocatable churner.
	var allocChanges atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(7, 7))
		for churnCtx.Err() == nil {
			name := nodeNames[r.IntN(len(nodeNames))]
			cpu, mem, pods := pick(r, churnCPU), pick(r, churnMemory), pick(r, churnPodCap)
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				nd, err := e.client.CoreV1().Nodes().Get(churnCtx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				nd.Status.Allocatable[v1.ResourceCPU], nd.Status.Allocatable[v1.ResourceMemory], nd.Status.Allocatable[v1.ResourcePods] = cpu, mem, pods
				_, err = e.client.CoreV1().Nodes().UpdateStatus(churnCtx, nd, metav1.UpdateOptions{})
				return err
			})
			if err != nil && churnCtx.Err() == nil {
				t.Errorf("change allocatable of %s: %v", name, err)
				return
			}
			allocChanges.Add(1)
			time.Sleep(50 * time.Millisecond)
		}
	}()

	start := time.Now()
	deadline := time.After(15 * time.Minute)
	lastProgress, lastEver := time.Now(), 0
wait:
	for {
		select {
		case <-rec.changed:
		case <-time.After(time.Second):
		case <-deadline:
			_, ever := rec.counts()
			t.Fatalf("only %d of %d pods were ever bound", ever, n)
		}
		_, ever := rec.counts()
		if ever == n {
			break wait
		}
		if ever != lastEver {
			lastEver, lastProgress = ever, time.Now()
		} else if time.Since(lastProgress) > time.Minute {
			t.Fatalf("no pod bound for a minute; %d of %d ever bound", ever, n)
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	stopChurn()
	wg.Wait()
	t.Logf("%d pods bound (each at least once) in %s with %d allocatable changes", n, time.Since(start).Round(time.Millisecond), allocChanges.Load())

	// Final, saturated state: with nothing pending, set each node's final allocatable (at least
	// what its pods use, so the check below is about the scheduler only), then ask for more than
	// fits and compare.
	usage := e.nodeUsage(nodeNames)
	finalAlloc := map[string]v1.ResourceList{}
	for _, name := range nodeNames {
		alloc := v1.ResourceList{v1.ResourceCPU: pick(rng, churnCPU), v1.ResourceMemory: pick(rng, churnMemory), v1.ResourcePods: pick(rng, churnPodCap)}
		for _, r := range checkedResources {
			if u := usage[name][r]; u.Cmp(alloc[r]) > 0 {
				alloc[r] = u
			}
		}
		finalAlloc[name] = alloc
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			nd, err := e.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			for r, q := range alloc {
				nd.Status.Allocatable[r] = q
			}
			_, err = e.client.CoreV1().Nodes().UpdateStatus(ctx, nd, metav1.UpdateOptions{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	// More fill pods than the nodes' free CPU can take, so the final state is saturated whatever
	// allocatable the random draw gave (a fixed count sometimes all fit, proving nothing).
	var freeMilliCPU int64
	for _, name := range nodeNames {
		alloc, used := finalAlloc[name][v1.ResourceCPU], usage[name][v1.ResourceCPU]
		if free := alloc.MilliValue() - used.MilliValue(); free > 0 {
			freeMilliCPU += free
		}
	}
	extra := int(freeMilliCPU/200) + 50
	for i := range extra {
		p := pod(fmt.Sprintf("fill-%04d", i)).Req(st.Res{v1.ResourceCPU: "200m", v1.ResourceMemory: "128Mi"}).Obj()
		e.createPod(p)
	}
	// Quiet: every fill pod is bound or reported unschedulable, and stays so for a while.
	stillPending := 0
	e.eventually("fill pods settle", 2*time.Minute, func() error {
		list, err := e.client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		unsettled := 0
		stillPending = 0
		for _, p := range list.Items {
			if p.Spec.NodeName != "" {
				continue
			}
			stillPending++
			if !hasUnschedulableCondition(&p) {
				unsettled++
			}
		}
		if unsettled > 0 {
			return fmt.Errorf("%d pods neither bound nor unschedulable", unsettled)
		}
		return nil
	})
	if stillPending == 0 {
		t.Fatalf("all %d fill pods fit: the final state is not saturated, the check would prove little", extra)
	}
	final := e.nodeUsage(nodeNames)
	for _, name := range nodeNames {
		for _, r := range checkedResources {
			u, a := final[name][r], finalAlloc[name][r]
			if u.Cmp(a) > 0 {
				t.Errorf("final state: node %s uses %s %s of %s allocatable", name, u.String(), r, a.String())
			}
		}
	}
	t.Logf("final state: %d fill pods pending on saturated nodes; every node within its allocatable", stillPending)

	// Let the watches catch up with the fill phase, then replay.
	time.Sleep(time.Second)
	cancel()
	rec.mu.Lock()
	events := rec.events
	rec.mu.Unlock()
	bindings, raced, violations := replay(events)
	for _, v := range violations {
		t.Error(v)
	}
	if bindings < n {
		t.Errorf("replay saw %d bindings, want at least %d", bindings, n)
	}
	t.Logf("replay: %d bindings checked against the node as of their resourceVersion; %d fitted only the allocatable just before a shrink still in flight (within %s)", bindings, raced, raceWindow)
}

func hasUnschedulableCondition(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

func podRequests(p *v1.Pod) v1.ResourceList {
	out := v1.ResourceList{v1.ResourcePods: resource.MustParse("1")}
	for _, c := range p.Spec.Containers {
		for r, q := range c.Resources.Requests {
			sum := out[r]
			sum.Add(q)
			out[r] = sum
		}
	}
	return out
}

// nodeUsage sums the requests of the test's bound pods per node.
func (e *env) nodeUsage(nodes []string) map[string]v1.ResourceList {
	e.t.Helper()
	list, err := e.client.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		e.fatalf("list pods: %v", err)
	}
	out := map[string]v1.ResourceList{}
	for _, n := range nodes {
		out[n] = v1.ResourceList{}
	}
	for _, p := range list.Items {
		if p.Spec.NodeName == "" {
			continue
		}
		for r, q := range podRequests(&p) {
			sum := out[p.Spec.NodeName][r]
			sum.Add(q)
			out[p.Spec.NodeName][r] = sum
		}
	}
	return out
}

// nodeVersion is a node's allocatable from one event on.
type nodeVersion struct {
	alloc v1.ResourceList
	// replacedAt is when the next version arrived (zero while current).
	replacedAt time.Time
}

// replay applies pod and node events in resourceVersion order and checks each binding: the
// node's bound pods (this one included) must fit its allocatable as of the binding, or, for a
// shrink that arrived within raceWindow before the binding, the allocatable before it.
func replay(events []recorded) (bindings, raced int, violations []string) {
	sort.SliceStable(events, func(i, j int) bool { return events[i].rv < events[j].rv })
	versions := map[string][]nodeVersion{}
	onNode := map[string]map[string]v1.ResourceList{} // node -> pod UID -> requests
	podNode := map[string]string{}                    // pod UID -> node
	for _, ev := range events {
		switch {
		case ev.node != nil:
			vs := versions[ev.node.Name]
			if len(vs) > 0 {
				vs[len(vs)-1].replacedAt = ev.arrived
			}
			versions[ev.node.Name] = append(vs, nodeVersion{alloc: ev.node.Status.Allocatable.DeepCopy()})
		case ev.pod != nil:
			uid := string(ev.pod.UID)
			if ev.typ == watch.Deleted {
				if nd, ok := podNode[uid]; ok {
					delete(onNode[nd], uid)
					delete(podNode, uid)
				}
				continue
			}
			nd := ev.pod.Spec.NodeName
			if nd == "" || podNode[uid] != "" {
				continue
			}
			bindings++
			podNode[uid] = nd
			if onNode[nd] == nil {
				onNode[nd] = map[string]v1.ResourceList{}
			}
			onNode[nd][uid] = podRequests(ev.pod)
			used := v1.ResourceList{}
			for _, req := range onNode[nd] {
				for r, q := range req {
					sum := used[r]
					sum.Add(q)
					used[r] = sum
				}
			}
			vs := versions[nd]
			if len(vs) == 0 {
				violations = append(violations, fmt.Sprintf("pod %s bound to unknown node %s", ev.pod.Name, nd))
				continue
			}
			if fits(used, vs[len(vs)-1].alloc) {
				continue
			}
			ok := false
			for _, v := range vs[:len(vs)-1] {
				if !v.replacedAt.IsZero() && ev.arrived.Sub(v.replacedAt) <= raceWindow && fits(used, v.alloc) {
					ok = true
				}
			}
			if ok {
				raced++
				continue
			}
			violations = append(violations, fmt.Sprintf("overcommit: binding of %s to %s at resourceVersion %d makes the node's pods request %v, allocatable %v",
				ev.pod.Name, nd, ev.rv, describe(used), describe(vs[len(vs)-1].alloc)))
		}
	}
	return bindings, raced, violations
}

func fits(used, alloc v1.ResourceList) bool {
	for _, r := range checkedResources {
		u, a := used[r], alloc[r]
		if u.Cmp(a) > 0 {
			return false
		}
	}
	return true
}

func describe(l v1.ResourceList) string {
	return fmt.Sprintf("cpu=%s memory=%s pods=%s", ptrString(l, v1.ResourceCPU), ptrString(l, v1.ResourceMemory), ptrString(l, v1.ResourcePods))
}

func ptrString(l v1.ResourceList, r v1.ResourceName) string {
	q := l[r]
	return q.String()
}
