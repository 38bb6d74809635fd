package e2e

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The csi-hostpath tests install a real CSI driver as a user would: csi-hostpath v1.16.1 and its
// sidecars (testdata/csi-hostpath, e2e.test's manifests of it) applied with kubectl on a cluster
// of one control plane (no kubelet) and one worker. The images are the ones
// hack/conformance/build-csi-images.sh builds offline into the conformance cache; a machine
// without them skips these tests.

// csiHostpathImages are the images testdata/csi-hostpath and the tests' workloads name.
var csiHostpathImages = []string{
	"registry.k8s.io/sig-storage/hostpathplugin:v1.16.1",
	"registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.13.0",
	"registry.k8s.io/sig-storage/livenessprobe:v2.15.0",
	"registry.k8s.io/sig-storage/csi-attacher:v4.8.0",
	"registry.k8s.io/sig-storage/csi-provisioner:v5.1.0",
	"registry.k8s.io/sig-storage/csi-resizer:v1.13.1",
	"registry.k8s.io/e2e-test-images/busybox:1.36.1-1",
}

// csiImageArchives are csiHostpathImages' docker-archives in the conformance cache (where
// hack/conformance.sh finds them), or a skip naming the script that builds them.
func csiImageArchives(t *testing.T) []string {
	t.Helper()
	cache := os.Getenv("SKIFF_CONFORMANCE_CACHE")
	if cache == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			home, _ := os.UserHomeDir()
			base = filepath.Join(home, ".cache")
		}
		cache = filepath.Join(base, "skiff-conformance")
	}
	var archives, missing []string
	for _, image := range csiHostpathImages {
		archive := filepath.Join(cache, "images", strings.NewReplacer("/", "_", ":", "_", "@", "_").Replace(image)+".tar")
		if _, err := os.Stat(archive); err != nil {
			missing = append(missing, image)
			continue
		}
		archives = append(archives, archive)
	}
	if len(missing) > 0 {
		t.Skipf("the conformance cache %s lacks %s: build them with hack/conformance/build-e2e.sh then "+
			"hack/conformance/build-csi-images.sh %s <skiff binary> (hack/conformance.sh --suite csi does both)",
			cache, strings.Join(missing, ", "), cache)
	}
	return archives
}

// csiNode is a worker whose kubelet root is /var/lib/kubelet as its containers see it, as CSI
// drivers' manifests require (they mount hostPaths under /var/lib/kubelet and publish where the
// kubelet says), in a mount namespace of its own so that it is this node's alone: its own directory
// is bind-mounted there (rshared, for the node plugin's Bidirectional mounts), and so is one at
// /var/lib/csi-hostpath-data, where csi-hostpath keeps its volumes and state (another cluster on
// the machine, the conformance harness's, has its own). The namespace is pinned on a file, as `ip
// netns` pins a network namespace, so that a restarted skiff enters the one its pods' mounts live
// in: a machine's kubelet restarts in the machine's namespace.
type csiNode struct {
	*joinedNode
	// pin is the file the node's mount namespace is bound to.
	pin string
	// kubeletRoot and hostpathData are, on the host, what the node sees at /var/lib/kubelet and
	// /var/lib/csi-hostpath-data.
	kubeletRoot, hostpathData string
}

// csiNodeScript starts "$@" (skiff and its arguments) in the mount namespace pinned at $1, making
// it on the first start: private, with $2 at /var/lib/kubelet (rshared) and $3 at
// /var/lib/csi-hostpath-data. What the host has mounted at /var/lib/kubelet goes first, in there
// only (a mount stacked on it would be judged by the one under it). Every step execs, so the
// process the test started is skiff itself and kill -9 reaches it.
const csiNodeScript = `pin=$1 root=$2 data=$3
shift 3
if mountpoint -q "$pin"; then exec nsenter --mount="$pin" -- "$@"; fi
exec unshare --mount="$pin" --propagation private -- /bin/sh -c '
	while mountpoint -q /var/lib/kubelet; do umount -l /var/lib/kubelet || exit 1; done
	mount --bind "$0" /var/lib/kubelet && mount --make-rshared /var/lib/kubelet &&
	mount --bind "$1" /var/lib/csi-hostpath-data && shift && exec "$@"' "$root" "$data" "$@"
`

