package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// ociRuntimePod exercises what a container runtime must get right for the kubelet: probes (exec
// and HTTP), logs, exec, a read-only root file system, a memory limit and an emptyDir.
const ociRuntimePod = `apiVersion: v1
kind: Pod
metadata:
  name: rt
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: localhost/busybox:local
    command: ["sh", "-c", "echo rt-log-line; echo ready > /cache/ready; exec httpd -f -p 8080 -h /cache"]
    securityContext:
      readOnlyRootFilesystem: true
    resources:
      requests: {cpu: 10m, memory: 32Mi}
      limits: {memory: 64Mi}
    volumeMounts:
    - {name: cache, mountPath: /cache}
    readinessProbe:
      httpGet: {path: /ready, port: 8080}
      periodSeconds: 1
    livenessProbe:
      exec: {command: ["cat", "/cache/ready"]}
      periodSeconds: 2
  volumes:
  - name: cache
    emptyDir: {}
`

// TestOCIRuntime runs the same pod on a node of each OCI runtime (--oci-runtime): crun must do
// what runc does, through kubectl only, and leave the kubelet's stats and the pods' cgroups where
// they are with runc. The crun node names no runtime: where crun is installed and the cgroup layout
// lets it work, the default (auto) chooses it and says so.
func TestOCIRuntime(t *testing.T) {
	t.Run("crun", func(t *testing.T) { testOCIRuntime(t, "crun") })
	t.Run("runc", func(t *testing.T) { testOCIRuntime(t, "runc", "--oci-runtime", "runc") })
}

