package kubelet

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiff-sh/skiff/internal/kubelet/cri"
)

// Reason and messages of a pod evicted for its use of local storage, in the words of Kubernetes'
// eviction manager (localStorageEviction), so clients and e2e specs that match them keep working.
const (
	reasonEvicted                       = "Evicted"
	emptyDirMessageFmt                  = "Usage of EmptyDir volume %q exceeds the limit %q. "
	podEphemeralStorageMessageFmt       = "Pod ephemeral local storage usage exceeds the total limit of containers %s. "
	containerEphemeralStorageMessageFmt = "Container %s exceeded its local ephemeral storage limit %q. "

	// maxUsageWalkEntries bounds the files one measurement of a directory looks at: a volume of
	// millions of files costs a housekeeping tick no more than this. What it read by then is a
	// lower bound of the usage, enough to see a limit that is exceeded already.
	maxUsageWalkEntries = 100_000
	// systemCriticalPriority is the priority from which Kubernetes' kubelet never evicts a pod
	// (scheduling.SystemCriticalPriority).
	systemCriticalPriority = 2_000_000_000
)

// podStorageUsage is what one pod uses of the node's local storage, measured on a housekeeping
// tick.
type podStorageUsage struct {
	// containers maps a container's name to the bytes of its writable layer plus its log.
	containers map[string]uint64
	// emptyDirs maps an emptyDir volume's name to the bytes under it.
	emptyDirs map[string]uint64
}

// storageEviction is a pod to evict and the message its status and event carry.
type storageEviction struct {
	pod     *corev1.Pod
	message string
}

// needsStorageCheck reports whether a pod has a local-storage limit to hold it to: an
// ephemeral-storage limit on a container or an emptyDir sizeLimit. Only such pods are measured,
// so a node of pods without limits walks nothing. Pods that finished or are being deleted, and
// static or system-critical pods (upstream never evicts those: they would not be admitted
// again), are left alone.
func needsStorageCheck(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if _, static := pod.Annotations[annotationConfigMirror]; static || (pod.Spec.Priority != nil && *pod.Spec.Priority >= systemCriticalPriority) {
		return false
	}
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil && v.EmptyDir.SizeLimit.Sign() > 0 {
			return true
		}
	}
	_, limited := podEphemeralStorageLimit(pod)
	return limited
}

// podEphemeralStorageLimit is the pod's total ephemeral-storage limit as upstream's PodLimits
// adds it up: the regular containers' and sidecars' limits summed, or a non-sidecar init
// container's (with the sidecars started before it) where that is larger; found only when some
// container states one.
func podEphemeralStorageLimit(pod *corev1.Pod) (resource.Quantity, bool) {
	var total, sidecars, initMax resource.Quantity
	found := false
	limitOf := func(c *corev1.Container) (resource.Quantity, bool) {
		q, ok := c.Resources.Limits[corev1.ResourceEphemeralStorage]
		found = found || ok
		return q, ok
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		q, ok := limitOf(c)
		if isSidecar(c) {
			if ok {
				sidecars.Add(q)
			}
			continue
		}
		if ok {
			withSidecars := q.DeepCopy()
			withSidecars.Add(sidecars)
			if withSidecars.Cmp(initMax) > 0 {
				initMax = withSidecars
			}
		}
	}
	for i := range pod.Spec.Containers {
		if q, ok := limitOf(&pod.Spec.Containers[i]); ok {
			total.Add(q)
		}
	}
	total.Add(sidecars)
	if initMax.Cmp(total) > 0 {
		total = initMax
	}
	return total, found
}

// localStorageEvictions decides which pods to evict for their local storage, as upstream's
// localStorageEviction does, each for the first limit it exceeds: an emptyDir's sizeLimit, then
// the pod's total (containers' writable layers and logs plus its emptyDirs on disk) against the
// sum of its containers' ephemeral-storage limits, then one container's writable layer and log
// against its own limit. A pod without measured usage is skipped.
func localStorageEvictions(pods []*corev1.Pod, usage map[types.UID]podStorageUsage) []storageEviction {
	var out []storageEviction
	for _, pod := range pods {
		u, ok := usage[pod.UID]
		if !ok || !needsStorageCheck(pod) {
			continue
		}
		if message := storageLimitExceeded(pod, u); message != "" {
			out = append(out, storageEviction{pod: pod, message: message})
		}
	}
	return out
}

// storageLimitExceeded is the eviction message of the first limit the pod exceeds, "" if none.
func storageLimitExceeded(pod *corev1.Pod, u podStorageUsage) string {
	exceeds := func(used uint64, limit resource.Quantity) bool {
		return limit.Sign() > 0 && resource.NewQuantity(int64(used), resource.BinarySI).Cmp(limit) > 0 //nolint:gosec // bytes on a disk fit an int64.
	}
	var total uint64
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir == nil {
			continue
		}
		used, measured := u.emptyDirs[v.Name]
		if measured && v.EmptyDir.SizeLimit != nil && exceeds(used, *v.EmptyDir.SizeLimit) {
			return fmt.Sprintf(emptyDirMessageFmt, v.Name, v.EmptyDir.SizeLimit.String())
		}
		// A memory-backed emptyDir counts against the pod's memory, not its local storage.
		if v.EmptyDir.Medium != corev1.StorageMediumMemory {
			total += used
		}
	}
	for _, used := range u.containers {
		total += used
	}
	if limit, ok := podEphemeralStorageLimit(pod); ok && exceeds(total, limit) {
		return fmt.Sprintf(podEphemeralStorageMessageFmt, limit.String())
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		limit, ok := c.Resources.Limits[corev1.ResourceEphemeralStorage]
		if used, measured := u.containers[c.Name]; ok && measured && exceeds(used, limit) {
			return fmt.Sprintf(containerEphemeralStorageMessageFmt, c.Name, limit.String())
		}
	}
	return ""
}

