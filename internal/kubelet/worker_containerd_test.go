package kubelet_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/images"
	"github.com/skiff-sh/skiff/internal/kubelet"
	"github.com/skiff-sh/skiff/internal/kubelet/containerd"
	"github.com/skiff-sh/skiff/internal/kubelet/containerd/containerdtest"
	"github.com/skiff-sh/skiff/internal/kubelet/cri"
)

// TestRunWorkerFromScratch is what `skiff server --roles worker` does on a
// fresh machine: RunWorker starts containerd, imports the pause image,
// writes the CNI network for the node's pod CIDR, registers a Ready node
// and runs an imported image.
func TestRunWorkerFromScratch(t *testing.T) {
	containerdtest.Require(t)
	suffix := containerdtest.RandomSuffix(3)
	bridge, network := "skw"+suffix, "skiff-worker-"+suffix
	containerdtest.ProtectHost(t, bridge, network)
	podCIDR, err := containerdtest.FreePodCIDR()
	if err != nil {
		t.Fatal(err)
	}
	dataDir, err := os.MkdirTemp("", "skiff-wk-")
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset()
	cfg := kubelet.WorkerConfig{Kubelet: kubelet.Default("worker-1", dataDir)}
	cfg.Kubelet.PodCIDRs = []string{podCIDR}
	cfg.Kubelet.CNIBridge, cfg.Kubelet.CNINetworkName = bridge, network
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- kubelet.RunWorker(ctx, cfg, nil, client, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	containerdCfg := containerd.Default(dataDir)
	t.Cleanup(func() {
		// Pods go through the kubelet (which would otherwise recreate them),
		// then whatever is left goes directly, before containerd stops.
		_ = client.CoreV1().Pods("default").Delete(context.Background(), "sleeper", metav1.DeleteOptions{})
		if rt, err := cri.Dial(containerdCfg.Address); err == nil {
			waitNoSandboxes(t, rt)
			containerdtest.RemoveAllPods(t, rt)
			rt.Close()
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("RunWorker: %v", err)
		}
		containerdtest.UnmountUnder(t, dataDir)
		os.RemoveAll(dataDir)
	})

	deadline := time.Now().Add(60 * time.Second)
	for {
		node, err := client.CoreV1().Nodes().Get(ctx, "worker-1", metav1.GetOptions{})
		if err == nil && nodeReady(node) {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(containerdCfg.LogPath())
			t.Fatalf("node not Ready: %+v %v\ncontainerd log:\n%s", node, err, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
	archive, err := images.BuildBusybox(t.TempDir(), "localhost/sleeper:v1", []string{"/bin/sleep", "3600"})
	if err != nil {
		t.Fatal(err)
	}
	if err := images.Import(ctx, containerdCfg.Address, archive); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sleeper", Namespace: "default", UID: "uid-sleeper"},
		Spec: corev1.PodSpec{NodeName: "worker-1", RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{Name: "main", Image: "localhost/sleeper:v1", ImagePullPolicy: corev1.PullNever}}},
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		p, err := client.CoreV1().Pods("default").Get(ctx, "sleeper", metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning {
			if p.Status.PodIP == "" {
				t.Errorf("no pod IP: %+v", p.Status)
			}
			if !cidrContains(podCIDR, p.Status.PodIP) {
				t.Errorf("pod IP %s outside the node's pod CIDR %s", p.Status.PodIP, podCIDR)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod not running: %+v %v", p, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func waitNoSandboxes(t *testing.T, rt cri.Runtime) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		sandboxes, err := rt.ListPodSandbox(context.Background(), nil)
		if err != nil || len(sandboxes) == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("sandboxes left 30s after their pods were deleted")
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func cidrContains(cidr, ip string) bool {
	var a, b, c, d, bits int
	var w, x, y, z int
	if _, err := fmt.Sscanf(cidr, "%d.%d.%d.%d/%d", &a, &b, &c, &d, &bits); err != nil {
		return false
	}
	if _, err := fmt.Sscanf(ip, "%d.%d.%d.%d", &w, &x, &y, &z); err != nil {
		return false
	}
	return bits == 24 && a == w && b == x && c == y
}