// newCSINode prepares (does not start) a worker with its own /var/lib/kubelet.
func newCSINode(t *testing.T, h *netHost, name, server string) *csiNode {
	t.Helper()
	for _, bin := range []string{"unshare", "mountpoint", "mount", "umount"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s not installed", bin)
		}
	}
	w := newJoinedNode(t, h, name, server)
	n := &csiNode{joinedNode: w, kubeletRoot: filepath.Join(w.dataDir, "kubelet-root"), hostpathData: filepath.Join(w.dataDir, "hostpath-data")}
	pinDir := w.dataDir + "-ns"
	n.pin = filepath.Join(pinDir, "mnt")
	for _, dir := range []string{n.kubeletRoot, n.hostpathData, pinDir, "/var/lib/kubelet", "/var/lib/csi-hostpath-data"} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// A namespace can be pinned only on a file of a mount that does not propagate (the host's /tmp
	// is shared): the directory becomes a private mount of itself.
	run(t, "mount", "--bind", pinDir, pinDir)
	t.Cleanup(func() {
		_ = exec.Command("umount", n.pin).Run()
		_ = exec.Command("umount", pinDir).Run()
		_ = os.RemoveAll(pinDir)
	})
	run(t, "mount", "--make-private", pinDir)
	if err := os.WriteFile(n.pin, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(pinDir, "start.sh")
	if err := os.WriteFile(script, []byte(csiNodeScript), 0o700); err != nil {
		t.Fatal(err)
	}
	w.wrap = []string{"/bin/sh", script, n.pin, n.kubeletRoot, n.hostpathData}
	w.extraArgs = append(w.extraArgs, "--kubelet-root-dir", "/var/lib/kubelet")
	return n
}

// mounts are the node's mount points under /var/lib/kubelet (as its mount namespace has them),
// each with its mount ID, which a remount changes.
func (n *csiNode) mounts(t *testing.T) map[string]string {
	t.Helper()
	out, err := exec.Command("nsenter", "--mount="+n.pin, "cat", "/proc/self/mountinfo").CombinedOutput()
	if err != nil {
		t.Fatalf("the node's mounts: %v\n%s", err, out)
	}
	mounts := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], "/var/lib/kubelet/") {
			mounts[f[4]] = f[0]
		}
	}
	return mounts
}

// startCSICluster starts a control plane and one csiNode worker with csi-hostpath installed from
// testdata with kubectl, its images imported from the conformance cache, and waits until the
// driver has registered on the worker (CSINode lists it).
func startCSICluster(t *testing.T) (*cluster, *csiNode) {
	t.Helper()
	archives := csiImageArchives(t)
	n := newTestNet(t)
	c := newJoinCluster(t, n, false)
	token := c.createToken()
	w := newCSINode(t, n.addHost(), "csi-worker", c.ServerURL(n))
	// Cleanups run last first: the workloads and the driver deleted while the worker runs, then
	// the worker stopped, then what a killed worker left behind reaped.
	t.Cleanup(func() { reapKilledWorker(t, w.dataDir) })
	w.start(token)
	t.Cleanup(w.stop)
	t.Cleanup(func() {
		if t.Failed() {
			c.dumpState()
			t.Logf("the worker's log:\n%s", w.log())
		}
		_, _ = c.kubectlErr("delete", "statefulset", "--all", "--timeout=60s")
		_, _ = c.kubectlErr("delete", "pods", "--all", "--grace-period=1", "--timeout=60s")
		_, _ = c.kubectlErr("delete", "pvc", "--all", "--timeout=60s")
	})
	waitNodesReady(t, c, 3*time.Minute, w.name)
	began := time.Now()
	// Seven archives take longer than execOutput's 30 s on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, skiffBinary, append([]string{"images", "import", "--data-dir", w.dataDir}, archives...)...).CombinedOutput(); err != nil {
		t.Fatalf("import the CSI images on %s: %v\n%s", w.name, err, out)
	}
	t.Logf("figure: %d images imported in %s", len(archives), time.Since(began).Round(100*time.Millisecond))
	began = time.Now()
	c.kubectl("apply", "-f", "testdata/csi-hostpath")
	eventually(t, 3*time.Minute, func() error {
		out, err := c.kubectlErr("get", "csinode", w.name, "-o", "jsonpath={.spec.drivers[*].name}")
		if err != nil || !strings.Contains(out, "hostpath.csi.k8s.io") {
			pods, _ := c.kubectlErr("get", "pods", "-o", "wide")
			return fmt.Errorf("CSINode %s drivers %q (%v)\n%s", w.name, out, err, pods)
		}
		return nil
	})
	t.Logf("figure: csi-hostpath applied to registered on the worker in %s", time.Since(began).Round(100*time.Millisecond))
	return c, w
}