// evictForLocalStorage measures the local storage of the pods that have a limit on it and
// evicts those over it (localStorageEvictions): a Warning event, then the pod's worker kills
// its containers and writes phase Failed, reason Evicted and the message (syncPod).
func (k *Kubelet) evictForLocalStorage(ctx context.Context) {
	var candidates []*corev1.Pod
	for _, pod := range k.livePods() {
		if needsStorageCheck(pod) && !k.isEvicted(pod.UID) {
			candidates = append(candidates, pod)
		}
	}
	if len(candidates) == 0 {
		return
	}
	writable := k.writableLayers(ctx)
	mountinfo, _ := os.ReadFile("/proc/self/mountinfo")
	usage := map[types.UID]podStorageUsage{}
	for _, pod := range candidates {
		state, err := runtimeState(ctx, k.runtime, pod.UID)
		if err != nil {
			k.log.Warn("measure local storage", "pod", pod.Namespace+"/"+pod.Name, "err", err)
			continue
		}
		usage[pod.UID] = k.measurePodStorage(pod, state, writable, mountinfo)
	}
	for _, e := range localStorageEvictions(candidates, usage) {
		k.mu.Lock()
		k.evicted[e.pod.UID] = e.message
		k.mu.Unlock()
		k.log.Info("evicting pod for its local storage", "pod", e.pod.Namespace+"/"+e.pod.Name, "message", e.message)
		k.recorder.Event(e.pod, corev1.EventTypeWarning, reasonEvicted, e.message)
		k.enqueue(e.pod.UID)
	}
}

// isEvicted reports whether the pod was chosen for eviction; evictionOf gives the message.
func (k *Kubelet) isEvicted(uid types.UID) bool {
	_, ok := k.evictionOf(uid)
	return ok
}

func (k *Kubelet) evictionOf(uid types.UID) (string, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	message, ok := k.evicted[uid]
	return message, ok
}

// writableLayers maps a container's ID to the bytes of its writable layer where the runtime
// reports it (containerd's CRI does, from the snapshotter's usage it refreshes every 10 s).
func (k *Kubelet) writableLayers(ctx context.Context) map[string]uint64 {
	out := map[string]uint64{}
	statsService, ok := k.runtime.(cri.StatsService)
	if !ok {
		return out
	}
	list, err := statsService.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{LabelSelector: map[string]string{labelManagedBy: managedByKubelet}})
	if err != nil {
		k.log.Debug("container stats for local storage", "err", err)
		return out
	}
	for _, s := range list {
		if used := s.GetWritableLayer().GetUsedBytes(); used != nil {
			out[s.GetAttributes().GetId()] = used.GetValue()
		}
	}
	return out
}

// measurePodStorage measures one pod: each container's newest instance (writable layer, from
// the runtime or else by walking its overlay upper directory, plus its log file) and its
// emptyDirs (each walked, bounded by maxUsageWalkEntries).
func (k *Kubelet) measurePodStorage(pod *corev1.Pod, state *podRuntimeState, writable map[string]uint64, mountinfo []byte) podStorageUsage {
	u := podStorageUsage{containers: map[string]uint64{}, emptyDirs: map[string]uint64{}}
	var names []string
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			names = append(names, list[i].Name)
		}
	}
	for _, name := range names {
		cur := state.latest(name, "")
		if cur == nil {
			continue
		}
		used, ok := writable[cur.Id]
		if !ok {
			if upper := overlayUpperDir(mountinfo, cur.Id); upper != "" {
				used, _ = boundedDiskUsage(upper, maxUsageWalkEntries)
			}
		}
		if cur.LogPath != "" {
			if st, err := os.Stat(cur.LogPath); err == nil {
				used += uint64(st.Size()) //nolint:gosec // a file's size is never negative.
			}
		}
		u.containers[name] = used
	}
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir != nil {
			u.emptyDirs[v.Name], _ = boundedDiskUsage(filepath.Join(k.podDataDir(pod.UID), "volumes", "empty-dir", v.Name), maxUsageWalkEntries)
		}
	}
	return u
}

// boundedDiskUsage adds up the allocated size of the files under dir, as du does, looking at no
// more than maxEntries of them; complete says whether it saw them all.
func boundedDiskUsage(dir string, maxEntries int) (total uint64, complete bool) {
	seen := 0
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil //nolint:nilerr // a file that went away while walking counts as nothing.
		}
		if seen++; seen > maxEntries {
			return fs.SkipAll
		}
		info, err := d.Info()
		if err != nil {
			return nil //nolint:nilerr // as above.
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			total += uint64(st.Blocks) * 512 //nolint:gosec // block counts are never negative.
		}
		return nil
	})
	return total, err == nil && seen <= maxEntries
}

// overlayUpperDir finds, in a mountinfo file, the upper directory of the overlay mounted as the
// root file system of the container id (containerd mounts it at
// .../io.containerd.runtime.v2.task/<namespace>/<id>/rootfs): the container's writable layer,
// for a runtime that does not report its size. "" if there is none.
func overlayUpperDir(mountinfo []byte, id string) string {
	suffix := "/" + id + "/rootfs"
	scanner := bufio.NewScanner(bytes.NewReader(mountinfo))
	scanner.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for scanner.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		fields := strings.Fields(scanner.Text())
		if len(fields) < 5 || !strings.HasSuffix(fields[4], suffix) {
			continue
		}
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || len(fields) < sep+4 || fields[sep+1] != "overlay" {
			continue
		}
		for _, opt := range strings.Split(fields[sep+3], ",") {
			if upper, ok := strings.CutPrefix(opt, "upperdir="); ok {
				return upper
			}
		}
	}
	return ""
}
