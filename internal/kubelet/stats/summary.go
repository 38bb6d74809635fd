package stats

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// CRI labels the kubelet puts on every sandbox and container it creates.
const (
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelContainerName = "io.kubernetes.container.name"
)

// NodeSample is the node's own view of its usage at one instant (read from /proc and statfs by
// the caller).
type NodeSample struct {
	Time time.Time
	// CPUNanoSeconds is the cumulative busy CPU time of all CPUs.
	CPUNanoSeconds uint64
	Memory         Meminfo
	// Fs is the filesystem of the kubelet's data directory (nil: unknown).
	Fs *FsInfo
	// Interfaces are the node's network interfaces (loopback excluded).
	Interfaces []Interface
}

// FsInfo is a filesystem's capacity and use, in bytes and inodes.
type FsInfo struct {
	Capacity, Available, Used uint64
	Inodes, InodesFree        uint64
}

// Volume is one pod volume's usage.
type Volume struct {
	Name string
	// Used is the bytes under the volume's directory; Fs is the filesystem it lives on.
	Used uint64
	Fs   *FsInfo
	// PVC names the claim the volume comes from, if any.
	PVC *statsv1alpha1.PVCReference
}

// Inputs is everything a summary is built from.
type Inputs struct {
	NodeName string
	// NodeStartTime is when the node (its kernel) booted.
	NodeStartTime time.Time
	Node          NodeSample
	// PrevNode is the previous sample, for the node's CPU rate (nil: no rate yet).
	PrevNode *NodeSample
	// Pods are the pods bound to the node that the kubelet runs.
	Pods []*corev1.Pod
	// Sandboxes and Containers are the runtime's lists (for start times and which are running).
	Sandboxes  []*runtimeapi.PodSandbox
	Containers []*runtimeapi.Container
	// ContainerStats and SandboxStats are the runtime's usage; SandboxStats may be empty (a runtime
	// without ListPodSandboxStats), then pods' CPU and memory are the sums of their containers'.
	ContainerStats []*runtimeapi.ContainerStats
	SandboxStats   []*runtimeapi.PodSandboxStats
	// Volumes are the pods' volume usage by pod UID (may be nil).
	Volumes map[string][]Volume
	// OnlyCPUAndMemory leaves out filesystems, networks and volumes (only_cpu_and_memory=true).
	OnlyCPUAndMemory bool
}

