package e2e

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skiff-sh/skiff/internal/simnode"
)

// clientset is a client-go clientset for the cluster's admin kubeconfig, unthrottled so simulated
// kubelets report pods as fast as the API server takes them.
func (c *cluster) clientset(t *testing.T) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("clientset: %v", err)
	}
	return cs
}

// startSimNodes runs simulated nodes (fake kubelets) against the cluster in this process until the
// test ends. cfg.Client is filled in.
func (c *cluster) startSimNodes(t *testing.T, cfg simnode.Config) *simnode.Simulator {
	t.Helper()
	cfg.Client = c.clientset(t)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(testLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	ctx, cancel := context.WithCancel(context.Background())
	sim, err := simnode.Start(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatalf("start simulated nodes: %v", err)
	}
	t.Cleanup(func() {
		sim.Stop()
		cancel()
	})
	return sim
}

// testLogWriter sends simulator logs to the test log.
type testLogWriter struct{ t *testing.T }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// ctl runs kubectl for one (sub)test, failing that test rather than the one that started the
// cluster, so parallel subtests can use it.
type ctl struct {
	c *cluster
	t *testing.T
	// ns is added as --namespace to every command when set.
	ns string
}

func (k ctl) args(args []string) []string {
	if k.ns == "" {
		return args
	}
	return append([]string{"--namespace", k.ns}, args...)
}

// run runs kubectl and fails the test on error.
func (k ctl) run(args ...string) string {
	k.t.Helper()
	out, err := k.c.kubectlErr(k.args(args)...)
	if err != nil {
		k.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// try runs kubectl and returns its output and error.
func (k ctl) try(args ...string) (string, error) {
	return k.c.kubectlErr(k.args(args)...)
}

// apply applies a manifest.
func (k ctl) apply(manifest string) string {
	k.t.Helper()
	out, err := k.c.kubectlIn(manifest, k.args([]string{"apply", "-f", "-"})...)
	if err != nil {
		k.t.Fatalf("kubectl apply: %v\n%s\nmanifest:\n%s", err, out, manifest)
	}
	return out
}

// jsonpath reads one field of an object.
func (k ctl) jsonpath(path string, object ...string) string {
	k.t.Helper()
	return strings.TrimSpace(k.run(append([]string{"get"}, append(object, "-o", "jsonpath="+path)...)...))
}

// eventually retries f until it returns nil or the timeout passes, failing this (sub)test.
func (k ctl) eventually(timeout time.Duration, f func() error) {
	k.t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = f(); err == nil {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	k.t.Fatalf("condition not met in %s: %v", timeout, err)
}

// namespace creates a namespace for one subtest and returns a ctl bound to it.
func (k ctl) namespace(name string) ctl {
	k.t.Helper()
	k.run("create", "namespace", name)
	// The serviceaccount controller creates "default"; pods cannot be created before it exists.
	k.eventually(30*time.Second, func() error {
		_, err := k.try("get", "serviceaccount", "default", "--namespace", name)
		return err
	})
	return ctl{c: k.c, t: k.t, ns: name}
}

// fields splits whitespace-separated output, ignoring empties.
func fields(out string) []string { return strings.Fields(out) }

// completeJobPods finishes pods created by Jobs (successfully, after runFor) and leaves every
// other pod running, as a kubelet running short batch containers would.
func completeJobPods(runFor time.Duration) simnode.CompletePodsFunc {
	return func(pod *corev1.Pod) (int32, time.Duration, bool) {
		if _, ok := pod.Labels["batch.kubernetes.io/job-name"]; ok {
			return 0, runFor, true
		}
		return 0, 0, false
	}
}
