package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/internal/simnode"
)

// TestLocalPathStatefulSet: a StatefulSet with volumeClaimTemplates and no storageClassName runs on
// a cluster with nothing installed. Its claims get the default local-path class (admission), the
// scheduler picks nodes and selects them on the claims, the provisioner makes the volumes there and
// the binder binds them; deleting a claim removes its volume through a helper pod.
func TestLocalPathStatefulSet(t *testing.T) {
	c := newCluster(t)
	const nodes = 2
	c.startSimNodes(t, simnode.Config{
		Nodes: nodes, NamePrefix: "sim-", HeartbeatInterval: 2 * time.Second,
		// Helper pods run `rm -rf` and finish; everything else runs on.
		CompletePods: func(pod *corev1.Pod) (int32, time.Duration, bool) {
			return 0, 0, strings.HasPrefix(pod.Name, "helper-pod-delete-")
		},
	})
	root := ctl{c: c, t: t}
	mustContain(t, root.run("get", "storageclass", "local-path"), "local-path (default)", "skiff.dev/local-path", "Delete", "WaitForFirstConsumer")

	k := root.namespace("lp")
	k.apply(`apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  serviceName: db
  replicas: 2
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      containers:
      - name: db
        image: registry.example/db:v1
        volumeMounts:
        - {name: data, mountPath: /data}
  volumeClaimTemplates:
  - metadata:
      name: data
    spec:
      accessModes: [ReadWriteOnce]
      resources:
        requests:
          storage: 1Gi
`)
	mustContain(t, k.run("rollout", "status", "statefulset/db", rolloutTimeout), "roll out complete")
	for i := range 2 {
		claim := fmt.Sprintf("data-db-%d", i)
		pod := fmt.Sprintf("db-%d", i)
		k.eventually(60*time.Second, func() error {
			if phase := k.jsonpath("{.status.phase}", "pvc", claim); phase != "Bound" {
				return fmt.Errorf("claim %s is %q", claim, phase)
			}
			return nil
		})
		if class := k.jsonpath("{.spec.storageClassName}", "pvc", claim); class != "local-path" {
			t.Errorf("claim %s has class %q, want the default local-path", claim, class)
		}
		node := k.jsonpath("{.spec.nodeName}", "pod", pod)
		if selected := k.jsonpath(`{.metadata.annotations.volume\.kubernetes\.io/selected-node}`, "pvc", claim); selected != node {
			t.Errorf("claim %s selected node %q, pod %s runs on %q", claim, selected, pod, node)
		}
		uid := k.jsonpath("{.metadata.uid}", "pvc", claim)
		pv := k.jsonpath("{.spec.volumeName}", "pvc", claim)
		if pv != "pvc-"+uid {
			t.Errorf("claim %s bound to %q, want pvc-%s", claim, pv, uid)
		}
		if got, want := k.jsonpath("{.spec.hostPath.path}", "pv", pv), filepath.Join(c.dataDir, "storage", pv); got != want {
			t.Errorf("volume %s path %q, want %q", pv, got, want)
		}
		if got := k.jsonpath("{.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}", "pv", pv); got != node {
			t.Errorf("volume %s is pinned to %q, its pod runs on %q", pv, got, node)
		}
		if got := k.jsonpath(`{.metadata.annotations.pv\.kubernetes\.io/provisioned-by}`, "pv", pv); got != "skiff.dev/local-path" {
			t.Errorf("volume %s provisioned-by %q", pv, got)
		}
	}

	// A recreated pod goes back to its volume's node.
	node0 := k.jsonpath("{.spec.nodeName}", "pod", "db-0")
	uid0 := k.jsonpath("{.metadata.uid}", "pod", "db-0")
	k.run("delete", "pod", "db-0", "--wait=false")
	k.eventually(60*time.Second, func() error {
		// The pod is absent for a moment between deletion and its replacement: try, not run.
		out, err := k.try("get", "pod", "db-0", "-o", "jsonpath={.metadata.uid} {.spec.nodeName}")
		got := strings.Fields(out)
		if err != nil || len(got) != 2 || got[0] == uid0 {
			return fmt.Errorf("db-0 not made again and scheduled yet: %v %s", err, out)
		}
		if got[1] != node0 {
			return fmt.Errorf("db-0 on %q, its volume is on %q", got[1], node0)
		}
		return nil
	})

	// Reclaim policy Delete: the claim's volume goes once the claim does.
	pv1 := k.jsonpath("{.spec.volumeName}", "pvc", "data-db-1")
	k.run("scale", "statefulset/db", "--replicas=1")
	k.eventually(60*time.Second, func() error {
		if _, err := k.try("get", "pod", "db-1"); err == nil {
			return fmt.Errorf("db-1 still exists")
		}
		return nil
	})
	k.run("delete", "pvc", "data-db-1", "--wait=false")
	k.eventually(90*time.Second, func() error {
		if out, err := root.try("get", "pv", pv1); err == nil {
			return fmt.Errorf("volume %s still exists:\n%s", pv1, out)
		}
		return nil
	})
	if out := root.run("get", "pods", "-n", "kube-system", "-o", "name"); strings.Contains(out, "helper-pod-delete-") {
		t.Errorf("helper pod left behind:\n%s", out)
	}
}

