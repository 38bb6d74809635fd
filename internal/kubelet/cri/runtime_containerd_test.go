package cri_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiff-sh/skiff/internal/images"
	"github.com/skiff-sh/skiff/internal/kubelet/containerd/containerdtest"
	"github.com/skiff-sh/skiff/internal/kubelet/cri"
)

// TestRealContainerdServesHTTPFromPod runs a sandbox and a busybox httpd on
// a real containerd and fetches a page from the pod's IP.
func TestRealContainerdServesHTTPFromPod(t *testing.T) {
	env := containerdtest.Start(t)
	rt := env.Runtime
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	version, err := rt.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if version.RuntimeName != "containerd" || version.RuntimeApiVersion != "v1" {
		t.Errorf("version = %+v", version)
	}
	img, err := rt.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: images.BusyboxImage})
	if err != nil || img == nil {
		t.Fatalf("busybox image status = %v, %v", img, err)
	}
	if img.Id != env.BusyboxImageID {
		t.Errorf("image id = %s, want %s from the archive", img.Id, env.BusyboxImageID)
	}
	if missing, err := rt.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "localhost/absent:v0"}); err != nil || missing != nil {
		t.Errorf("absent image status = %v, %v; want nil, nil", missing, err)
	}

	logDir := filepath.Join(env.DataDir, "pods", "web")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	sandboxConfig := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-web", Attempt: 0},
		Hostname:     "web",
		LogDirectory: logDir,
		Labels:       map[string]string{"io.kubernetes.pod.name": "web"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER},
			},
		},
	}
	start := time.Now()
	sandboxID, err := rt.RunPodSandbox(ctx, sandboxConfig, "")
	if err != nil {
		t.Fatal(err)
	}
	sandboxLatency := time.Since(start)
	status, err := rt.PodSandboxStatus(ctx, sandboxID)
	if err != nil {
		t.Fatal(err)
	}
	podIP := status.GetNetwork().GetIp()
	if status.State != runtimeapi.PodSandboxState_SANDBOX_READY || podIP == "" {
		t.Fatalf("sandbox status = %v", status)
	}

	containerConfig := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "httpd"},
		Image:    &runtimeapi.ImageSpec{Image: images.BusyboxImage},
		Command:  []string{"/bin/sh", "-c"},
		Args:     []string{"mkdir -p /www && echo \"hello from $POD_NAME\" > /www/index.html && exec httpd -f -p 8080 -h /www"},
		Envs:     []*runtimeapi.KeyValue{{Key: "POD_NAME", Value: []byte("web")}},
		LogPath:  "httpd/0.log",
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 64 << 20, CpuPeriod: 100000, CpuQuota: 50000},
		},
	}
	start = time.Now()
	containerID, err := rt.CreateContainer(ctx, sandboxID, containerConfig, sandboxConfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, containerID); err != nil {
		t.Fatal(err)
	}
	containerLatency := time.Since(start)

	body := fetch(t, fmt.Sprintf("http://%s:8080/index.html", podIP))
	if body != "hello from web\n" {
		t.Errorf("GET from pod = %q", body)
	}
	stdout, _, code, err := rt.ExecSync(ctx, containerID, []string{"cat", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}, 10*time.Second)
	if err != nil || code != 0 {
		t.Errorf("exec = %v, code %d", err, code)
	} else if strings.TrimSpace(string(stdout)) != fmt.Sprint(64<<20) {
		// cgroup v2 hosts expose memory.max instead; only v1 is asserted.
		if _, statErr := os.Stat("/sys/fs/cgroup/memory"); statErr == nil {
			t.Errorf("memory limit in container = %q, want %d", stdout, 64<<20)
		}
	}
	url, err := rt.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: containerID, Cmd: []string{"sh"}, Stdout: true})
	if err != nil || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Errorf("exec streaming url = %q, %v", url, err)
	}
	containers, err := rt.ListContainers(ctx, &runtimeapi.ContainerFilter{PodSandboxId: sandboxID})
	if err != nil || len(containers) != 1 || containers[0].State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("list containers = %v, %v", containers, err)
	}

	start = time.Now()
	if err := rt.StopContainer(ctx, containerID, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	cs, err := rt.ContainerStatus(ctx, containerID)
	if err != nil || cs.State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("status after stop = %v, %v", cs, err)
	}
	if err := rt.StopPodSandbox(ctx, sandboxID); err != nil {
		t.Fatal(err)
	}
	if err := rt.RemovePodSandbox(ctx, sandboxID); err != nil {
		t.Fatal(err)
	}
	teardownLatency := time.Since(start)
	if _, err := rt.ContainerStatus(ctx, containerID); !cri.IsNotFound(err) {
		t.Errorf("container status after pod removal: %v, want NotFound", err)
	}
	t.Logf("latency: run sandbox %v, create+start container %v, stop+remove pod %v", sandboxLatency, containerLatency, teardownLatency)
}

func fetch(t *testing.T, url string) string {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := client.Get(url)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return string(body)
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %v", url, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
