// Package bench measures end-to-end scheduling throughput through the API:
// it creates fake nodes (Node objects with capacity and a Ready condition, no
// kubelet) and pending pods up front, then times until every pod is bound.
// It only talks to the cluster through client-go, so the integrator can point
// it at a real skiff API server; the tests here run it against client-go's
// fake clientset.
package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// Workload kinds.
const (
	// Plain pods request cpu and memory only.
	Plain = "plain"
	// Mixed pods rotate through the four pod templates of Kubernetes' scheduler_perf
	// inter-pod affinity and topology spreading workloads (SchedulingPodAffinity,
	// SchedulingPreferredPodAntiAffinity, TopologySpreading, PreferredTopologySpreading):
	// required pod affinity on zone, preferred pod anti-affinity on hostname, a
	// DoNotSchedule and a ScheduleAnyway zone spread (maxSkew 5), each template
	// with its own label value so the four behave as they do on their own. Its
	// nodes carry three zones, as scheduler_perf's labelNodePrepareStrategy.
	Mixed = "mixed"
)

// Label put on every object the benchmark creates.
const benchLabel = "skiff.sh/scheduler-bench"

// Options describe one run.
type Options struct {
	Nodes     int
	Pods      int
	Workload  string
	Namespace string
	// Workers create objects concurrently (default 32).
	Workers int
	Timeout time.Duration
	// KeepObjects leaves nodes and pods behind (default: delete them).
	KeepObjects bool
	// Now is the clock (default time.Now); latency figures use it.
	Now func() time.Time
	// Release, when set, is called once every pod exists; the caller has kept the scheduler
	// from binding until then (say by holding its leader Lease) and returns once it schedules.
	// Total, PodsPerSecond and the latencies then count from Release's return: all pods
	// pending up front, the figures are the scheduler's alone, not the creation rate's.
	Release func(context.Context) error
}

