package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/internal/simnode"
)

// TestStorageObjectInUseProtection: claims and volumes are protected as Kubernetes protects them.
// A new claim and a new volume carry the kubernetes.io/pvc-protection and pv-protection finalizers
// (admission); `kubectl delete pvc` of a claim a pod uses leaves it Terminating until the pod is
// gone, then the claim and its local-path volume go; a volume deleted while bound stays until its
// claim is deleted and the binder marks it Released. A finalizer taken off a live object is put
// back by the controllers (objects made before the admission plugin).
func TestStorageObjectInUseProtection(t *testing.T) {
	c := newCluster(t)
	c.startSimNodes(t, simnode.Config{
		Nodes: 1, NamePrefix: "sim-", HeartbeatInterval: 2 * time.Second,
		// local-path's helper pods run `rm -rf` and finish; everything else runs on.
		CompletePods: func(pod *corev1.Pod) (int32, time.Duration, bool) {
			return 0, 0, strings.HasPrefix(pod.Name, "helper-pod-delete-")
		},
	})
	root := ctl{c: c, t: t}
	k := root.namespace("protect")

	t.Run("claim in use by a pod", func(t *testing.T) {
		k := ctl{c: c, t: t, ns: k.ns}
		k.apply(`apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 1Gi
---
apiVersion: v1
kind: Pod
metadata:
  name: user
spec:
  containers:
  - name: app
    image: registry.example/app:v1
    volumeMounts:
    - {name: data, mountPath: /data}
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: data}
`)
		if got := k.jsonpath("{.metadata.finalizers}", "pvc", "data"); !strings.Contains(got, "kubernetes.io/pvc-protection") {
			t.Fatalf("new claim's finalizers %s, want kubernetes.io/pvc-protection", got)
		}
		k.run("wait", "--for=jsonpath={.status.phase}=Bound", "pvc/data", "--timeout=90s")
		k.run("wait", "--for=jsonpath={.status.phase}=Running", "pod/user", "--timeout=90s")
		pv := k.jsonpath("{.spec.volumeName}", "pvc", "data")
		if got := k.jsonpath("{.metadata.finalizers}", "pv", pv); !strings.Contains(got, "kubernetes.io/pv-protection") {
			t.Fatalf("provisioned volume's finalizers %s, want kubernetes.io/pv-protection", got)
		}

		k.run("delete", "pvc", "data", "--wait=false")
		// The pod still runs: the claim stays, Terminating, for as long as we look.
		for range 10 {
			out := k.run("get", "pvc", "data", "-o", "jsonpath={.metadata.deletionTimestamp} {.metadata.finalizers}")
			if !strings.Contains(out, "kubernetes.io/pvc-protection") || strings.HasPrefix(out, " ") {
				t.Fatalf("claim in use: want it being deleted and still protected, got %q", out)
			}
			time.Sleep(500 * time.Millisecond)
		}
		mustContain(t, k.run("get", "pvc", "data"), "Terminating")
		if phase := k.jsonpath("{.status.phase}", "pv", pv); phase != "Bound" {
			t.Fatalf("volume %s is %q while its claim is in use, want Bound", pv, phase)
		}

		k.run("delete", "pod", "user", "--wait=false")
		k.eventually(90*time.Second, func() error {
			if out, err := k.try("get", "pvc", "data"); err == nil {
				return fmt.Errorf("claim still there after its pod was deleted:\n%s", out)
			}
			return nil
		})
		// Reclaim policy Delete: local-path removes the volume, which is Released and so let go.
		k.eventually(90*time.Second, func() error {
			if out, err := root.try("get", "pv", pv); err == nil {
				return fmt.Errorf("volume %s still there:\n%s", pv, out)
			}
			return nil
		})
	})

	t.Run("volume bound to a claim", func(t *testing.T) {
		k := ctl{c: c, t: t, ns: k.ns}
		k.apply(`apiVersion: v1
kind: PersistentVolume
metadata:
  name: protect-static
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  hostPath: {path: /tmp/skiff-e2e-protect-static}
  claimRef: {namespace: protect, name: static}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: static
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  volumeName: protect-static
  resources:
    requests:
      storage: 1Gi
`)
		k.run("wait", "--for=jsonpath={.status.phase}=Bound", "pv/protect-static", "--timeout=90s")
		if got := k.jsonpath("{.metadata.finalizers}", "pv", "protect-static"); !strings.Contains(got, "kubernetes.io/pv-protection") {
			t.Fatalf("new volume's finalizers %s, want kubernetes.io/pv-protection", got)
		}

		k.run("delete", "pv", "protect-static", "--wait=false")
		for range 10 {
			out := k.run("get", "pv", "protect-static", "-o", "jsonpath={.metadata.deletionTimestamp} {.status.phase}")
			if !strings.HasSuffix(out, " Bound") || strings.HasPrefix(out, " ") {
				t.Fatalf("bound volume: want it being deleted and still Bound, got %q", out)
			}
			time.Sleep(500 * time.Millisecond)
		}
		mustContain(t, k.run("get", "pv", "protect-static"), "Terminating")

		// No pod uses the claim: it goes at once, and its volume, Released, follows.
		k.run("delete", "pvc", "static", "--timeout=60s")
		k.eventually(90*time.Second, func() error {
			if out, err := k.try("get", "pv", "protect-static"); err == nil {
				return fmt.Errorf("volume still there after its claim was deleted:\n%s", out)
			}
			return nil
		})
	})

	t.Run("volume attributes class a claim names", func(t *testing.T) {
		k := ctl{c: c, t: t, ns: k.ns}
		k.apply(`apiVersion: storage.k8s.io/v1beta1
kind: VolumeAttributesClass
metadata:
  name: protect-gold
driverName: hostpath.csi.k8s.io
parameters: {iops: "3000"}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: gold
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: manual
  volumeAttributesClassName: protect-gold
  resources:
    requests:
      storage: 1Gi
`)
		if got := k.jsonpath("{.metadata.finalizers}", "vac", "protect-gold"); !strings.Contains(got, "kubernetes.io/vac-protection") {
			t.Fatalf("new class's finalizers %s, want kubernetes.io/vac-protection", got)
		}
		out, err := k.try("patch", "vac", "protect-gold", "--type=merge", "-p", `{"parameters":{"iops":"1"}}`)
		if err == nil || !strings.Contains(out, "updates to parameters are forbidden") {
			t.Fatalf("changing a class's parameters: %v\n%s", err, out)
		}
		out, err = k.try("patch", "pvc", "gold", "--type=json", "-p", `[{"op":"remove","path":"/spec/volumeAttributesClassName"}]`)
		if err == nil || !strings.Contains(out, "update from non-nil value to nil is forbidden") {
			t.Fatalf("taking the class off a claim: %v\n%s", err, out)
		}
		k.run("delete", "vac", "protect-gold", "--wait=false")
		for range 6 {
			out := k.run("get", "vac", "protect-gold", "-o", "jsonpath={.metadata.deletionTimestamp} {.metadata.finalizers}")
			if !strings.Contains(out, "kubernetes.io/vac-protection") || strings.HasPrefix(out, " ") {
				t.Fatalf("class a claim names: want it being deleted and still protected, got %q", out)
			}
			time.Sleep(500 * time.Millisecond)
		}
		k.run("delete", "pvc", "gold", "--timeout=60s")
		k.eventually(60*time.Second, func() error {
			if out, err := root.try("get", "vac", "protect-gold"); err == nil {
				return fmt.Errorf("class still there after the claim naming it was deleted:\n%s", out)
			}
			return nil
		})
	})

	t.Run("finalizers put back on live objects", func(t *testing.T) {
		k := ctl{c: c, t: t, ns: k.ns}
		k.apply(`apiVersion: v1
kind: PersistentVolume
metadata:
  name: protect-old
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  hostPath: {path: /tmp/skiff-e2e-protect-old}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: old
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: manual
  resources:
    requests:
      storage: 1Gi
`)
		// As if made before the admission plugin: without the finalizer.
		drop := `[{"op":"remove","path":"/metadata/finalizers"}]`
		k.run("patch", "pvc", "old", "--type=json", "-p", drop)
		k.run("patch", "pv", "protect-old", "--type=json", "-p", drop)
		k.eventually(60*time.Second, func() error {
			claim := k.jsonpath("{.metadata.finalizers}", "pvc", "old")
			volume := k.jsonpath("{.metadata.finalizers}", "pv", "protect-old")
			if !strings.Contains(claim, "kubernetes.io/pvc-protection") || !strings.Contains(volume, "kubernetes.io/pv-protection") {
				return fmt.Errorf("finalizers not put back: claim %q, volume %q", claim, volume)
			}
			return nil
		})
		k.run("delete", "pvc", "old", "--timeout=60s")
		k.run("delete", "pv", "protect-old", "--timeout=60s")
	})
}
