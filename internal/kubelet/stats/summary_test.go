package stats

import (
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func pod(ns, name, uid string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}}
}

func sandbox(id, uid string, state runtimeapi.PodSandboxState, created time.Time) *runtimeapi.PodSandbox {
	return &runtimeapi.PodSandbox{Id: id, State: state, CreatedAt: created.UnixNano(), Metadata: &runtimeapi.PodSandboxMetadata{Uid: uid}}
}

func ctr(id, sandboxID, uid, name string, state runtimeapi.ContainerState, created time.Time) *runtimeapi.Container {
	return &runtimeapi.Container{
		Id: id, PodSandboxId: sandboxID, State: state, CreatedAt: created.UnixNano(),
		Metadata: &runtimeapi.ContainerMetadata{Name: name}, Labels: map[string]string{LabelPodUID: uid, LabelContainerName: name},
	}
}

func cstats(id string, cpuNanos, nanoCores, workingSet uint64, at time.Time) *runtimeapi.ContainerStats {
	return &runtimeapi.ContainerStats{
		Attributes: &runtimeapi.ContainerAttributes{Id: id},
		Cpu: &runtimeapi.CpuUsage{Timestamp: at.UnixNano(), UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: cpuNanos},
			UsageNanoCores: &runtimeapi.UInt64Value{Value: nanoCores}},
		Memory:        &runtimeapi.MemoryUsage{Timestamp: at.UnixNano(), WorkingSetBytes: &runtimeapi.UInt64Value{Value: workingSet}},
		WritableLayer: &runtimeapi.FilesystemUsage{Timestamp: at.UnixNano(), UsedBytes: &runtimeapi.UInt64Value{Value: 4096}},
	}
}