func testOCIRuntime(t *testing.T, runtime string, flags ...string) {
	requireRuntime(t)
	if _, err := exec.LookPath(runtime); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s missing under CI: hack/install-runtime.sh should have installed it", runtime)
		}
		t.Skipf("%s not installed (run hack/install-runtime.sh)", runtime)
	}
	c := newWorkerClusterOf(t, skiffBinary, flags...)
	why := "--oci-runtime " + runtime
	if len(flags) == 0 {
		// "this host's cgroup layout lets it create containers", or, on a hybrid layout whose
		// cgroup2 hierarchy held controllers (this project's machines: hugetlb) and no node of
		// the machine moved them yet, "so they are mounted as cgroup v1".
		why = "crun is installed"
	}
	mustContain(t, c.logAll(), `msg="OCI runtime of the node's containerd" runtime=`+runtime, why)
	if runtime == "crun" {
		requireNoCgroup2Controllers(t)
	}
	node := strings.TrimPrefix(strings.TrimSpace(c.kubectl("get", "nodes", "-o", "name")), "node/")
	c.stdin(ociRuntimePod, "apply", "-f", "-")
	c.kubectl("wait", "--for=condition=Ready", "pod/rt", "--timeout=90s")

	// The container is the chosen runtime's: its state is in that runtime's root, not the other's.
	id := strings.TrimPrefix(c.kubectl("get", "pod", "rt", "-o", "jsonpath={.status.containerStatuses[0].containerID}"), "containerd://")
	if id == "" {
		t.Fatal("running pod has no container ID")
	}
	stateDir := filepath.Join(c.dataDir, "kubelet", "containerd", "state")
	ns := filepath.Join(stateDir, runtime, "k8s.io")
	list, err := execOutput(runtime, "--root", ns, "list", "-q")
	if err != nil || !strings.Contains(list, id) {
		t.Fatalf("%s --root %s list: %v\n%s (want container %s)", runtime, ns, err, list, id)
	}
	other := map[string]string{"runc": "crun", "crun": "runc"}[runtime]
	if _, err := os.Stat(filepath.Join(stateDir, other, "k8s.io", id)); err == nil {
		t.Fatalf("container %s has state under %s's root", id, other)
	}
	state, err := execOutput(runtime, "--root", ns, "state", id)
	if err != nil {
		t.Fatalf("%s state %s: %v\n%s", runtime, id, err, state)
	}
	var st struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(state), &st); err != nil || st.Pid <= 0 {
		t.Fatalf("%s state %s: %v\n%s", runtime, id, err, state)
	}

	// Logs, exec (with stdin), the read-only root, the emptyDir and the memory limit as the
	// container sees it.
	eventually(t, 20*time.Second, func() error {
		if out, _ := c.kubectlErr("logs", "rt"); !strings.Contains(out, "rt-log-line") {
			return errString("logs: " + out)
		}
		return nil
	})
	mustContain(t, c.kubectl("exec", "rt", "--", "cat", "/cache/ready"), "ready")
	mustContain(t, c.stdin("through-stdin\n", "exec", "-i", "rt", "--", "cat"), "through-stdin")
	out, err := c.kubectlErr("exec", "rt", "--", "touch", "/root-is-read-only")
	if err == nil {
		t.Fatalf("writing to the read-only root file system succeeded: %s", out)
	}
	mustContain(t, out, "Read-only file system")
	c.kubectl("exec", "rt", "--", "sh", "-c", "echo written > /cache/w && cat /cache/w")
	const limit = "67108864"                                    // 64Mi
	if _, err := os.Stat("/sys/fs/cgroup/memory"); err == nil { // cgroup v1 (this project's CI)
		mustContain(t, c.kubectl("exec", "rt", "--", "cat", "/sys/fs/cgroup/memory/memory.limit_in_bytes"), limit)
		// On the host, the container's memory cgroup (from its init's /proc/PID/cgroup) is
		// containerd's place for a CRI container without a cgroup parent, /k8s.io/<id>, with
		// either runtime, and carries the limit: the cgroup the runtime made is the one the CRI
		// stats read.
		memCgroup := hostCgroup(t, st.Pid, "memory")
		if want := "/k8s.io/" + id; memCgroup != want {
			t.Errorf("container's memory cgroup %q, want %q", memCgroup, want)
		}
		data, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/memory", memCgroup, "memory.limit_in_bytes"))
		if err != nil || strings.TrimSpace(string(data)) != limit {
			t.Fatalf("host memory cgroup %s limit %q, %v; want %s", memCgroup, data, err, limit)
		}
		t.Logf("%s container %s: memory cgroup %s", runtime, id[:12], memCgroup)
	}

	// The kubelet's stats (CRI stats of the container's cgroups) through the API server's node
	// proxy: the Summary API and the resource metrics.
	pollEvery(t, 30*time.Second, time.Second, func() error {
		out, err := c.kubectlErr("get", "--raw", "/api/v1/nodes/"+node+"/proxy/stats/summary")
		if err != nil {
			return errString(out)
		}
		var s statsv1alpha1.Summary
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			return fmt.Errorf("summary: %w: %s", err, out)
		}
		for _, p := range s.Pods {
			if p.PodRef.Name != "rt" || p.PodRef.Namespace != "default" {
				continue
			}
			if len(p.Containers) != 1 || p.Containers[0].Name != "app" || p.Containers[0].CPU == nil ||
				p.Containers[0].CPU.UsageCoreNanoSeconds == nil || *p.Containers[0].CPU.UsageCoreNanoSeconds == 0 ||
				p.Containers[0].Memory == nil || p.Containers[0].Memory.WorkingSetBytes == nil || *p.Containers[0].Memory.WorkingSetBytes == 0 {
				return fmt.Errorf("summary pod rt = %+v", p)
			}
			return nil
		}
		return fmt.Errorf("summary has no pod default/rt: %s", out)
	})
	mustContain(t, c.kubectl("get", "--raw", "/api/v1/nodes/"+node+"/proxy/metrics/resource"),
		`container_memory_working_set_bytes{container="app",namespace="default",pod="rt"}`,
		`container_cpu_usage_seconds_total{container="app",namespace="default",pod="rt"}`, "resource_scrape_error 0")

	// Deleted through kubectl: the pod goes, and so does the runtime's state of its container.
	c.kubectl("delete", "pod", "rt", "--timeout=60s")
	eventually(t, 30*time.Second, func() error {
		if out, _ := execOutput(runtime, "--root", ns, "list", "-q"); strings.Contains(out, id) {
			return fmt.Errorf("%s still lists %s after the pod's deletion", runtime, id)
		}
		return nil
	})
}

// requireNoCgroup2Controllers: on a hybrid cgroup layout (cgroup v1 controllers, cgroup2 at
// /sys/fs/cgroup/unified), a crun node leaves the cgroup2 hierarchy without controllers (crun
// refuses any container otherwise): the node moved them to cgroup v1 (or found them there), so
// /proc/cgroups gives hugetlb a v1 hierarchy (a nonzero id; 0 is cgroup2's).
func requireNoCgroup2Controllers(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile("/sys/fs/cgroup/unified/cgroup.controllers")
	if err != nil {
		return // not a hybrid layout
	}
	if len(strings.TrimSpace(string(data))) != 0 {
		t.Fatalf("a crun node's cgroup2 hierarchy still holds controllers: %q", data)
	}
	cgroups, err := os.ReadFile("/proc/cgroups")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(cgroups), "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "hugetlb" && f[1] == "0" {
			t.Fatalf("hugetlb is in no cgroup v1 hierarchy (/proc/cgroups: %q) yet cgroup2 lacks it", line)
		}
	}
}

// hostCgroup is the path of pid's cgroup in the v1 hierarchy of controller, as /proc/PID/cgroup
// names it.
func hostCgroup(t *testing.T, pid int, controller string) string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == controller {
				return parts[2]
			}
		}
	}
	t.Fatalf("no %s cgroup in /proc/%d/cgroup:\n%s", controller, pid, data)
	return ""
}
