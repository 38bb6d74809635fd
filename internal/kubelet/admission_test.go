package kubelet

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

func TestIsValidSysctlName(t *testing.T) {
	for name, want := range map[string]bool{
		"kernel.shm_rmid_forced":           true,
		"net.ipv4.conf.eth0/100.rp_filter": true,
		"net/ipv4/ip_local_port_range":     true,
		"a":                                true,
		"":                                 false,
		"Kernel.shmmax":                    false,
		"kernel..shmmax":                   false,
		".kernel":                          false,
		"kernel.":                          false,
		"kernel._shm":                      false,
		"kernel.shm_":                      false,
		"foo.bar*":                         false,
		"kernel.shm rmid":                  false,
		strings.Repeat("a", 254):           false,
	} {
		if got := isValidSysctlName(name); got != want {
			t.Errorf("isValidSysctlName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestNewSysctlAllowlist(t *testing.T) {
	for _, tc := range []struct {
		unsafe  []string
		wantErr string
	}{
		{nil, ""},
		{[]string{"kernel.msg*", "net.core.somaxconn", "kernel.sem", "fs.mqueue.msg_max"}, ""},
		{[]string{"vm.swappiness"}, `"vm.swappiness" is not known to be namespaced`},
		{[]string{"kernel.*"}, `"kernel.*" is not known to be namespaced`},
		{[]string{"net.*.foo*"}, "only a trailing '*'"},
	} {
		_, err := newSysctlAllowlist(tc.unsafe)
		if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("newSysctlAllowlist(%v) = %v, want error %q", tc.unsafe, err, tc.wantErr)
		}
	}
}

func TestAdmitPod(t *testing.T) {
	allow, err := newSysctlAllowlist([]string{"kernel.msg*", "net.core.somaxconn"})
	if err != nil {
		t.Fatal(err)
	}
	withSysctls := func(names ...string) *corev1.Pod {
		p := makePod("s").obj()
		p.Spec.SecurityContext = &corev1.PodSecurityContext{}
		for _, n := range names {
			p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, corev1.Sysctl{Name: n, Value: "1"})
		}
		return p
	}
	hostNet := func(p *corev1.Pod) *corev1.Pod { p.Spec.HostNetwork = true; return p }
	hostIPC := func(p *corev1.Pod) *corev1.Pod { p.Spec.HostIPC = true; return p }
	withPorts := func(uid string, ports ...corev1.ContainerPort) *corev1.Pod {
		p := makePod(uid).obj()
		p.UID = types.UID(uid)
		p.Spec.Containers[0].Ports = ports
		return p
	}
	port := func(proto corev1.Protocol, ip string, hostPort int32) corev1.ContainerPort {
		return corev1.ContainerPort{ContainerPort: 80, HostPort: hostPort, HostIP: ip, Protocol: proto}
	}
	sidecarWithPort := func(uid string, p corev1.ContainerPort) *corev1.Pod {
		pod := makePod(uid).obj()
		pod.UID = types.UID(uid)
		always := corev1.ContainerRestartPolicyAlways
		pod.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: &always, Ports: []corev1.ContainerPort{p}}}
		return pod
	}
	withOS := func(label, field string) *corev1.Pod {
		p := makePod("os").obj()
		if label != "" {
			p.Labels = map[string]string{corev1.LabelOSStable: label}
		}
		if field != "" {
			p.Spec.OS = &corev1.PodOS{Name: corev1.OSName(field)}
		}
		return p
	}
	forbidden := "SysctlForbidden"
	ports := "NodePorts"
	portsMsg := "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
	for _, tc := range []struct {
		name       string
		pod        *corev1.Pod
		admitted   []*corev1.Pod
		reason     string
		msgContain string
	}{
		{"no sysctls", makePod("a").obj(), nil, "", ""},
		{"safe sysctls", withSysctls("kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_rmem", "net/ipv4/tcp_keepalive_probes"), nil, "", ""},
		{"unsafe sysctl", withSysctls("kernel.shm_rmid_forced", "kernel.shmmax"), nil, forbidden, `forbidden sysctl: "kernel.shmmax" not allowlisted`},
		{"node-wide sysctl", withSysctls("vm.swappiness"), nil, forbidden, `"vm.swappiness" not allowlisted`},
		{"allowed unsafe by pattern", withSysctls("kernel.msgmax"), nil, "", ""},
		{"allowed unsafe by name", withSysctls("net.core.somaxconn"), nil, "", ""},
		{"net sysctl with host network", hostNet(withSysctls("net.ipv4.tcp_syncookies")), nil, forbidden, `"net.ipv4.tcp_syncookies" not allowed with host net enabled`},
		{"ipc sysctl with host ipc", hostIPC(withSysctls("kernel.shm_rmid_forced")), nil, forbidden, `"kernel.shm_rmid_forced" not allowed with host ipc enabled`},
		{"ipc sysctl with host network", hostNet(withSysctls("kernel.shm_rmid_forced")), nil, "", ""},
		{"free host port", withPorts("new", port("TCP", "", 8080)), []*corev1.Pod{withPorts("old", port("TCP", "", 8081))}, "", ""},
		{"taken host port", withPorts("new", port("TCP", "", 8080)), []*corev1.Pod{withPorts("old", port("", "", 8080))}, ports, portsMsg},
		{"other protocol", withPorts("new", port("UDP", "", 8080)), []*corev1.Pod{withPorts("old", port("TCP", "", 8080))}, "", ""},
		{"other address", withPorts("new", port("TCP", "10.0.0.1", 8080)), []*corev1.Pod{withPorts("old", port("TCP", "10.0.0.2", 8080))}, "", ""},
		{"same address", withPorts("new", port("TCP", "10.0.0.1", 8080)), []*corev1.Pod{withPorts("old", port("TCP", "10.0.0.1", 8080))}, ports, portsMsg},
		{"wildcard taken", withPorts("new", port("TCP", "10.0.0.1", 8080)), []*corev1.Pod{withPorts("old", port("TCP", "0.0.0.0", 8080))}, ports, portsMsg},
		{"wanted wildcard", withPorts("new", port("TCP", "", 8080)), []*corev1.Pod{withPorts("old", port("TCP", "10.0.0.1", 8080))}, ports, portsMsg},
		{"container port only", withPorts("new", corev1.ContainerPort{ContainerPort: 8080}), []*corev1.Pod{withPorts("old", corev1.ContainerPort{ContainerPort: 8080})}, "", ""},
		{"itself", withPorts("same", port("TCP", "", 8080)), []*corev1.Pod{withPorts("same", port("TCP", "", 8080))}, "", ""},
		{"sidecar port", withPorts("new", port("TCP", "", 8080)), []*corev1.Pod{sidecarWithPort("old", port("TCP", "", 8080))}, ports, portsMsg},
		{"linux pod", withOS("linux", "linux"), nil, "", ""},
		{"windows by spec.os", withOS("", "windows"), nil, "PodOSNotSupported", "the OS field doesn't match node OS"},
		{"windows by label", withOS("windows", ""), nil, "PodOSSelectorNodeLabelDoesNotMatch", "`kubernetes.io/os` label doesn't match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := admitPod(tc.pod, tc.admitted, nil, allow)
			if got.admit != (tc.reason == "") || got.reason != tc.reason || !strings.Contains(got.message, tc.msgContain) {
				t.Errorf("admitPod = %+v, want reason %q message containing %q", got, tc.reason, tc.msgContain)
			}
		})
	}
}