func TestSummary(t *testing.T) {
	node := NodeSample{Time: t0.Add(10 * time.Second), CPUNanoSeconds: 30e9, Memory: Meminfo{Total: 8 << 30, Free: 2 << 30, Available: 5 << 30, Anon: 1 << 30}}
	prev := &NodeSample{Time: t0, CPUNanoSeconds: 10e9}
	ready, notReady := runtimeapi.PodSandboxState_SANDBOX_READY, runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	running, exited := runtimeapi.ContainerState_CONTAINER_RUNNING, runtimeapi.ContainerState_CONTAINER_EXITED
	in := Inputs{
		NodeName: "n1", NodeStartTime: t0.Add(-time.Hour), Node: node, PrevNode: prev,
		Pods: []*corev1.Pod{pod("ns", "web", "u1"), pod("ns", "gone", "u2"), pod("a", "db", "u3")},
		Sandboxes: []*runtimeapi.PodSandbox{
			sandbox("old", "u1", notReady, t0.Add(-time.Minute)), sandbox("s1", "u1", ready, t0),
			sandbox("s3", "u3", ready, t0),
		},
		Containers: []*runtimeapi.Container{
			ctr("c1", "s1", "u1", "app", running, t0), ctr("c1-old", "s1", "u1", "app", exited, t0.Add(-time.Second)),
			ctr("c2", "s1", "u1", "sidecar", running, t0), ctr("c3", "s3", "u3", "db", running, t0),
			ctr("c9", "old", "u1", "app", running, t0), // a container of a sandbox that is not the pod's ready one
		},
		ContainerStats: []*runtimeapi.ContainerStats{
			cstats("c1", 5e9, 500e6, 10<<20, node.Time), cstats("c1-old", 1e9, 0, 1, node.Time), cstats("c2", 1e9, 100e6, 2<<20, node.Time),
			cstats("c3", 2e9, 0, 3<<20, node.Time), cstats("c9", 7e9, 0, 1, node.Time),
		},
		Volumes: map[string][]Volume{"u1": {{Name: "data", Used: 8192}, {Name: "claim", Used: 100, PVC: nil}}},
	}
	s := Summary(in)

	if s.Node.NodeName != "n1" || *s.Node.CPU.UsageCoreNanoSeconds != 30e9 || *s.Node.CPU.UsageNanoCores != 2e9 {
		t.Errorf("node cpu = %+v, want 30s cumulative and 2 cores over 10s", s.Node.CPU)
	}
	if got := *s.Node.Memory.WorkingSetBytes; got != 3<<30 {
		t.Errorf("node working set = %d, want total-available = 3GiB", got)
	}
	var names []string
	for _, p := range s.Pods {
		names = append(names, p.PodRef.Namespace+"/"+p.PodRef.Name)
	}
	if strings.Join(names, ",") != "a/db,ns/web" {
		t.Fatalf("pods = %v, want a/db,ns/web (sorted, only pods with a ready sandbox)", names)
	}
	web := s.Pods[1]
	if len(web.Containers) != 2 || web.Containers[0].Name != "app" || web.Containers[1].Name != "sidecar" {
		t.Fatalf("web containers = %+v, want app and sidecar", web.Containers)
	}
	if got := *web.Containers[0].CPU.UsageCoreNanoSeconds; got != 5e9 {
		t.Errorf("app cpu = %d, want the running attempt's 5e9", got)
	}
	if *web.CPU.UsageCoreNanoSeconds != 6e9 || *web.CPU.UsageNanoCores != 600e6 || *web.Memory.WorkingSetBytes != 12<<20 {
		t.Errorf("web pod usage = %+v / %+v, want the containers' sums", web.CPU, web.Memory)
	}
	if len(web.VolumeStats) != 2 || web.VolumeStats[1].Name != "data" || *web.VolumeStats[1].UsedBytes != 8192 {
		t.Errorf("web volumes = %+v", web.VolumeStats)
	}
	if got := *web.EphemeralStorage.UsedBytes; got != 2*4096+8192+100 {
		t.Errorf("web ephemeral storage = %d", got)
	}

	only := in
	only.OnlyCPUAndMemory = true
	s = Summary(only)
	if s.Pods[1].VolumeStats != nil || s.Pods[1].Containers[0].Rootfs != nil || s.Node.Fs != nil {
		t.Errorf("only_cpu_and_memory kept filesystems: %+v", s.Pods[1])
	}

	// A pod whose runtime reports sandbox stats takes them over its containers' sum.
	withSandbox := in
	withSandbox.SandboxStats = []*runtimeapi.PodSandboxStats{{
		Attributes: &runtimeapi.PodSandboxAttributes{Metadata: &runtimeapi.PodSandboxMetadata{Uid: "u3"}},
		Linux: &runtimeapi.LinuxPodSandboxStats{
			Cpu:     &runtimeapi.CpuUsage{Timestamp: node.Time.UnixNano(), UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: 9e9}},
			Network: &runtimeapi.NetworkUsage{DefaultInterface: &runtimeapi.NetworkInterfaceUsage{Name: "eth0", RxBytes: &runtimeapi.UInt64Value{Value: 42}}},
		},
	}}
	s = Summary(withSandbox)
	if db := s.Pods[0]; *db.CPU.UsageCoreNanoSeconds != 9e9 || db.Network == nil || *db.Network.RxBytes != 42 || *db.Memory.WorkingSetBytes != 3<<20 {
		t.Errorf("db with sandbox stats = cpu %+v net %+v mem %+v", db.CPU, db.Network, db.Memory)
	}
}