// TestLocalPathRealContainers: on a real node, a StatefulSet's pod writes a file to its local-path
// volume, and the pod made again after deletion reads it back from the same directory; deleting the
// claim removes the directory (the helper pod runs the offline busybox image).
func TestLocalPathRealContainers(t *testing.T) {
	c := newWorkerCluster(t, "--local-path-helper-image=localhost/busybox:local")
	k := ctl{c: c, t: t}
	k.apply(`apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: keeper
spec:
  serviceName: keeper
  replicas: 1
  selector:
    matchLabels: {app: keeper}
  template:
    metadata:
      labels: {app: keeper}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: keeper
        image: localhost/busybox:local
        command: [sh, -c, 'test -f /data/hello || echo "written by $(cat /proc/sys/kernel/random/uuid)" > /data/hello; exec sleep 3600']
        volumeMounts:
        - {name: data, mountPath: /data}
  volumeClaimTemplates:
  - metadata:
      name: data
    spec:
      accessModes: [ReadWriteOnce]
      resources:
        requests:
          storage: 100Mi
`)
	k.run("wait", "--for=condition=Ready", "pod/keeper-0", "--timeout=90s")
	first := strings.TrimSpace(k.run("exec", "keeper-0", "--", "cat", "/data/hello"))
	if !strings.HasPrefix(first, "written by ") {
		t.Fatalf("file on the volume = %q", first)
	}
	pv := k.jsonpath("{.spec.volumeName}", "pvc", "data-keeper-0")
	dir := filepath.Join(c.dataDir, "storage", pv)
	if data, err := os.ReadFile(filepath.Join(dir, "hello")); err != nil || strings.TrimSpace(string(data)) != first {
		t.Fatalf("host copy of the file: %q, %v", data, err)
	}

	uid := k.jsonpath("{.metadata.uid}", "pod", "keeper-0")
	k.run("delete", "pod", "keeper-0", "--wait=false")
	k.eventually(90*time.Second, func() error {
		// The pod is absent for a moment between deletion and its replacement: try, not run.
		if now, err := k.try("get", "pod", "keeper-0", "-o", "jsonpath={.metadata.uid}"); err != nil || now == "" || now == uid {
			return fmt.Errorf("keeper-0 not made again yet: %v", err)
		}
		if out, err := k.try("wait", "--for=condition=Ready", "pod/keeper-0", "--timeout=2s"); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	if again := strings.TrimSpace(k.run("exec", "keeper-0", "--", "cat", "/data/hello")); again != first {
		t.Fatalf("after the pod was made again the file reads %q, want %q", again, first)
	}

	k.run("scale", "statefulset/keeper", "--replicas=0")
	k.eventually(90*time.Second, func() error {
		if _, err := k.try("get", "pod", "keeper-0"); err == nil {
			return fmt.Errorf("keeper-0 still exists")
		}
		return nil
	})
	k.run("delete", "pvc", "data-keeper-0", "--wait=false")
	k.eventually(120*time.Second, func() error {
		if _, err := k.try("get", "pv", pv); err == nil {
			return fmt.Errorf("volume %s still exists", pv)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			return fmt.Errorf("directory %s still there (%v)", dir, err)
		}
		return nil
	})
}