func (o *Options) setDefaults() {
	if o.Workload == "" {
		o.Workload = Plain
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.Workers <= 0 {
		o.Workers = 32
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

func (o *Options) validate() error {
	var errs []error
	if o.Nodes <= 0 || o.Pods <= 0 {
		errs = append(errs, errors.New("bench: nodes and pods must be positive"))
	}
	if o.Workload != Plain && o.Workload != Mixed {
		errs = append(errs, fmt.Errorf("bench: workload must be %q or %q, got %q", Plain, Mixed, o.Workload))
	}
	return errors.Join(errs...)
}

// Result is what a run measured.
type Result struct {
	Nodes, Pods int
	Workload    string
	// CreatePods is how long creating all pods took.
	CreatePods time.Duration
	// Total is from the first pod creation to the last binding observed.
	Total         time.Duration
	PodsPerSecond float64
	// P50, P99 and Max are per-pod times from creation (or Release) to binding observed.
	P50, P99, Max time.Duration
	// Released tells that the pods were all pending before scheduling began (Options.Release).
	Released bool
}

func (r Result) String() string {
	if r.Released {
		return fmt.Sprintf("%s: %d nodes, %d pods all pending before scheduling began: all bound in %s (%.0f pods/s); release-to-binding p50 %s, p99 %s, max %s; pod creation took %s",
			r.Workload, r.Nodes, r.Pods, r.Total.Round(time.Millisecond), r.PodsPerSecond,
			r.P50.Round(time.Millisecond), r.P99.Round(time.Millisecond), r.Max.Round(time.Millisecond), r.CreatePods.Round(time.Millisecond))
	}
	return fmt.Sprintf("%s: %d nodes, %d pods: all bound in %s (%.0f pods/s); creation-to-binding p50 %s, p99 %s, max %s; pod creation took %s",
		r.Workload, r.Nodes, r.Pods, r.Total.Round(time.Millisecond), r.PodsPerSecond,
		r.P50.Round(time.Millisecond), r.P99.Round(time.Millisecond), r.Max.Round(time.Millisecond), r.CreatePods.Round(time.Millisecond))
}

// RunBenchmark creates the nodes, starts watching pods, creates every pod up
// front, and waits until all are bound (a scheduler must be running).
func RunBenchmark(ctx context.Context, client kubernetes.Interface, opts Options) (Result, error) {
	opts.setDefaults()
	if err := opts.validate(); err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	runID := fmt.Sprintf("%d", opts.Now().UnixNano())
	if !opts.KeepObjects {
		defer cleanup(context.WithoutCancel(ctx), client, opts, runID)
	}
	if err := ensureNamespace(ctx, client, opts.Namespace); err != nil {
		return Result{}, err
	}
	if err := parallel(ctx, opts.Nodes, opts.Workers, func(i int) error {
		return createNode(ctx, client, opts.Workload, i, runID)
	}); err != nil {
		return Result{}, fmt.Errorf("bench: create nodes: %w", err)
	}

	sel := metav1.ListOptions{LabelSelector: benchLabel + "=" + runID}
	w, err := client.CoreV1().Pods(opts.Namespace).Watch(ctx, sel)
	if err != nil {
		return Result{}, fmt.Errorf("bench: watch pods: %w", err)
	}

	created := make([]time.Time, opts.Pods)
	bound := make([]time.Time, opts.Pods)
	var mu sync.Mutex
	boundCount := 0
	allBound := make(chan struct{})
	watchErr := make(chan error, 1)
	markBound := func(pod *v1.Pod) {
		if pod.Spec.NodeName == "" {
			return
		}
		var idx int
		if _, err := fmt.Sscanf(pod.Name[strings.LastIndexByte(pod.Name, '-')+1:], "%d", &idx); err != nil || idx < 0 || idx >= opts.Pods {
			return
		}
		now := opts.Now()
		mu.Lock()
		defer mu.Unlock()
		if bound[idx].IsZero() {
			bound[idx] = now
			boundCount++
			if boundCount == opts.Pods {
				close(allBound)
			}
		}
	}
	// The goroutine owns w. API servers end watches (their timeouts, a client's request
	// timeout) and a large run takes minutes: a closed stream resumes from the last
	// resourceVersion seen, or from a fresh list when that is too old (or unknown).
	go func() {
		defer func() { w.Stop() }()
		lastRV := ""
		for {
			expired := false
			for ev := range w.ResultChan() {
				if ev.Type == watch.Error {
					if status := apierrors.FromObject(ev.Object); apierrors.IsResourceExpired(status) || apierrors.IsGone(status) {
						expired = true
						break
					}
					watchErr <- fmt.Errorf("bench: pod watch error: %v", apierrors.FromObject(ev.Object))
					return
				}
				if pod, ok := ev.Object.(*v1.Pod); ok {
					lastRV = pod.ResourceVersion
					markBound(pod)
				}
			}
			w.Stop()
			if ctx.Err() != nil {
				return
			}
			if expired || lastRV == "" {
				list, err := client.CoreV1().Pods(opts.Namespace).List(ctx, sel)
				if err != nil {
					watchErr <- fmt.Errorf("bench: relist pods after the watch closed: %w", err)
					return
				}
				for i := range list.Items {
					markBound(&list.Items[i])
				}
				lastRV = list.ResourceVersion
			}
			resume := sel
			resume.ResourceVersion = lastRV
			resumed, err := client.CoreV1().Pods(opts.Namespace).Watch(ctx, resume)
			if err != nil {
				watchErr <- fmt.Errorf("bench: resume pod watch: %w", err)
				return
			}
			w = resumed
		}
	}()

	start := opts.Now()
	created0 := start
	if err := parallel(ctx, opts.Pods, opts.Workers, func(i int) error {
		pod := makePod(opts, i, runID)
		t := opts.Now()
		if _, err := client.CoreV1().Pods(opts.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return err
		}
		mu.Lock()
		created[i] = t
		mu.Unlock()
		return nil
	}); err != nil {
		return Result{}, fmt.Errorf("bench: create pods: %w", err)
	}
	createdAll := opts.Now()
	if opts.Release != nil {
		mu.Lock()
		early := boundCount
		mu.Unlock()
		if early > 0 {
			return Result{}, fmt.Errorf("bench: %d pods were bound before Release", early)
		}
		if err := opts.Release(ctx); err != nil {
			return Result{}, fmt.Errorf("bench: release the scheduler: %w", err)
		}
		released := opts.Now()
		mu.Lock()
		for i := range created {
			created[i] = released
		}
		mu.Unlock()
		start = released
	}
	select {
	case <-allBound:
	case err := <-watchErr:
		return Result{}, err
	case <-ctx.Done():
		mu.Lock()
		n := boundCount
		mu.Unlock()
		return Result{}, fmt.Errorf("bench: %d of %d pods bound before %w", n, opts.Pods, ctx.Err())
	}
	mu.Lock()
	defer mu.Unlock()
	latencies := make([]time.Duration, opts.Pods)
	last := start
	for i := range bound {
		latencies[i] = bound[i].Sub(created[i])
		if bound[i].After(last) {
			last = bound[i]
		}
	}
	slices.Sort(latencies)
	total := last.Sub(start)
	return Result{
		Nodes: opts.Nodes, Pods: opts.Pods, Workload: opts.Workload,
		CreatePods: createdAll.Sub(created0), Total: total, Released: opts.Release != nil, PodsPerSecond: float64(opts.Pods) / total.Seconds(),
		P50: percentile(latencies, 0.50), P99: percentile(latencies, 0.99), Max: latencies[len(latencies)-1],
	}, nil
}

func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func parallel(ctx context.Context, n, workers int, fn func(i int) error) error {
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var firstErr error
feed:
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case firstErr = <-errs:
			break feed
		case <-ctx.Done():
			firstErr = ctx.Err()
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr == nil {
		select {
		case firstErr = <-errs:
		default:
		}
	}
	return firstErr
}

func ensureNamespace(ctx context.Context, client kubernetes.Interface, ns string) error {
	_, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("bench: create namespace %s: %w", ns, err)
	}
	return nil
}

const zones = 10

// mixedZones is how many zones the mixed workload's nodes spread over (scheduler_perf's
// TopologySpreading labels nodes moon-1..moon-3).
const mixedZones = 3

func nodeZone(workload string, i int) string {
	if workload == Mixed {
		return fmt.Sprintf("moon-%d", i%mixedZones+1)
	}
	return fmt.Sprintf("zone-%d", i%zones)
}

func createNode(ctx context.Context, client kubernetes.Interface, workload string, i int, runID string) error {
	name := fmt.Sprintf("bench-node-%05d", i)
	capacity := v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("32"), v1.ResourceMemory: resource.MustParse("128Gi"),
		v1.ResourcePods: resource.MustParse("110"), v1.ResourceEphemeralStorage: resource.MustParse("500Gi"),
	}
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			benchLabel: runID, v1.LabelHostname: name, v1.LabelTopologyZone: nodeZone(workload, i),
		}},
		Status: v1.NodeStatus{
			Capacity: capacity, Allocatable: capacity,
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(), Reason: "KubeletReady", Message: "fake node for the scheduler benchmark"}},
		},
	}
	created, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	// An API server that drops status on create gets it through nodes/status.
	if len(created.Status.Allocatable) == 0 {
		created.Status = node.Status
		if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("set status of node %s: %w", name, err)
		}
	}
	return nil
}

