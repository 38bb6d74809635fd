package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

const (
	namespace = "default"
	writers   = 16
)

func deployment(i int, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": fmt.Sprintf("density-%03d", i)}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: labels["app"]},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/density:v1",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("10Mi")}}}}},
			},
		},
	}
}

// podTimes is when the benchmark first saw a pod, saw it bound and saw it Running (its own clock,
// from its watch, as Kubernetes' density test measures startup).
type podTimes struct {
	seen, scheduled, running time.Time
}

// observer follows every pod through an informer.
type observer struct {
	mu      sync.Mutex
	pods    map[string]*podTimes
	running int
	want    int
	all     chan struct{}
}

func newObserver(want int) *observer {
	return &observer{pods: map[string]*podTimes{}, want: want, all: make(chan struct{})}
}

func (o *observer) observe(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.pods[pod.Name]
	if t == nil {
		t = &podTimes{seen: now}
		o.pods[pod.Name] = t
	}
	if t.scheduled.IsZero() && pod.Spec.NodeName != "" {
		t.scheduled = now
	}
	if t.running.IsZero() && pod.Status.Phase == corev1.PodRunning {
		t.running = now
		o.running++
		if o.running == o.want {
			close(o.all)
		}
	}
}

func (o *observer) counts() (seen, scheduled, running int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, t := range o.pods {
		if !t.scheduled.IsZero() {
			scheduled++
		}
	}
	return len(o.pods), scheduled, o.running
}

// latencies are the pods' startup (seen to Running) and scheduling (seen to bound) times, sorted.
func (o *observer) latencies() (startup, scheduling []time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, t := range o.pods {
		if !t.running.IsZero() {
			startup = append(startup, t.running.Sub(t.seen))
		}
		if !t.scheduled.IsZero() {
			scheduling = append(scheduling, t.scheduled.Sub(t.seen))
		}
	}
	slices.Sort(startup)
	slices.Sort(scheduling)
	return startup, scheduling
}

func (o *observer) start(client kubernetes.Interface, stop <-chan struct{}) (informers.SharedInformerFactory, error) {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: o.observe, UpdateFunc: func(_, cur any) { o.observe(cur) },
	}); err != nil {
		return nil, err
	}
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	return factory, nil
}

func createDeployments(ctx context.Context, client kubernetes.Interface, n int, replicas int32) error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	next := make(chan int)
	for range writers {
		wg.Go(func() {
			for i := range next {
				_, errs[i] = client.AppsV1().Deployments(namespace).Create(ctx, deployment(i, replicas), metav1.CreateOptions{})
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("create deployment %d: %w", i, err)
		}
	}
	return nil
}

// waitNodesReady waits until want nodes are registered Ready without a not-ready or unreachable taint.
func waitNodesReady(ctx context.Context, client kubernetes.Interface, want int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		ready := 0
		if err == nil {
			for _, n := range nodes.Items {
				if !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
					return t.Key == "node.kubernetes.io/not-ready" || t.Key == "node.kubernetes.io/unreachable"
				}) {
					ready++
				}
			}
		}
		if ready >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d nodes ready after %s (last error %v)", ready, want, timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