// csiStatefulSet is a StorageClass of csi-hostpath (volumes bound where their first pod goes, as the
// driver's volumes live on one node; expansion allowed) and a StatefulSet of replicas pods, each
// with a claim of that class, recording its start in its volume.
func csiStatefulSet(replicas int) string {
	return fmt.Sprintf(`apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: csi-hostpath}
provisioner: hostpath.csi.k8s.io
reclaimPolicy: Delete
volumeBindingMode: WaitForFirstConsumer
allowVolumeExpansion: true
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: %d
  podManagementPolicy: Parallel
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: db
        image: registry.k8s.io/e2e-test-images/busybox:1.36.1-1
        command: [sh, -c, 'test -f /data/first || echo "$HOSTNAME $(cat /proc/sys/kernel/random/uuid)" > /data/first; echo started >> /data/starts; exec sleep 3600']
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      storageClassName: csi-hostpath
      resources: {requests: {storage: 1Mi}}
`, replicas)
}

// podFact is one jsonpath of a pod.
func podFact(t *testing.T, c *cluster, pod, path string) string {
	t.Helper()
	return strings.TrimSpace(c.kubectl("get", "pod", pod, "-o", "jsonpath="+path))
}

// waitPodReady waits for pod (by name) to be Ready, with a UID other than notUID.
func waitPodReady(t *testing.T, c *cluster, pod, notUID string, timeout time.Duration) string {
	t.Helper()
	var uid string
	eventually(t, timeout, func() error {
		out, err := c.kubectlErr("get", "pod", pod, "-o", `jsonpath={.metadata.uid} {.status.conditions[?(@.type=="Ready")].status}`)
		f := strings.Fields(out)
		if err != nil || len(f) != 2 || f[0] == notUID || f[1] != "True" {
			return fmt.Errorf("pod %s: %q %v", pod, out, err)
		}
		uid = f[0]
		return nil
	})
	return uid
}

// csiTarget is where the kubelet publishes a pod's CSI volume (as the node sees it).
func csiTarget(uid, pv string) string {
	return "/var/lib/kubelet/pods/" + uid + "/volumes/kubernetes.io~csi/" + pv + "/mount"
}

// volumeLeftovers names what the node still holds of the volume handle and the pods: mounts of
// CSI volumes under the kubelet root, the pods' directories, the driver's staging directories of
// the volume, and its data on the driver's storage.
func volumeLeftovers(t *testing.T, w *csiNode, handles, uids []string) []string {
	t.Helper()
	var left []string
	for m := range w.mounts(t) {
		if strings.Contains(m, "kubernetes.io~csi") || strings.HasPrefix(m, "/var/lib/kubelet/plugins/kubernetes.io/csi/") {
			left = append(left, "mount "+m)
		}
	}
	for _, uid := range uids {
		if _, err := os.Stat(filepath.Join(w.kubeletRoot, "pods", uid)); !os.IsNotExist(err) {
			left = append(left, "pod directory "+uid)
		}
	}
	staged, _ := filepath.Glob(filepath.Join(w.kubeletRoot, "plugins", "kubernetes.io", "csi", "hostpath.csi.k8s.io", "*"))
	for _, s := range staged {
		left = append(left, "staging directory "+s)
	}
	for _, h := range handles {
		if _, err := os.Stat(filepath.Join(w.hostpathData, h)); !os.IsNotExist(err) {
			left = append(left, "driver data "+h)
		}
	}
	return left
}