func makePod(opts Options, i int, runID string) *v1.Pod {
	app := fmt.Sprintf("app-%d", i%50)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-pod-%d", i), Namespace: opts.Namespace, Labels: map[string]string{benchLabel: runID, "app": app}},
		Spec: v1.PodSpec{SchedulerName: v1.DefaultSchedulerName, Containers: []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("128Mi")},
		}}}},
	}
	if opts.Workload == Mixed {
		mixedVariant(pod, i)
	}
	return pod
}

func cleanup(ctx context.Context, client kubernetes.Interface, opts Options, runID string) {
	sel := metav1.ListOptions{LabelSelector: benchLabel + "=" + runID}
	zero := int64(0)
	_ = client.CoreV1().Pods(opts.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, sel)
	_ = client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, sel)
}

// mixedVariant shapes pod i as one of scheduler_perf's affinity and spreading pod templates
// (test/integration/scheduler_perf/templates in Kubernetes): 100m cpu, 500Mi memory, and
//
//	i%4 == 0: pod-with-pod-affinity: required pod affinity to its own label on the zone key;
//	i%4 == 1: pod-with-preferred-pod-anti-affinity: weight-1 anti-affinity on hostname;
//	i%4 == 2: pod-with-topology-spreading: DoNotSchedule zone spread, maxSkew 5;
//	i%4 == 3: pod-with-preferred-topology-spreading: ScheduleAnyway zone spread, maxSkew 5.
func mixedVariant(pod *v1.Pod, i int) {
	colors := [...]string{"blue", "yellow", "red", "green"}
	color := colors[i%4]
	pod.Labels["color"] = color
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"color": color}}
	pod.Spec.Containers[0].Resources.Requests[v1.ResourceMemory] = resource.MustParse("500Mi")
	pod.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80}}
	term := v1.PodAffinityTerm{LabelSelector: sel, Namespaces: []string{pod.Namespace}}
	switch i % 4 {
	case 0:
		term.TopologyKey = v1.LabelTopologyZone
		pod.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{term}}}
	case 1:
		term.TopologyKey = v1.LabelHostname
		pod.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{{
			Weight: 1, PodAffinityTerm: term,
		}}}}
	case 2, 3:
		when := v1.DoNotSchedule
		if i%4 == 3 {
			when = v1.ScheduleAnyway
		}
		pod.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 5, TopologyKey: v1.LabelTopologyZone, WhenUnsatisfiable: when, LabelSelector: sel}}
	}
}
