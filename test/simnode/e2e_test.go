package simnode

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/simnode"
)

// testSchedulerName keeps skiff's own scheduler (when it runs) away from the test's pods: the
// test binds them itself, so what it checks does not depend on scheduling.
const testSchedulerName = "simnode-test-binder"

var skiffBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "skiff-simnode-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	skiffBinary = filepath.Join(dir, "skiff")
	build := exec.Command("go", "build", "-o", skiffBinary, "github.com/skiff-sh/skiff/cmd/skiff")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build skiff:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startSkiff runs `skiff server` with the etcd and controlplane roles and returns a client of it
// once /readyz answers ok.
func startSkiff(t *testing.T) kubernetes.Interface {
	t.Helper()
	dataDir := t.TempDir()
	logPath := filepath.Join(dataDir, "skiff.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(skiffBinary, "server", "--data-dir", dataDir, "--roles", "etcd,controlplane",
		"--bind-address", "127.0.0.1", "--https-port", strconv.Itoa(freePort(t)),
		"--etcd-client-port", strconv.Itoa(freePort(t)), "--etcd-peer-port", strconv.Itoa(freePort(t)),
		"--lb-port", strconv.Itoa(freePort(t)),
		// 128 MiB kept for etcd, not 1 GiB: the test machine's disk is shared and often nearly full.
		"--etcd-disk-reserve-bytes", strconv.Itoa(128<<20),
		// The simulator's nodes are the cluster's: the control plane registers none of its own.
		"--control-plane-kubelet=false")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		logFile.Close()
		if t.Failed() {
			if data, err := os.ReadFile(logPath); err == nil {
				if len(data) > 6000 {
					data = data[len(data)-6000:]
				}
				t.Logf("skiff log tail:\n%s", data)
			}
		}
	})

	kubeconfig := filepath.Join(dataDir, "admin.kubeconfig")
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			t.Fatal("skiff server exited before becoming ready")
		default:
		}
		if client := readyClient(kubeconfig); client != nil {
			return client
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal("skiff server not ready within 90s")
	return nil
}

func readyClient(kubeconfig string) kubernetes.Interface {
	if _, err := os.Stat(kubeconfig); err != nil {
		return nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil
	}
	cfg.QPS, cfg.Burst = 2000, 4000
	cfg.Timeout = 30 * time.Second
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil || string(body) != "ok" {
		return nil
	}
	return client
}

// bindRoundRobin plays the scheduler for pods of testSchedulerName: it binds every pending one to
// the next node in turn, until ctx ends.
func bindRoundRobin(ctx context.Context, t *testing.T, client kubernetes.Interface, nodes []string) {
	next := 0
	for ctx.Err() == nil {
		pods, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName="})
		if err == nil {
			for _, pod := range pods.Items {
				if pod.Spec.SchedulerName != testSchedulerName || pod.DeletionTimestamp != nil {
					continue
				}
				binding := &corev1.Binding{
					ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
					Target:     corev1.ObjectReference{Kind: "Node", Name: nodes[next%len(nodes)]},
				}
				next++
				if err := client.CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil &&
					!apierrors.IsConflict(err) && !apierrors.IsNotFound(err) && ctx.Err() == nil {
					t.Errorf("bind %s/%s: %v", pod.Namespace, pod.Name, err)
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitFor polls cond until it holds or the timeout passes; polling is how a client sees a
// cluster converge.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting until %s; last state: %s", timeout, what, last)
}

func TestSimulatedNodesRunDeploymentAndJob(t *testing.T) {
	client := startSkiff(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	sim, err := simnode.Start(ctx, simnode.Config{
		Client: client, Nodes: 50,
		CompletePods: func(pod *corev1.Pod) (int32, time.Duration, bool) {
			owner := metav1.GetControllerOf(pod)
			return 0, time.Second, owner != nil && owner.Kind == "Job"
		},
	})
	if err != nil {
		t.Fatalf("start simulator: %v", err)
	}
	defer sim.Stop()

	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 50 {
		t.Fatalf("%d nodes registered, want 50", len(nodes.Items))
	}
	leases, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(leases.Items) != 50 {
		t.Fatalf("%d node leases, want 50", len(leases.Items))
	}

	binderDone := make(chan struct{})
	go func() { defer close(binderDone); bindRoundRobin(ctx, t, client, sim.NodeNames()) }()
	defer func() { cancel(); <-binderDone }()

	labels := map[string]string{"app": "web"}
	podSpec := corev1.PodSpec{
		SchedulerName: testSchedulerName,
		Containers:    []corev1.Container{{Name: "web", Image: "registry.k8s.io/pause:3.10"}},
	}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](20),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec},
		},
	}
	if _, err := client.AppsV1().Deployments("default").Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	jobSpec := podSpec
	jobSpec.RestartPolicy = corev1.RestartPolicyNever
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "batch", Namespace: "default"},
		Spec: batchv1.JobSpec{
			Completions: ptr.To[int32](5),
			Parallelism: ptr.To[int32](2),
			Template:    corev1.PodTemplateSpec{Spec: jobSpec},
		},
	}
	if _, err := client.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	waitFor(t, 90*time.Second, "the deployment has 20 available replicas", func() (bool, string) {
		d, err := client.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.AvailableReplicas == 20, fmt.Sprintf("%+v", d.Status)
	})
	pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	ips := map[string]bool{}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" || ips[p.Status.PodIP] {
			t.Errorf("pod %s: phase %s podIP %q (repeated: %v)", p.Name, p.Status.Phase, p.Status.PodIP, ips[p.Status.PodIP])
		}
		ips[p.Status.PodIP] = true
	}

	waitFor(t, 90*time.Second, "the job completes", func() (bool, string) {
		j, err := client.BatchV1().Jobs("default").Get(ctx, "batch", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				return j.Status.Succeeded == 5, fmt.Sprintf("%+v", j.Status)
			}
		}
		return false, fmt.Sprintf("%+v", j.Status)
	})

	// Scaling down deletes pods gracefully; the simulator finishes the deletions as a kubelet would.
	scale, err := client.AppsV1().Deployments("default").GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 5
	if _, err := client.AppsV1().Deployments("default").UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the scaled-down deployment has 5 pods", func() (bool, string) {
		pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 5, fmt.Sprintf("%d pods", len(pods.Items))
	})
}