// TestAdmitPodResources: a pod bound past the scheduler is refused when it does not fit beside
// the admitted pods (OutOfcpu, OutOfmemory, OutOfpods, OutOfephemeral-storage, as Kubernetes'
// kubelet; e2e "PodRejectionStatus should reject pod when the node didn't have enough resource");
// extended resources the kubelet does not report are the scheduler's to count.
func TestAdmitPodResources(t *testing.T) {
	allocatable := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("10Gi"), corev1.ResourcePods: resource.MustParse("3"),
	}
	requesting := func(name string, rl corev1.ResourceList) *corev1.Pod {
		p := makePod(name).obj()
		p.UID = types.UID("uid-" + name)
		p.Spec.Containers[0].Resources.Requests = rl
		return p
	}
	half := requesting("half", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")})
	for _, tc := range []struct {
		name     string
		pod      *corev1.Pod
		admitted []*corev1.Pod
		reason   string
		message  string
	}{
		{"fits", requesting("new", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}), []*corev1.Pod{half}, "", ""},
		{"too much cpu", requesting("new", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}), []*corev1.Pod{half},
			"OutOfcpu", "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000"},
		{"more cpu than the node has", requesting("new", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000")}), nil,
			"OutOfcpu", "Node didn't have enough resource: cpu, requested: 1000000, used: 0, capacity: 2000"},
		{"too much memory", requesting("new", corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi")}), []*corev1.Pod{half}, "OutOfmemory", "resource: memory"},
		{"too much ephemeral storage", requesting("new", corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("11Gi")}), nil, "OutOfephemeral-storage", ""},
		{"no room for another pod", makePod("new").obj(), []*corev1.Pod{requesting("a", nil), requesting("b", nil), requesting("c", nil)},
			"OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"},
		{"an extended resource the kubelet does not report", requesting("new", corev1.ResourceList{"example.com/beardsecond": resource.MustParse("100")}), nil, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := admitPod(tc.pod, tc.admitted, allocatable, sysctlAllowlist{})
			if got.admit != (tc.reason == "") || got.reason != tc.reason || !strings.Contains(got.message, tc.message) {
				t.Errorf("admitPod = %+v, want reason %q message containing %q", got, tc.reason, tc.message)
			}
		})
	}
}