// Summary builds the Summary API's answer. Pods are those of in.Pods with a ready sandbox, in
// namespace/name order; each lists its running containers (the latest attempt of each name) in
// name order.
func Summary(in Inputs) statsv1alpha1.Summary {
	out := statsv1alpha1.Summary{Node: nodeStats(in), Pods: []statsv1alpha1.PodStats{}}

	sandboxes := map[string]*runtimeapi.PodSandbox{} // by pod UID: the latest ready sandbox
	for _, sb := range in.Sandboxes {
		uid := sb.GetMetadata().GetUid()
		if sb.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
			continue
		}
		if cur, ok := sandboxes[uid]; !ok || sb.GetCreatedAt() > cur.GetCreatedAt() {
			sandboxes[uid] = sb
		}
	}
	running := map[string]*runtimeapi.Container{} // by container ID
	latest := map[string]*runtimeapi.Container{}  // by "<pod uid>/<container name>"
	for _, c := range in.Containers {
		if c.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		sb, ok := sandboxes[c.GetLabels()[LabelPodUID]]
		if !ok || c.GetPodSandboxId() != sb.GetId() {
			continue
		}
		key := c.GetLabels()[LabelPodUID] + "/" + c.GetMetadata().GetName()
		if cur, ok := latest[key]; !ok || c.GetCreatedAt() > cur.GetCreatedAt() {
			latest[key] = c
		}
	}
	for _, c := range latest {
		running[c.GetId()] = c
	}
	containerStats := map[string][]statsv1alpha1.ContainerStats{} // by pod UID
	for _, cs := range in.ContainerStats {
		c, ok := running[cs.GetAttributes().GetId()]
		if !ok {
			continue
		}
		uid := c.GetLabels()[LabelPodUID]
		containerStats[uid] = append(containerStats[uid], containerStatsOf(c, cs, in.OnlyCPUAndMemory))
	}
	sandboxStats := map[string]*runtimeapi.PodSandboxStats{}
	for _, s := range in.SandboxStats {
		sandboxStats[s.GetAttributes().GetMetadata().GetUid()] = s
	}

	pods := append([]*corev1.Pod(nil), in.Pods...)
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
	for _, pod := range pods {
		uid := string(pod.UID)
		sb, ok := sandboxes[uid]
		if !ok {
			continue
		}
		containers := containerStats[uid]
		sort.Slice(containers, func(i, j int) bool { return containers[i].Name < containers[j].Name })
		if containers == nil {
			containers = []statsv1alpha1.ContainerStats{}
		}
		ps := statsv1alpha1.PodStats{
			PodRef:     statsv1alpha1.PodReference{Name: pod.Name, Namespace: pod.Namespace, UID: uid},
			StartTime:  metav1.NewTime(time.Unix(0, sb.GetCreatedAt())),
			Containers: containers,
		}
		if pod.Status.StartTime != nil {
			ps.StartTime = *pod.Status.StartTime
		}
		if s := sandboxStats[uid]; s != nil && s.GetLinux() != nil {
			ps.CPU = cpuStats(s.GetLinux().GetCpu())
			ps.Memory = memoryStats(s.GetLinux().GetMemory())
			if !in.OnlyCPUAndMemory {
				ps.Network = networkStats(s.GetLinux().GetNetwork())
			}
		}
		if ps.CPU == nil {
			ps.CPU = sumCPU(containers)
		}
		if ps.Memory == nil {
			ps.Memory = sumMemory(containers)
		}
		if !in.OnlyCPUAndMemory {
			ps.VolumeStats = volumeStats(in.Volumes[uid], in.Node.Time)
			ps.EphemeralStorage = ephemeralStorage(containers, ps.VolumeStats, in.Node.Time)
		}
		out.Pods = append(out.Pods, ps)
	}
	return out
}

func nodeStats(in Inputs) statsv1alpha1.NodeStats {
	n := in.Node
	t := metav1.NewTime(n.Time)
	cpu := &statsv1alpha1.CPUStats{Time: t, UsageCoreNanoSeconds: ptr(n.CPUNanoSeconds)}
	if p := in.PrevNode; p != nil && n.Time.After(p.Time) && n.CPUNanoSeconds >= p.CPUNanoSeconds {
		cpu.UsageNanoCores = ptr(NanoCores(p.CPUNanoSeconds, n.CPUNanoSeconds, n.Time.Sub(p.Time)))
	}
	m := n.Memory
	usage := m.Total - m.Free
	workingSet := m.Total - m.Available
	node := statsv1alpha1.NodeStats{
		NodeName:  in.NodeName,
		StartTime: metav1.NewTime(in.NodeStartTime),
		CPU:       cpu,
		Memory: &statsv1alpha1.MemoryStats{
			Time: t, AvailableBytes: ptr(m.Available), UsageBytes: ptr(usage), WorkingSetBytes: ptr(workingSet), RSSBytes: ptr(m.Anon),
		},
	}
	if in.OnlyCPUAndMemory {
		return node
	}
	if n.Fs != nil {
		node.Fs = fsStats(n.Fs, t)
		node.Runtime = &statsv1alpha1.RuntimeStats{ImageFs: fsStats(n.Fs, t), ContainerFs: fsStats(n.Fs, t)}
	}
	if len(n.Interfaces) > 0 {
		node.Network = &statsv1alpha1.NetworkStats{Time: t}
		for i, iface := range n.Interfaces {
			s := statsv1alpha1.InterfaceStats{Name: iface.Name, RxBytes: ptr(iface.RxBytes), RxErrors: ptr(iface.RxErrors), TxBytes: ptr(iface.TxBytes), TxErrors: ptr(iface.TxErrors)}
			if i == 0 || iface.Name == "eth0" {
				node.Network.InterfaceStats = s
			}
			node.Network.Interfaces = append(node.Network.Interfaces, s)
		}
	}
	return node
}