// TestCSIHostpathUser is issue 26's user story with a real CSI driver: csi-hostpath installed with
// kubectl from its manifests, a StorageClass, a StatefulSet whose claim template it provisions
// (WaitForFirstConsumer: the scheduler picks the node, the provisioner makes the volume there, the
// attach/detach controller attaches it through a VolumeAttachment, the kubelet stages and
// publishes it); the pod writes, is deleted, comes back and finds its data. csi-hostpath keeps a
// volume on the node that made it (its topology pins the PV there), so the pod comes back on the
// same node: no driver-independent move to another node is possible with it. The claim is then
// expanded (the resizer grows the volume, the kubelet's NodeExpandVolume finishes it and the
// claim's capacity says so). Deleting everything leaves no mount, no VolumeAttachment, no pod
// or staging directory and no data of the volume on the node.
func TestCSIHostpathUser(t *testing.T) {
	c, w := startCSICluster(t)
	c.stdin(csiStatefulSet(1), "apply", "-f", "-")
	began := time.Now()
	uid := waitPodReady(t, c, "db-0", "", 3*time.Minute)
	t.Logf("figure: StatefulSet applied to its pod Ready with a provisioned, attached volume in %s", time.Since(began).Round(100*time.Millisecond))
	pv := c.kubectl("get", "pvc", "data-db-0", "-o", "jsonpath={.spec.volumeName}")
	handle := c.kubectl("get", "pv", pv, "-o", "jsonpath={.spec.csi.volumeHandle}")
	mustContain(t, c.kubectl("get", "volumeattachments", "-o", "jsonpath={range .items[*]}{.spec.source.persistentVolumeName} {.spec.nodeName} {.status.attached}{\"\\n\"}{end}"),
		pv+" "+w.name+" true")
	if _, ok := w.mounts(t)[csiTarget(uid, pv)]; !ok {
		t.Fatalf("%s is not mounted on the node", csiTarget(uid, pv))
	}
	first := c.kubectl("exec", "db-0", "--", "cat", "/data/first")
	if data, err := os.ReadFile(filepath.Join(w.hostpathData, handle, "first")); err != nil || string(data) != first {
		t.Fatalf("the driver's storage has %q (%v), the pod wrote %q", data, err, first)
	}

	c.kubectl("delete", "pod", "db-0", "--timeout=60s")
	newUID := waitPodReady(t, c, "db-0", uid, 3*time.Minute)
	if node := podFact(t, c, "db-0", "{.spec.nodeName}"); node != w.name {
		t.Fatalf("db-0 came back on %q", node)
	}
	mustContain(t, c.kubectl("exec", "db-0", "--", "cat", "/data/first"), first)
	if starts := strings.Count(c.kubectl("exec", "db-0", "--", "cat", "/data/starts"), "started"); starts != 2 {
		t.Fatalf("the volume saw %d starts, want 2", starts)
	}
	// The volume stays staged for the new pod; the old pod's publication and directory are gone.
	for m := range w.mounts(t) {
		if strings.Contains(m, "/pods/"+uid+"/") {
			t.Errorf("the deleted pod's %s is still mounted", m)
		}
	}
	if _, err := os.Stat(filepath.Join(w.kubeletRoot, "pods", uid)); !os.IsNotExist(err) {
		t.Errorf("the deleted pod's directory is left (%v)", err)
	}
	if t.Failed() {
		t.Fatalf("the worker's CSI log:\n%s", grepLines(w.logAll(), "csi", "CSI", "volume"))
	}

	c.kubectl("patch", "pvc", "data-db-0", "-p", `{"spec":{"resources":{"requests":{"storage":"2Mi"}}}}`)
	began = time.Now()
	eventually(t, 2*time.Minute, func() error {
		out := c.kubectl("get", "pvc", "data-db-0", "-o", "jsonpath={.status.capacity.storage} {.status.conditions[*].type}")
		if strings.TrimSpace(out) != "2Mi" {
			pvSize, _ := c.kubectlErr("get", "pv", pv, "-o", "jsonpath={.spec.capacity.storage}")
			return fmt.Errorf("claim capacity and conditions %q, volume %s", out, pvSize)
		}
		return nil
	})
	t.Logf("figure: claim expanded (controller and node) in %s", time.Since(began).Round(100*time.Millisecond))
	mustContain(t, c.kubectl("exec", "db-0", "--", "cat", "/data/first"), first)

	c.kubectl("delete", "statefulset", "db", "--timeout=60s")
	eventually(t, 2*time.Minute, func() error {
		if out, _ := c.kubectlErr("get", "pods", "-l", "app=db", "-o", "name"); strings.TrimSpace(out) != "" {
			return fmt.Errorf("pods left: %s", out)
		}
		return nil
	})
	c.kubectl("delete", "pvc", "data-db-0", "--timeout=60s")
	began = time.Now()
	eventually(t, 2*time.Minute, func() error {
		out := c.kubectl("get", "pv,volumeattachments", "-o", "name")
		if strings.TrimSpace(out) != "" {
			vas, _ := c.kubectlErr("get", "volumeattachments", "-o", "yaml")
			return fmt.Errorf("left in the API: %s\n%s\nthe control plane on attachments:\n%s", out, vas,
				grepLines(c.logAll(), "attachdetach", "volumeattachment", "VolumeAttachment"))
		}
		if left := volumeLeftovers(t, w, []string{handle}, []string{uid, newUID}); len(left) > 0 {
			return fmt.Errorf("left on the node: %v", left)
		}
		return nil
	})
	t.Logf("figure: claim deleted to no volume, attachment, mount or directory left in %s", time.Since(began).Round(100*time.Millisecond))

	c.kubectl("delete", "-f", "testdata/csi-hostpath", "--timeout=60s")
	eventually(t, 2*time.Minute, func() error {
		if out, _ := c.kubectlErr("get", "pods", "-o", "name"); strings.TrimSpace(out) != "" {
			return fmt.Errorf("pods left: %s", out)
		}
		if len(w.mounts(t)) > 0 {
			return fmt.Errorf("mounts left under the kubelet root: %v", w.mounts(t))
		}
		return nil
	})
}