func TestAdmissionRejectsHostPortConflictAndForbiddenSysctl(t *testing.T) {
	h := newHarness(t, nil)
	withPort := func(name string) *corev1.Pod {
		p := makePod(name).obj()
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: corev1.ProtocolTCP}}
		return p
	}
	h.create(withPort("first"))
	h.waitPod("default", "first", "running", podRunning)
	h.create(withPort("second"))
	pod := h.waitPod("default", "second", "rejected", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if pod.Status.Reason != "NodePorts" || pod.Status.Message != "Pod was rejected: Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports" {
		t.Errorf("rejected status = %q %q", pod.Status.Reason, pod.Status.Message)
	}
	if c := conditionOf(pod, corev1.PodScheduled); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("PodScheduled condition lost: %+v", pod.Status.Conditions)
	}

	sysctl := makePod("tuned").obj()
	sysctl.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "kernel.msgmax", Value: "10000"}}}
	h.create(sysctl)
	pod = h.waitPod("default", "tuned", "rejected", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if pod.Status.Reason != "SysctlForbidden" || pod.Status.Message != `Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted` {
		t.Errorf("rejected status = %q %q", pod.Status.Reason, pod.Status.Message)
	}
	h.eventually("rejection events", func() bool { return h.hasEvent("SysctlForbidden") && h.hasEvent("NodePorts") })
	for _, name := range []string{"second", "tuned"} {
		for _, c := range h.runtime.CallsTo("RunPodSandbox") {
			if c == "default/"+name {
				t.Errorf("rejected pod %s got a sandbox", name)
			}
		}
	}
	// The first pod gone, its port is free for a new pod.
	if err := h.client.CoreV1().Pods("default").Delete(t.Context(), "first", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	h.eventually("first pod gone", func() bool { return h.pod("default", "first") == nil })
	h.create(withPort("third"))
	h.waitPod("default", "third", "running", podRunning)
}

func TestSlashSeparatedSysctlReachesRuntimeDotted(t *testing.T) {
	h := newHarness(t, nil)
	pod := makePod("slashed").obj()
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net/ipv4/ip_local_port_range", Value: "1024 65000"}}}
	h.create(pod)
	h.waitPod("default", "slashed", "running", podRunning)
	sandboxes, err := h.runtime.ListPodSandbox(t.Context(), &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{labelPodUID: "uid-slashed"}})
	if err != nil || len(sandboxes) != 1 {
		t.Fatalf("sandboxes = %v, %v", sandboxes, err)
	}
	got := h.runtime.SandboxConfig(sandboxes[0].Id).GetLinux().GetSysctls()
	if len(got) != 1 || got["net.ipv4.ip_local_port_range"] != "1024 65000" {
		t.Errorf("sandbox sysctls = %v", got)
	}
}