// NanoCores is the average CPU use between two cumulative readings, in billionths of a core.
func NanoCores(before, after uint64, elapsed time.Duration) uint64 {
	if elapsed <= 0 || after < before {
		return 0
	}
	return uint64(float64(after-before) / elapsed.Seconds())
}

func containerStatsOf(c *runtimeapi.Container, cs *runtimeapi.ContainerStats, onlyCPUAndMemory bool) statsv1alpha1.ContainerStats {
	out := statsv1alpha1.ContainerStats{
		Name:      c.GetMetadata().GetName(),
		StartTime: metav1.NewTime(time.Unix(0, c.GetCreatedAt())),
		CPU:       cpuStats(cs.GetCpu()),
		Memory:    memoryStats(cs.GetMemory()),
	}
	if wl := cs.GetWritableLayer(); wl != nil && !onlyCPUAndMemory {
		out.Rootfs = &statsv1alpha1.FsStats{Time: metav1.NewTime(time.Unix(0, wl.GetTimestamp())), UsedBytes: value(wl.GetUsedBytes()), InodesUsed: value(wl.GetInodesUsed())}
	}
	return out
}

func cpuStats(u *runtimeapi.CpuUsage) *statsv1alpha1.CPUStats {
	if u == nil || u.GetUsageCoreNanoSeconds() == nil {
		return nil
	}
	return &statsv1alpha1.CPUStats{
		Time: metav1.NewTime(time.Unix(0, u.GetTimestamp())), UsageCoreNanoSeconds: value(u.GetUsageCoreNanoSeconds()), UsageNanoCores: value(u.GetUsageNanoCores()),
	}
}

func memoryStats(u *runtimeapi.MemoryUsage) *statsv1alpha1.MemoryStats {
	if u == nil || u.GetWorkingSetBytes() == nil {
		return nil
	}
	return &statsv1alpha1.MemoryStats{
		Time: metav1.NewTime(time.Unix(0, u.GetTimestamp())), WorkingSetBytes: value(u.GetWorkingSetBytes()), AvailableBytes: value(u.GetAvailableBytes()),
		UsageBytes: value(u.GetUsageBytes()), RSSBytes: value(u.GetRssBytes()), PageFaults: value(u.GetPageFaults()), MajorPageFaults: value(u.GetMajorPageFaults()),
	}
}

func networkStats(u *runtimeapi.NetworkUsage) *statsv1alpha1.NetworkStats {
	if u == nil {
		return nil
	}
	iface := func(i *runtimeapi.NetworkInterfaceUsage) statsv1alpha1.InterfaceStats {
		return statsv1alpha1.InterfaceStats{Name: i.GetName(), RxBytes: value(i.GetRxBytes()), RxErrors: value(i.GetRxErrors()), TxBytes: value(i.GetTxBytes()), TxErrors: value(i.GetTxErrors())}
	}
	out := &statsv1alpha1.NetworkStats{Time: metav1.NewTime(time.Unix(0, u.GetTimestamp()))}
	if d := u.GetDefaultInterface(); d != nil {
		out.InterfaceStats = iface(d)
	}
	for _, i := range u.GetInterfaces() {
		out.Interfaces = append(out.Interfaces, iface(i))
	}
	return out
}

