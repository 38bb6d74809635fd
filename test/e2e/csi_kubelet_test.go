package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/skiff-sh/skiff/internal/kubelet/csi/fakecsi"
)

// TestCSIKubeletInlineVolume runs a CSI node plugin beside a real node (in the test process, with
// real bind mounts) as a user would install one: it registers through the kubelet root dir's
// plugins_registry (CSINode lists it), a pod's inline CSI volume is published into
// <root>/pods/<uid>/volumes/kubernetes.io~csi/ and what the container writes lands on the
// driver's storage; after kill -9 and a restart of skiff the pod keeps its volume; deleting the pod
// unpublishes it, leaving no mount and no directory.
func TestCSIKubeletInlineVolume(t *testing.T) {
	root, err := os.MkdirTemp("/tmp", "skr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The kubelet made its root dir a shared mount of its own where the file system under it was not.
		if mountPoint(t, root) {
			_ = syscall.Unmount(root, syscall.MNT_DETACH)
		}
		_ = os.RemoveAll(root)
	})
	backing := filepath.Join(root, "backing")
	driver := &fakecsi.Driver{Name: "inline.csi.skiff.test", NodeID: "node-1", BackingDir: backing,
		Capabilities: []csipb.NodeServiceCapability_RPC_Type{csipb.NodeServiceCapability_RPC_GET_VOLUME_STATS}}
	if err := driver.Start(filepath.Join(root, "plugins", "inline", "csi.sock"), filepath.Join(root, "plugins_registry", "inline-reg.sock")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(driver.Stop)
	c := newWorkerCluster(t, "--kubelet-root-dir", root)
	eventually(t, 30*time.Second, func() error {
		out, err := c.kubectlErr("get", "csinode", "-o", "jsonpath={.items[*].spec.drivers[*].name}")
		if err != nil || !strings.Contains(out, "inline.csi.skiff.test") {
			return errString("csinode drivers: " + out)
		}
		return nil
	})

	c.stdin(`apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: inline.csi.skiff.test}
spec:
  attachRequired: false
  podInfoOnMount: true
  volumeLifecycleModes: [Ephemeral]
---
apiVersion: v1
kind: Pod
metadata: {name: writer}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: localhost/busybox:local
    command: ["sh", "-c", "echo hello from the pod > /data/hello && sleep 3600"]
    volumeMounts: [{name: scratch, mountPath: /data}]
  volumes:
  - name: scratch
    csi: {driver: inline.csi.skiff.test}
`, "apply", "-f", "-")
	c.kubectl("wait", "--for=condition=Ready", "pod/writer", "--timeout=90s")
	uid := c.kubectl("get", "pod", "writer", "-o", "jsonpath={.metadata.uid}")
	target := filepath.Join(root, "pods", uid, "volumes", "kubernetes.io~csi", "scratch", "mount")
	var written string
	eventually(t, 30*time.Second, func() error {
		matches, _ := filepath.Glob(filepath.Join(backing, "*", "hello"))
		if len(matches) != 1 {
			return errString("the pod's file is not on the driver's storage")
		}
		data, err := os.ReadFile(matches[0])
		written = string(data)
		return err
	})
	mustContain(t, written, "hello from the pod")
	if !mountPoint(t, target) {
		t.Fatalf("%s is not mounted", target)
	}
	var publish *csipb.NodePublishVolumeRequest
	for _, call := range driver.Calls() {
		if r, ok := call.Request.(*csipb.NodePublishVolumeRequest); ok {
			publish = r
		}
	}
	if publish.GetVolumeContext()["csi.storage.k8s.io/pod.name"] != "writer" || publish.GetVolumeContext()["csi.storage.k8s.io/ephemeral"] != "true" {
		t.Errorf("volume context = %v", publish.GetVolumeContext())
	}

	// kill -9 and a restart: the pod keeps its volume.
	c.kill()
	c.start()
	c.kubectl("wait", "--for=condition=Ready", "pod/writer", "--timeout=90s")
	mustContain(t, c.kubectl("exec", "writer", "--", "cat", "/data/hello"), "hello from the pod")
	for _, m := range driver.Methods() {
		if m == "NodeUnpublishVolume" {
			t.Fatal("the restart unpublished the volume of a pod that is still there")
		}
	}

	c.kubectl("delete", "pod", "writer", "--timeout=60s")
	eventually(t, 30*time.Second, func() error {
		if mountPoint(t, target) {
			return errString(target + " still mounted")
		}
		if _, err := os.Stat(filepath.Join(root, "pods", uid)); !os.IsNotExist(err) {
			return errString("the pod's directory is left")
		}
		return nil
	})
}

func mountPoint(t *testing.T, path string) bool {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == path {
			return true
		}
	}
	return false
}