func TestNodeCPURate(t *testing.T) {
	for _, tc := range []struct {
		name string
		prev *NodeSample
		want *uint64
	}{
		{"no previous sample", nil, nil},
		{"one core for 4s", &NodeSample{Time: t0, CPUNanoSeconds: 6e9}, ptr[uint64](1e9)},
		{"counter went back (reboot)", &NodeSample{Time: t0, CPUNanoSeconds: 20e9}, nil},
		{"same instant", &NodeSample{Time: t0.Add(4 * time.Second), CPUNanoSeconds: 1}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Summary(Inputs{Node: NodeSample{Time: t0.Add(4 * time.Second), CPUNanoSeconds: 10e9, Memory: Meminfo{Total: 1}}, PrevNode: tc.prev})
			got := s.Node.CPU.UsageNanoCores
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Errorf("usageNanoCores = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWriteResourceMetrics(t *testing.T) {
	in := Inputs{
		NodeName: "n1", Node: NodeSample{Time: t0, CPUNanoSeconds: 1500e6, Memory: Meminfo{Total: 1000, Available: 400}},
		Pods:           []*corev1.Pod{pod("ns", "web", "u1")},
		Sandboxes:      []*runtimeapi.PodSandbox{sandbox("s1", "u1", runtimeapi.PodSandboxState_SANDBOX_READY, t0)},
		Containers:     []*runtimeapi.Container{ctr("c1", "s1", "u1", "app", runtimeapi.ContainerState_CONTAINER_RUNNING, t0.Add(-time.Minute))},
		ContainerStats: []*runtimeapi.ContainerStats{cstats("c1", 250e6, 0, 2048, t0)},
	}
	var b strings.Builder
	if err := WriteResourceMetrics(&b, Summary(in), false); err != nil {
		t.Fatal(err)
	}
	ms := t0.UnixMilli()
	for _, want := range []string{
		"# TYPE node_cpu_usage_seconds_total counter\n",
		"node_cpu_usage_seconds_total 1.5 " + itoa(ms) + "\n",
		"node_memory_working_set_bytes 600 " + itoa(ms) + "\n",
		`pod_cpu_usage_seconds_total{namespace="ns",pod="web"} 0.25 ` + itoa(ms) + "\n",
		`pod_memory_working_set_bytes{namespace="ns",pod="web"} 2048 ` + itoa(ms) + "\n",
		`container_cpu_usage_seconds_total{container="app",namespace="ns",pod="web"} 0.25 ` + itoa(ms) + "\n",
		`container_memory_working_set_bytes{container="app",namespace="ns",pod="web"} 2048 ` + itoa(ms) + "\n",
		`container_start_time_seconds{container="app",namespace="ns",pod="web"} ` + strconv.FormatFloat(float64(t0.Add(-time.Minute).Unix()), 'g', -1, 64) + " ",
		"resource_scrape_error 0\n", "scrape_error 0\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in\n%s", want, b.String())
		}
	}
	b.Reset()
	_ = WriteResourceMetrics(&b, Summary(Inputs{Node: in.Node}), true)
	if !strings.Contains(b.String(), "resource_scrape_error 1\n") || strings.Contains(b.String(), "pod_cpu_usage_seconds_total{") {
		t.Errorf("a failed runtime read should report the error and no pods:\n%s", b.String())
	}
}

func TestParseProc(t *testing.T) {
	cpu, err := ParseProcStat([]byte("cpu  100 5 50 1000 20 1 2 3 7 0\ncpu0 1 2 3 4\nbtime 1700000000\n"))
	if err != nil || cpu != (100+5+50+1+2+3)*1e7 {
		t.Errorf("ParseProcStat = %d, %v", cpu, err)
	}
	if _, err := ParseProcStat([]byte("intr 1 2\n")); err == nil {
		t.Error("ParseProcStat accepted a file without the cpu line")
	}
	boot, err := ParseBootTime([]byte("cpu 1 2 3 4\nbtime 1700000000\n"))
	if err != nil || boot.Unix() != 1700000000 {
		t.Errorf("ParseBootTime = %v, %v", boot, err)
	}
	m, err := ParseMeminfo([]byte("MemTotal:  1000 kB\nMemFree: 100 kB\nMemAvailable: 600 kB\nAnonPages: 50 kB\n"))
	if err != nil || m.Total != 1000*1024 || m.Available != 600*1024 || m.Anon != 50*1024 {
		t.Errorf("ParseMeminfo = %+v, %v", m, err)
	}
	if _, err := ParseMeminfo([]byte("MemFree: x kB\n")); err == nil {
		t.Error("ParseMeminfo accepted a bad number")
	}
	ifaces, err := ParseNetDev([]byte("Inter-|   Receive |  Transmit\n face |bytes packets\n    lo: 9 9 0 0 0 0 0 0 9 9 0 0 0 0 0 0\n  eth0: 100 2 3 0 0 0 0 0 200 4 5 0 0 0 0 0\n"))
	if err != nil || len(ifaces) != 1 || ifaces[0] != (Interface{Name: "eth0", RxBytes: 100, RxErrors: 3, TxBytes: 200, TxErrors: 5}) {
		t.Errorf("ParseNetDev = %+v, %v", ifaces, err)
	}
}

func itoa(v int64) string { return strconvFormat(v) }

func strconvFormat(v int64) string { return strconv.FormatInt(v, 10) }

func TestEscapeLabel(t *testing.T) {
	for in, want := range map[string]string{"web-1": "web-1", `a"b`: `a\"b`, "x\ny": `x\ny`, `c:\d`: `c:\\d`} {
		if got := escapeLabel(in); got != want {
			t.Errorf("escapeLabel(%q) = %q, want %q", in, got, want)
		}
	}
}
