package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

const (
	namespace = "default"
	// writers is how many Deployment creates or patches are in flight at once.
	writers = 16
)

// workload is the benchmark's Deployments.
type workload struct {
	client      kubernetes.Interface
	deployments int
	replicas    int32
	logf        func(format string, args ...any)
}

// phase is one measured step: from the first write until every Deployment was done.
type phase struct {
	// writes is how long issuing every create or patch took.
	writes time.Duration
	// total is until the last Deployment was done; p50 until half of them were.
	total, p50 time.Duration
	// pods is how many pods the phase made.
	pods int
}

func (w *workload) name(i int) string { return fmt.Sprintf("bench-%03d", i) }

func image(version string) string { return "registry.example/bench:" + version }

func (w *workload) deployment(i int) *appsv1.Deployment {
	labels := map[string]string{"app": w.name(i)}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: w.name(i)},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(w.replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image("v1")}}},
			},
		},
	}
}

// eachDeployment runs f for every Deployment index with a bounded number in flight.
func (w *workload) eachDeployment(ctx context.Context, f func(ctx context.Context, i int) error) error {
	var wg sync.WaitGroup
	errs := make([]error, w.deployments)
	next := make(chan int)
	for range writers {
		wg.Go(func() {
			for i := range next {
				errs[i] = f(ctx, i)
			}
		})
	}
	for i := range w.deployments {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (w *workload) createAll(ctx context.Context) error {
	return w.eachDeployment(ctx, func(ctx context.Context, i int) error {
		_, err := w.client.AppsV1().Deployments(namespace).Create(ctx, w.deployment(i), metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create deployment %s: %w", w.name(i), err)
		}
		return nil
	})
}

func (w *workload) updateImageAll(ctx context.Context) error {
	patch := fmt.Appendf(nil, `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":%q}]}}}}`, image("v2"))
	return w.eachDeployment(ctx, func(ctx context.Context, i int) error {
		_, err := w.client.AppsV1().Deployments(namespace).Patch(ctx, w.name(i), types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			return fmt.Errorf("patch deployment %s: %w", w.name(i), err)
		}
		return nil
	})
}

// done reports whether d runs version on all its replicas and nothing else: the controller has seen
// the latest spec, every replica is updated and available, and no old pod is left.
func (w *workload) done(d *appsv1.Deployment, version string) bool {
	s := d.Status
	return d.Spec.Template.Spec.Containers[0].Image == image(version) && s.ObservedGeneration >= d.Generation &&
		s.UpdatedReplicas == w.replicas && s.AvailableReplicas == w.replicas && s.Replicas == w.replicas
}

// measure runs write (creates or patches) and waits until every Deployment is done at version,
// watching them through an informer and logging progress every 10 s.
func (w *workload) measure(ctx context.Context, timeout time.Duration, write func(context.Context) error, version string) (phase, error) {
	var mu sync.Mutex
	start := time.Now()
	doneAt := map[string]time.Duration{}
	available := map[string]int32{}
	allDone := make(chan struct{})
	var closeOnce sync.Once
	observe := func(obj any) {
		d, ok := obj.(*appsv1.Deployment)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		available[d.Name] = d.Status.AvailableReplicas
		if _, seen := doneAt[d.Name]; !seen && w.done(d, version) {
			doneAt[d.Name] = time.Since(start)
			if len(doneAt) == w.deployments {
				closeOnce.Do(func() { close(allDone) })
			}
		}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(w.client, 0, informers.WithNamespace(namespace))
	inf := factory.Apps().V1().Deployments().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: observe, UpdateFunc: func(_, cur any) { observe(cur) },
	}); err != nil {
		return phase{}, err
	}
	stop := make(chan struct{})
	defer func() { close(stop); factory.Shutdown() }()
	factory.Start(stop)
	factory.WaitForCacheSync(stop)

	mu.Lock()
	start = time.Now()
	// Deployments already done at version before the writes (none, unless re-run) do not count.
	clear(doneAt)
	mu.Unlock()
	if err := write(ctx); err != nil {
		return phase{}, err
	}
	p := phase{writes: time.Since(start), pods: w.deployments * int(w.replicas)}

	progress := time.NewTicker(10 * time.Second)
	defer progress.Stop()
	deadline := time.After(timeout)
	for {
		select {
		case <-allDone:
			mu.Lock()
			times := make([]time.Duration, 0, len(doneAt))
			for _, t := range doneAt {
				times = append(times, t)
			}
			mu.Unlock()
			slices.Sort(times)
			p.total, p.p50 = times[len(times)-1], times[(len(times)-1)/2]
			return p, nil
		case <-progress.C:
			mu.Lock()
			var sum int32
			for _, a := range available {
				sum += a
			}
			w.logf("%s: %d/%d Deployments done, %d pods available", time.Since(start).Round(time.Second), len(doneAt), w.deployments, sum)
			mu.Unlock()
		case <-deadline:
			mu.Lock()
			defer mu.Unlock()
			return p, fmt.Errorf("only %d of %d Deployments done after %s", len(doneAt), w.deployments, timeout)
		case <-ctx.Done():
			return p, ctx.Err()
		}
	}
}

// waitNodesSchedulable waits until every simulated node is registered without a not-ready taint,
// so the measurement starts with the whole cluster available to the scheduler.
func (w *workload) waitNodesSchedulable(ctx context.Context, want int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		nodes, err := w.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		ready := 0
		for _, n := range nodes.Items {
			if !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == "node.kubernetes.io/not-ready" }) {
				ready++
			}
		}
		if ready >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d nodes schedulable after %s", ready, want, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// processCPU is this process's CPU time (user + system): the simulated kubelets and the watchers.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fmt.Fprintln(os.Stderr, "getrusage:", err)
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
