package scheduler

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/skiff-sh/skiff/test/bench"
)

// secondProfile is the scheduler name of the server's second profile.
const secondProfile = "skiff-second"

// schedulerConfig gives the server's scheduler two profiles; the second one scores by
// MostAllocated so that its placements differ visibly from the default's.
const schedulerConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
- schedulerName: ` + secondProfile + `
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
`

// churnPods is the size of the overcommit test: the 10,000 took about a minute on a
// 2-core machine (docs/bench/SCHEDULER.md); lower it on slower machines.
var churnPods = flag.Int("churn-pods", 10000, "pods scheduled in TestNoOvercommitUnderChurn")

// server is the skiff shared by every test in the package (set once by TestMain).
type server struct {
	config *rest.Config
	client kubernetes.Interface
	log    string
}

var shared *server

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Fprintln(os.Stderr, "scheduler integration: skipped in -short mode (starts a real skiff)")
		os.Exit(0)
	}
	code, err := runWithServer(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scheduler integration:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func runWithServer(m *testing.M) (int, error) {
	dir, err := os.MkdirTemp("", "skiff-sched-it-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "skiff")
	build := exec.Command("go", "build", "-o", bin, "github.com/skiff-sh/skiff/cmd/skiff")
	if out, err := build.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("build skiff: %v\n%s", err, out)
	}
	confPath := filepath.Join(dir, "scheduler.yaml")
	if err := os.WriteFile(confPath, []byte(schedulerConfig), 0o600); err != nil {
		return 0, err
	}
	logPath := filepath.Join(dir, "skiff.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return 0, err
	}
	defer logFile.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := bench.StartServer(ctx, bench.ServerOptions{Binary: bin, DataDir: filepath.Join(dir, "data"), Log: logFile,
		ExtraArgs: []string{"--log-level", "info", "--controllers=*,-nodelifecycle,-nodeipam", "--scheduler-config", confPath}})
	if err != nil {
		data, _ := os.ReadFile(logPath)
		return 0, fmt.Errorf("start skiff: %w\n%s", err, tail(string(data), 4000))
	}
	defer srv.Stop()
	cfg, err := srv.RESTConfig()
	if err != nil {
		return 0, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	shared = &server{config: cfg, client: client, log: logPath}
	return m.Run(), nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// env is one test's view of the shared server.
type env struct {
	t      *testing.T
	client kubernetes.Interface
	ns     string
}

var nsCounter atomic.Int64

// newEnv gives the test its own namespace (its default ServiceAccount exists before pods are
// made) and dumps the server log's tail if the test fails.
func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, client: shared.client}
	name := fmt.Sprintf("sched-%s-%d", strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())), nsCounter.Add(1))
	if len(name) > 60 {
		name = name[:50] + fmt.Sprintf("-%d", nsCounter.Load())
	}
	e.ns = name
	ctx := context.Background()
	if _, err := e.client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	e.eventually("default service account", 30*time.Second, func() error {
		_, err := e.client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
	t.Cleanup(func() {
		zero := int64(0)
		_ = e.client.CoreV1().Pods(name).DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		_ = e.client.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
		if t.Failed() {
			data, _ := os.ReadFile(shared.log)
			t.Logf("skiff log (tail):\n%s", tail(string(data), 6000))
		}
	})
	return e
}

func (e *env) fatalf(format string, args ...any) {
	e.t.Helper()
	e.t.Fatalf(format, args...)
}

// eventually polls f until it returns nil, failing after timeout with f's last error.
func (e *env) eventually(what string, timeout time.Duration, f func() error) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			e.fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// createNodes registers fake nodes (status through nodes/status if create dropped it) and deletes
// them when the test ends.
func (e *env) createNodes(nodes ...*v1.Node) {
	e.t.Helper()
	ctx := context.Background()
	for _, n := range nodes {
		n = n.DeepCopy()
		n.UID = ""
		created, err := e.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			e.fatalf("create node %s: %v", n.Name, err)
		}
		name := n.Name
		e.t.Cleanup(func() { _ = e.client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		if len(created.Status.Allocatable) == 0 || len(created.Status.Conditions) == 0 {
			created.Status = n.Status
			if _, err := e.client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				e.fatalf("set status of node %s: %v", name, err)
			}
		}
	}
}

// createPod creates a builder's pod in the test's namespace.
func (e *env) createPod(p *v1.Pod) *v1.Pod {
	e.t.Helper()
	p = p.DeepCopy()
	p.UID = ""
	p.Namespace = e.ns
	created, err := e.client.CoreV1().Pods(e.ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		e.fatalf("create pod %s: %v", p.Name, err)
	}
	return created
}

func (e *env) getPod(name string) *v1.Pod {
	e.t.Helper()
	p, err := e.client.CoreV1().Pods(e.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		e.fatalf("get pod %s: %v", name, err)
	}
	return p
}

// waitBound waits until the pod has a node and returns it.
func (e *env) waitBound(name string) string {
	e.t.Helper()
	var node string
	e.eventually("pod "+name+" bound", 30*time.Second, func() error {
		p, err := e.client.CoreV1().Pods(e.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Spec.NodeName == "" {
			return fmt.Errorf("still pending: %v", p.Status.Conditions)
		}
		node = p.Spec.NodeName
		return nil
	})
	return node
}

// waitUnschedulable waits for PodScheduled=False with reason Unschedulable and returns its message.
func (e *env) waitUnschedulable(name string) string {
	e.t.Helper()
	var msg string
	e.eventually("pod "+name+" unschedulable", 30*time.Second, func() error {
		p := e.getPod(name)
		if p.Spec.NodeName != "" {
			e.fatalf("pod %s was bound to %s, want unschedulable", name, p.Spec.NodeName)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
				msg = c.Message
				return nil
			}
		}
		return fmt.Errorf("conditions %v", p.Status.Conditions)
	})
	return msg
}

// podEvents lists the events about a pod with the given reason, oldest first.
func (e *env) podEvents(name, reason string) []v1.Event {
	e.t.Helper()
	list, err := e.client.CoreV1().Events(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		e.fatalf("list events: %v", err)
	}
	var out []v1.Event
	for _, ev := range list.Items {
		if ev.InvolvedObject.Kind == "Pod" && ev.InvolvedObject.Name == name && ev.Reason == reason {
			out = append(out, ev)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LastTimestamp.Before(&out[j].LastTimestamp) })
	return out
}

// waitEvent waits for an event with the reason about the pod and returns the newest.
func (e *env) waitEvent(name, reason string) v1.Event {
	e.t.Helper()
	var ev v1.Event
	e.eventually(reason+" event for "+name, 30*time.Second, func() error {
		evs := e.podEvents(name, reason)
		if len(evs) == 0 {
			return fmt.Errorf("no %s event", reason)
		}
		ev = evs[len(evs)-1]
		return nil
	})
	return ev
}

// podsOn maps each node to the names of the test's pods bound to it.
func (e *env) podsOn() map[string][]string {
	e.t.Helper()
	list, err := e.client.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		e.fatalf("list pods: %v", err)
	}
	out := map[string][]string{}
	for _, p := range list.Items {
		if p.Spec.NodeName != "" {
			out[p.Spec.NodeName] = append(out[p.Spec.NodeName], p.Name)
		}
	}
	for _, names := range out {
		sort.Strings(names)
	}
	return out
}