// grepLines are the lines of text holding any of words.
func grepLines(text string, words ...string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		for _, w := range words {
			if strings.Contains(l, w) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// logAll is the node's whole log.
func (w *joinedNode) logAll() string {
	data, _ := os.ReadFile(w.logPath())
	return string(data)
}

// TestCSIHostpathKubeletKill: kill -9 of a worker's skiff (its kubelet; its containerd goes with
// it, the pods' shims and containers stay) while csi-hostpath volumes are mounted, and a restart.
// While the node is down one pod of the StatefulSet is scaled away and force-deleted, so its object
// is gone when the kubelet comes back. After the restart the pod still there keeps its volume
// (the same mount, not remounted; its data readable; its container not restarted), and the
// deleted pod's volume is unpublished and unstaged from the kubelet's records on disk (no mount
// and no directory left), after which the attach/detach controller detaches it.
func TestCSIHostpathKubeletKill(t *testing.T) {
	c, w := startCSICluster(t)
	c.stdin(csiStatefulSet(2), "apply", "-f", "-")
	uid0 := waitPodReady(t, c, "db-0", "", 3*time.Minute)
	uid1 := waitPodReady(t, c, "db-1", "", 3*time.Minute)
	pv0 := c.kubectl("get", "pvc", "data-db-0", "-o", "jsonpath={.spec.volumeName}")
	pv1 := c.kubectl("get", "pvc", "data-db-1", "-o", "jsonpath={.spec.volumeName}")
	handle1 := c.kubectl("get", "pv", pv1, "-o", "jsonpath={.spec.csi.volumeHandle}")
	container0 := podFact(t, c, "db-0", "{.status.containerStatuses[0].containerID}")
	first0 := c.kubectl("exec", "db-0", "--", "cat", "/data/first")
	before := w.mounts(t)
	mount0, mount1 := before[csiTarget(uid0, pv0)], before[csiTarget(uid1, pv1)]
	if mount0 == "" || mount1 == "" {
		t.Fatalf("the pods' volumes are not mounted: %v", before)
	}
	staging1 := "/var/lib/kubelet/plugins/kubernetes.io/csi/hostpath.csi.k8s.io/" + fmt.Sprintf("%x", sha256.Sum256([]byte(handle1))) + "/globalmount"
	// csi-hostpath stages without mounting (it publishes from its data directory): the kubelet's
	// staging record says the volume is staged.
	stagingRecord := filepath.Join(w.kubeletRoot, strings.TrimPrefix(filepath.Dir(staging1), "/var/lib/kubelet/"), "vol_data.json")
	if _, err := os.Stat(stagingRecord); err != nil {
		t.Fatalf("%s is not staged: %v", pv1, err)
	}

	_ = w.cmd.Process.Kill()
	<-w.done
	w.logFile.Close()
	w.cmd = nil
	c.kubectl("scale", "statefulset", "db", "--replicas=1")
	c.kubectl("delete", "pod", "db-1", "--force", "--grace-period=0")
	down := time.Now()
	w.start("")
	waitNodesReady(t, c, 3*time.Minute, w.name)

	eventually(t, 2*time.Minute, func() error {
		mounts := w.mounts(t)
		for m := range mounts {
			if strings.Contains(m, "/pods/"+uid1+"/") || m == staging1 {
				return fmt.Errorf("the deleted pod's volume is still mounted at %s", m)
			}
		}
		if _, err := os.Stat(filepath.Join(w.kubeletRoot, "pods", uid1)); !os.IsNotExist(err) {
			return fmt.Errorf("the deleted pod's directory is left (%v)", err)
		}
		if _, err := os.Stat(filepath.Join(w.kubeletRoot, strings.TrimPrefix(filepath.Dir(staging1), "/var/lib/kubelet/"))); !os.IsNotExist(err) {
			return fmt.Errorf("the deleted pod's volume's staging directory is left (%v)", err)
		}
		return nil
	})
	t.Logf("figure: the deleted pod's volume unpublished and unstaged %s after the restart began", time.Since(down).Round(100*time.Millisecond))
	eventually(t, 2*time.Minute, func() error {
		out := c.kubectl("get", "volumeattachments", "-o", "jsonpath={range .items[*]}{.spec.source.persistentVolumeName}{\"\\n\"}{end}")
		if strings.Contains(out, pv1) {
			return fmt.Errorf("%s is still attached: %s", pv1, out)
		}
		return nil
	})

	if uid := waitPodReady(t, c, "db-0", "", time.Minute); uid != uid0 {
		t.Fatalf("db-0 was replaced (%s, was %s)", uid, uid0)
	}
	if got := podFact(t, c, "db-0", "{.status.containerStatuses[0].containerID} {.status.containerStatuses[0].restartCount}"); got != container0+" 0" {
		t.Fatalf("db-0's container is %q, was %q with no restart", got, container0)
	}
	if got := w.mounts(t)[csiTarget(uid0, pv0)]; got != mount0 {
		t.Fatalf("db-0's volume mount is %q, was mount %s", got, mount0)
	}
	mustContain(t, c.kubectl("exec", "db-0", "--", "cat", "/data/first"), first0)
	mustContain(t, c.kubectl("get", "volumeattachments", "-o", "jsonpath={range .items[*]}{.spec.source.persistentVolumeName} {.status.attached}{\"\\n\"}{end}"), pv0+" true")
}