// sumCPU adds up the containers' CPU (nil when none reports it), stamped with the latest time.
func sumCPU(containers []statsv1alpha1.ContainerStats) *statsv1alpha1.CPUStats {
	var out *statsv1alpha1.CPUStats
	for _, c := range containers {
		if c.CPU == nil || c.CPU.UsageCoreNanoSeconds == nil {
			continue
		}
		if out == nil {
			out = &statsv1alpha1.CPUStats{UsageCoreNanoSeconds: ptr[uint64](0)}
		}
		*out.UsageCoreNanoSeconds += *c.CPU.UsageCoreNanoSeconds
		if c.CPU.UsageNanoCores != nil {
			if out.UsageNanoCores == nil {
				out.UsageNanoCores = ptr[uint64](0)
			}
			*out.UsageNanoCores += *c.CPU.UsageNanoCores
		}
		if c.CPU.Time.After(out.Time.Time) {
			out.Time = c.CPU.Time
		}
	}
	return out
}

// sumMemory adds up the containers' memory (nil when none reports it).
func sumMemory(containers []statsv1alpha1.ContainerStats) *statsv1alpha1.MemoryStats {
	var out *statsv1alpha1.MemoryStats
	add := func(dst **uint64, v *uint64) {
		if v == nil {
			return
		}
		if *dst == nil {
			*dst = ptr[uint64](0)
		}
		**dst += *v
	}
	for _, c := range containers {
		if c.Memory == nil || c.Memory.WorkingSetBytes == nil {
			continue
		}
		if out == nil {
			out = &statsv1alpha1.MemoryStats{}
		}
		add(&out.WorkingSetBytes, c.Memory.WorkingSetBytes)
		add(&out.UsageBytes, c.Memory.UsageBytes)
		add(&out.RSSBytes, c.Memory.RSSBytes)
		add(&out.PageFaults, c.Memory.PageFaults)
		add(&out.MajorPageFaults, c.Memory.MajorPageFaults)
		if c.Memory.Time.After(out.Time.Time) {
			out.Time = c.Memory.Time
		}
	}
	return out
}

func volumeStats(vols []Volume, now time.Time) []statsv1alpha1.VolumeStats {
	var out []statsv1alpha1.VolumeStats
	for _, v := range vols {
		fs := statsv1alpha1.FsStats{Time: metav1.NewTime(now), UsedBytes: ptr(v.Used)}
		if v.Fs != nil {
			fs.CapacityBytes, fs.AvailableBytes = ptr(v.Fs.Capacity), ptr(v.Fs.Available)
			fs.Inodes, fs.InodesFree = ptr(v.Fs.Inodes), ptr(v.Fs.InodesFree)
		}
		out = append(out, statsv1alpha1.VolumeStats{FsStats: fs, Name: v.Name, PVCRef: v.PVC})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ephemeralStorage is the pod's use of node-local storage: its containers' writable layers and
// its volumes that are not claims.
func ephemeralStorage(containers []statsv1alpha1.ContainerStats, vols []statsv1alpha1.VolumeStats, now time.Time) *statsv1alpha1.FsStats {
	var used uint64
	for _, c := range containers {
		if c.Rootfs != nil && c.Rootfs.UsedBytes != nil {
			used += *c.Rootfs.UsedBytes
		}
	}
	for _, v := range vols {
		if v.PVCRef == nil && v.UsedBytes != nil {
			used += *v.UsedBytes
		}
	}
	return &statsv1alpha1.FsStats{Time: metav1.NewTime(now), UsedBytes: ptr(used)}
}

func fsStats(fs *FsInfo, t metav1.Time) *statsv1alpha1.FsStats {
	return &statsv1alpha1.FsStats{
		Time: t, CapacityBytes: ptr(fs.Capacity), AvailableBytes: ptr(fs.Available), UsedBytes: ptr(fs.Used),
		Inodes: ptr(fs.Inodes), InodesFree: ptr(fs.InodesFree), InodesUsed: ptr(fs.Inodes - fs.InodesFree),
	}
}

func value(v *runtimeapi.UInt64Value) *uint64 {
	if v == nil {
		return nil
	}
	return ptr(v.GetValue())
}

func ptr[T any](v T) *T { return &v }
