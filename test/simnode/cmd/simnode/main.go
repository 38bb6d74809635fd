// Command simnode attaches simulated nodes to a running skiff (or any Kubernetes) cluster: Nodes
// with capacity and a Ready condition, Leases renewed on a heartbeat, and a fake kubelet that reports
// bound pods Running and Ready. It runs until interrupted.
//
// With --bench-pods it instead measures how fast the simulator reports pods Running: it creates
// that many pods already bound round-robin to its (not yet registered) nodes in a fresh namespace,
// starts the simulator, prints pods/s until all run, deletes the namespace and exits.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/simnode"
)

func main() {
	if err := run(); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "simnode:", err)
		os.Exit(1)
	}
}

func run() error {
	fs := flag.NewFlagSet("simnode", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster (e.g. <data-dir>/admin.kubeconfig)")
	nodes := fs.Int("nodes", 10, "number of simulated nodes")
	prefix := fs.String("prefix", "sim-node-", "node name prefix; nodes are named <prefix><index>")
	firstIndex := fs.Int("first-index", 0, "index of the first node; give simulators sharing a cluster disjoint ranges")
	heartbeat := fs.Duration("heartbeat", 10*time.Second, "lease renewal interval per node")
	startDelay := fs.Duration("pod-start-delay", 0, "delay between a pod being bound and reported Running")
	completeJobPods := fs.Duration("complete-job-pods-after", -1, "finish pods owned by a Job with exit code 0 this long after they start (negative: never)")
	workers := fs.Int("workers", 16, "pods handled concurrently")
	qps := fs.Float64("qps", 2000, "client-side request rate limit")
	protobuf := fs.Bool("protobuf", true, "talk protobuf to the API server (JSON when false): cheaper to encode and decode at thousands of Lease renewals a second")
	benchPods := fs.Int("bench-pods", 0, "measure: create this many bound pods, report pods/s marked Running, clean up and exit")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("load kubeconfig %q: %w", *kubeconfig, err)
	}
	restCfg.QPS, restCfg.Burst = float32(*qps), int(*qps)*2
	restCfg.UserAgent = "simnode"
	if *protobuf {
		restCfg.ContentType = "application/vnd.kubernetes.protobuf"
		restCfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	}
	counts := &requestCounts{}
	if *benchPods > 0 {
		restCfg.Wrap(counts.wrap)
	}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	cfg := simnode.Config{
		Client: client, Nodes: *nodes, NamePrefix: *prefix, FirstIndex: *firstIndex,
		HeartbeatInterval: *heartbeat, PodStartDelay: *startDelay, Workers: *workers,
	}
	if *completeJobPods >= 0 {
		after := *completeJobPods
		cfg.CompletePods = func(pod *corev1.Pod) (int32, time.Duration, bool) {
			owner := metav1.GetControllerOf(pod)
			return 0, after, owner != nil && owner.Kind == "Job"
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *benchPods > 0 {
		return benchmark(ctx, cfg, *benchPods, counts)
	}
	began := time.Now()
	sim, err := simnode.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer sim.Stop()
	slog.Info("simulated nodes registered", "nodes", *nodes, "took", time.Since(began).Round(time.Millisecond))
	<-ctx.Done()
	return nil
}

// benchmark measures the simulator alone: it first creates the pods already bound to the nodes
// the simulator is about to register, then starts the simulator and times how long until all of
// them are reported Running, so the figure is not limited by how fast pods can be created.
func benchmark(ctx context.Context, cfg simnode.Config, count int, counts *requestCounts) error {
	client := cfg.Client
	if cfg.Nodes == 0 {
		return errors.New("--bench-pods needs at least one node")
	}
	nodes := make([]string, cfg.Nodes)
	for i := range nodes {
		nodes[i] = simnode.NodeName(cfg.NamePrefix, cfg.FirstIndex+i)
	}
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "simnode-bench-"}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create namespace: %w", err)
	}
	defer func() {
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		// Without grace: once this simulator is gone no kubelet would finish a graceful deletion,
		// and the namespace would stay Terminating.
		if err := client.CoreV1().Pods(ns.Name).DeleteCollection(cleanup,
			metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{}); err != nil {
			slog.Warn("delete benchmark pods", "namespace", ns.Name, "err", err)
		}
		if err := client.CoreV1().Namespaces().Delete(cleanup, ns.Name, metav1.DeleteOptions{}); err != nil {
			slog.Warn("delete benchmark namespace", "namespace", ns.Name, "err", err)
		}
	}()
	began := time.Now()
	if err := createBoundPods(ctx, client, ns.Name, nodes, count); err != nil {
		return err
	}
	created := time.Since(began)

	// Count transitions on a watch rather than listing: listing thousands of pods in a loop would
	// load the API server more than the simulator does.
	list, err := client.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	watcher, err := client.CoreV1().Pods(ns.Name).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		return fmt.Errorf("watch pods: %w", err)
	}
	defer watcher.Stop()

	began = time.Now()
	counts.reset()
	sim, err := simnode.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer sim.Stop()
	registered := time.Since(began)
	runningPods := map[string]bool{}
	for len(runningPods) < count {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-watcher.ResultChan():
			if !ok {
				return fmt.Errorf("pod watch ended after %d running pods", len(runningPods))
			}
			if pod, isPod := ev.Object.(*corev1.Pod); isPod && pod.Status.Phase == corev1.PodRunning {
				runningPods[pod.Name] = true
			}
		}
	}
	running := time.Since(began)
	fmt.Printf("pods=%d nodes=%d workers=%d pods_created_in=%s nodes_registered_in=%s all_running_in=%s running_pods_per_second=%.0f\n",
		count, len(nodes), cfg.Workers, created.Round(time.Millisecond), registered.Round(time.Millisecond),
		running.Round(time.Millisecond), float64(count)/running.Seconds())
	fmt.Printf("requests since the simulator started: %s\n", counts)
	return nil
}

func createBoundPods(ctx context.Context, client kubernetes.Interface, namespace string, nodes []string, count int) error {
	const creators = 16
	errs := make(chan error, creators)
	for w := range creators {
		go func() {
			for i := w; i < count; i += creators {
				pod := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%d", i)},
					Spec: corev1.PodSpec{
						NodeName:   nodes[i%len(nodes)],
						Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
					},
				}
				if _, err := client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("create pod %d: %w", i, err)
					return
				}
			}
			errs <- nil
		}()
	}
	var all []error
	for range creators {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// requestCounts counts the simulator's requests by method and response code, to show what a
// simulated pod costs the API server.
type requestCounts struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *requestCounts) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		key := req.Method + " error"
		if err == nil {
			key = req.Method + " " + strconv.Itoa(resp.StatusCode)
		}
		c.mu.Lock()
		if c.counts == nil {
			c.counts = map[string]int{}
		}
		c.counts[key]++
		c.mu.Unlock()
		return resp, err
	})
}

func (c *requestCounts) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts = nil
}

func (c *requestCounts) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := slices.Sorted(maps.Keys(c.counts))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, c.counts[k]))
	}
	return strings.Join(parts, " ")
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
