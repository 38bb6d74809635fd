package kubelet

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/kubelet/containerd"
	"github.com/skiff-sh/skiff/internal/version"

	"github.com/skiff-sh/skiff/internal/volumeutil"
)

func (h *harness) node() *corev1.Node {
	n, err := h.client.CoreV1().Nodes().Get(context.Background(), testNode, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return n
}

func (h *harness) lease() *coordinationv1.Lease {
	l, err := h.client.CoordinationV1().Leases(NodeLeaseNamespace).Get(context.Background(), testNode, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return l
}

func nodeCondition(n *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == t {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func TestNodeRegistration(t *testing.T) {
	cniDir := filepath.Join(t.TempDir(), "net.d")
	h := newHarness(t, func(c *Config) {
		c.SystemReserved = corev1.ResourceList{corev1.ResourceCPU: quantity("500m"), corev1.ResourceMemory: quantity("1Gi")}
		c.PodCIDRs = []string{"10.244.3.0/24"}
		c.CNIConfDir = cniDir
		c.Labels = map[string]string{"zone": "a"}
	})
	node := func() *corev1.Node { return h.node() }
	var n *corev1.Node
	h.eventually("node status posted", func() bool {
		n = node()
		return n != nil && nodeCondition(n, corev1.NodeReady) != nil
	})
	wantLabels := map[string]string{
		"kubernetes.io/hostname": testNode, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		"node-role.kubernetes.io/worker": "", "zone": "a",
	}
	for k, v := range wantLabels {
		if got, ok := n.Labels[k]; !ok || got != v {
			t.Errorf("label %s = %q (present %v), want %q", k, got, ok, v)
		}
	}
	checks := []struct {
		name      string
		list      corev1.ResourceList
		resource  corev1.ResourceName
		wantValue string
	}{
		{"capacity cpu", n.Status.Capacity, corev1.ResourceCPU, "4"},
		{"capacity memory", n.Status.Capacity, corev1.ResourceMemory, "8Gi"},
		{"capacity pods", n.Status.Capacity, corev1.ResourcePods, "110"},
		{"allocatable cpu", n.Status.Allocatable, corev1.ResourceCPU, "3500m"},
		{"allocatable memory", n.Status.Allocatable, corev1.ResourceMemory, "7Gi"},
		{"allocatable ephemeral", n.Status.Allocatable, corev1.ResourceEphemeralStorage, "100Gi"},
	}
	for _, c := range checks {
		got := c.list[c.resource]
		if want := quantity(c.wantValue); got.Cmp(want) != 0 {
			t.Errorf("%s = %s, want %s", c.name, got.String(), c.wantValue)
		}
	}
	info := n.Status.NodeInfo
	if info.KernelVersion != "6.1.0-test" || info.ContainerRuntimeVersion != "fakecri://1.0.0" || info.KubeletVersion != version.GitVersion ||
		info.OSImage != "Debian GNU/Linux 12 (bookworm)" || info.BootID != "b-1" || info.Architecture != "amd64" {
		t.Errorf("nodeInfo = %+v", info)
	}
	wantConditions := map[corev1.NodeConditionType][2]string{
		corev1.NodeReady:          {"True", "KubeletReady"},
		corev1.NodeMemoryPressure: {"False", "KubeletHasSufficientMemory"},
		corev1.NodeDiskPressure:   {"False", "KubeletHasNoDiskPressure"},
		corev1.NodePIDPressure:    {"False", "KubeletHasSufficientPID"},
	}
	for typ, want := range wantConditions {
		c := nodeCondition(n, typ)
		if c == nil || string(c.Status) != want[0] || c.Reason != want[1] {
			t.Errorf("condition %s = %+v, want %v", typ, c, want)
		}
	}
	if len(n.Status.Addresses) != 2 || n.Status.Addresses[0] != (corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.0.2.10"}) {
		t.Errorf("addresses = %v", n.Status.Addresses)
	}
	if n.Status.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
		t.Errorf("kubelet port = %d", n.Status.DaemonEndpoints.KubeletEndpoint.Port)
	}
	if n.Spec.PodCIDR != "10.244.3.0/24" {
		t.Errorf("podCIDR = %q", n.Spec.PodCIDR)
	}
	conflist, err := os.ReadFile(filepath.Join(cniDir, containerd.CNIConfigFile))
	if err != nil || !strings.Contains(string(conflist), `"subnet": "10.244.3.0/24"`) {
		t.Errorf("CNI config = %s, %v", conflist, err)
	}
	if len(n.Status.Images) != 1 || n.Status.Images[0].Names[0] != testImage {
		t.Errorf("images = %v", n.Status.Images)
	}
	if n.Annotations[volumeutil.AnnControllerManagedAttachDetach] != "true" {
		t.Errorf("annotations = %v: the attach/detach controller would not attach volumes to this node", n.Annotations)
	}
}

func TestNodeLeaseRenewal(t *testing.T) {
	// A Node that already exists (with the UID an API server gives it) is
	// adopted, and becomes the Lease's owner.
	h := newHarnessWithObjects(t, nil, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, UID: "node-uid"}})
	var first *coordinationv1.Lease
	h.eventually("lease created", func() bool { first = h.lease(); return first != nil })
	if *first.Spec.HolderIdentity != testNode || *first.Spec.LeaseDurationSeconds != 40 {
		t.Errorf("lease spec = %+v", first.Spec)
	}
	if !first.Spec.RenewTime.Time.Equal(h.clock.Now()) {
		t.Errorf("renewTime = %v, want %v", first.Spec.RenewTime, h.clock.Now())
	}
	start := h.clock.Now()
	h.step(10 * time.Second)
	h.eventually("lease renewed", func() bool {
		l := h.lease()
		return l != nil && l.Spec.RenewTime.Time.Equal(start.Add(10*time.Second))
	})
	if l := h.lease(); len(l.OwnerReferences) != 1 || l.OwnerReferences[0].Kind != "Node" || l.OwnerReferences[0].Name != testNode || l.OwnerReferences[0].UID != "node-uid" {
		t.Errorf("lease owner = %v", l.OwnerReferences)
	}
}

func TestNodeNotReadyWhenNetworkIsNot(t *testing.T) {
	h := newHarness(t, nil)
	h.eventually("ready", func() bool {
		n := h.node()
		return n != nil && nodeCondition(n, corev1.NodeReady) != nil && nodeCondition(n, corev1.NodeReady).Status == corev1.ConditionTrue
	})
	readySince := nodeCondition(h.node(), corev1.NodeReady).LastTransitionTime
	h.runtime.SetNetworkReady(false)
	h.step(10 * time.Second)
	h.eventually("not ready", func() bool {
		c := nodeCondition(h.node(), corev1.NodeReady)
		return c.Status == corev1.ConditionFalse
	})
	c := nodeCondition(h.node(), corev1.NodeReady)
	if c.Reason != "KubeletNotReady" || !strings.Contains(c.Message, "NetworkReady=false reason:NetworkPluginNotReady") {
		t.Errorf("not ready condition = %+v", c)
	}
	if !c.LastTransitionTime.After(readySince.Time) {
		t.Errorf("transition time %v not after %v", c.LastTransitionTime, readySince)
	}
	mem := nodeCondition(h.node(), corev1.NodeMemoryPressure)
	if !mem.LastTransitionTime.Equal(&readySince) {
		t.Errorf("unchanged condition moved its transition time: %v", mem.LastTransitionTime)
	}
}

// A node whose posted status is not Ready computes it again at the not-ready interval, so Ready is
// posted as soon as the runtime's network is (a new node's pod network comes after it
// registers), not a status update period later.
func TestNodeReadySoonAfterNetwork(t *testing.T) {
	h := newHarness(t, nil)
	h.eventually("ready", func() bool {
		c := nodeCondition(h.node(), corev1.NodeReady)
		return c != nil && c.Status == corev1.ConditionTrue
	})
	h.runtime.SetNetworkReady(false)
	h.step(h.cfg.NodeStatusUpdateFrequency)
	h.eventually("not ready", func() bool { return nodeCondition(h.node(), corev1.NodeReady).Status == corev1.ConditionFalse })
	h.runtime.SetNetworkReady(true)
	// The loop arms its not-ready timer after each pass, so a step may come before it: the clock
	// moves a not-ready interval at a time, short of a whole update period.
	ready := func() bool { return nodeCondition(h.node(), corev1.NodeReady).Status == corev1.ConditionTrue }
	var moved time.Duration
	for !ready() && moved+h.cfg.NodeStatusNotReadyInterval < h.cfg.NodeStatusUpdateFrequency {
		h.step(h.cfg.NodeStatusNotReadyInterval)
		moved += h.cfg.NodeStatusNotReadyInterval
		deadline := time.Now().Add(200 * time.Millisecond)
		for !ready() && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	if !ready() {
		t.Fatalf("node not Ready %s after its network was (update frequency %s)", moved, h.cfg.NodeStatusUpdateFrequency)
	}
}

// The pod CIDR the control plane assigns after the node registered reaches the kubelet from its
// watch of the Node: the clock does not move here, so no status write (whose answer would also
// carry it) happens meanwhile.
func TestNodePodCIDRAssignedAfterRegistration(t *testing.T) {
	cniDir := filepath.Join(t.TempDir(), "net.d")
	h := newHarness(t, func(c *Config) { c.CNIConfDir = cniDir })
	h.eventually("node status posted", func() bool {
		n := h.node()
		return n != nil && nodeCondition(n, corev1.NodeReady) != nil
	})
	n := h.node()
	n.Spec.PodCIDR, n.Spec.PodCIDRs = "10.244.7.0/24", []string{"10.244.7.0/24"}
	if _, err := h.client.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("CNI network list for the assigned pod CIDR", func() bool {
		conflist, err := os.ReadFile(filepath.Join(cniDir, containerd.CNIConfigFile))
		return err == nil && strings.Contains(string(conflist), `"subnet": "10.244.7.0/24"`)
	})
}

func TestNodeStatusWait(t *testing.T) {
	cfg := Default(testNode, t.TempDir())
	withReady := func(s corev1.ConditionStatus) corev1.NodeStatus {
		return corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}, {Type: corev1.NodeReady, Status: s}}}
	}
	slowNotReady := cfg
	slowNotReady.NodeStatusNotReadyInterval = time.Minute
	for _, tc := range []struct {
		name   string
		posted corev1.NodeStatus
		cfg    Config
		want   time.Duration
		sooner bool
	}{
		{"ready: the update frequency alone", withReady(corev1.ConditionTrue), cfg, 0, false},
		{"not ready: the not-ready interval", withReady(corev1.ConditionFalse), cfg, 100 * time.Millisecond, true},
		{"unknown: the not-ready interval", withReady(corev1.ConditionUnknown), cfg, 100 * time.Millisecond, true},
		{"no status posted yet: the not-ready interval", corev1.NodeStatus{}, cfg, 100 * time.Millisecond, true},
		{"an interval past the update frequency: the frequency alone", withReady(corev1.ConditionFalse), slowNotReady, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, sooner := nodeStatusWait(tc.posted, tc.cfg); got != tc.want || sooner != tc.sooner {
				t.Errorf("nodeStatusWait = %s, %v, want %s, %v", got, sooner, tc.want, tc.sooner)
			}
		})
	}
}

func TestNodeReRegistersLabelsOnExistingNode(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Roles = nil })
	h.eventually("registered", func() bool { return h.node() != nil })
	h.stop()
	h.cfg.Roles = []string{"control-plane"}
	h.start()
	h.eventually("role label added", func() bool {
		_, ok := h.node().Labels["node-role.kubernetes.io/control-plane"]
		return ok
	})
	if h.node().Annotations[volumeutil.AnnControllerManagedAttachDetach] != "true" {
		t.Errorf("annotations of the adopted node = %v", h.node().Annotations)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"no name", func(c *Config) { c.NodeName = "" }, "nodeName: required"},
		{"bad name", func(c *Config) { c.NodeName = "Bad_Name" }, "nodeName"},
		{"relative dir", func(c *Config) { c.DataDir = "data" }, "dataDir"},
		{"bad cidr", func(c *Config) { c.PodCIDRs = []string{"10.0.0.0/33"} }, "podCIDRs"},
		{"bad dns", func(c *Config) { c.ClusterDNS = []string{"dns"} }, "clusterDNS"},
		{"renew too slow", func(c *Config) { c.LeaseRenewInterval = time.Minute }, "leaseRenewInterval"},
		{"bad role", func(c *Config) { c.Roles = []string{"a b"} }, "roles"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Default("node-a", "/data")
			tc.mutate(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate = %v, want error about %s", err, tc.want)
			}
		})
	}
	if err := Default("node-a", "/data").Validate(); err != nil {
		t.Errorf("default config invalid: %v", err)
	}
}

func TestParseSystemReserved(t *testing.T) {
	got, err := ParseSystemReserved("cpu=500m,memory=512Mi")
	if err != nil {
		t.Fatal(err)
	}
	if cpu := got[corev1.ResourceCPU]; cpu.MilliValue() != 500 {
		t.Errorf("cpu = %v", cpu)
	}
	if mem := got[corev1.ResourceMemory]; mem.Value() != 512<<20 {
		t.Errorf("memory = %v", mem)
	}
	for _, bad := range []string{"cpu", "gpu=1", "memory=lots", "cpu=-1"} {
		if _, err := ParseSystemReserved(bad); err == nil {
			t.Errorf("ParseSystemReserved(%q) succeeded", bad)
		}
	}
}

// TestRootDirLayout: the kubelet makes the directories CSI drivers' manifests mount by hostPath
// with type Directory, before any driver is deployed.
func TestRootDirLayout(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	h := newHarness(t, func(c *Config) { c.RootDir = root })
	h.eventually("registered", func() bool { return h.node() != nil })
	for _, dir := range []string{"pods", "plugins", "plugins_registry"} {
		if fi, err := os.Stat(filepath.Join(root, dir)); err != nil || !fi.IsDir() {
			t.Errorf("%s: %v", dir, err)
		}
	}
}

// TestKeepExtendedResources: an extended resource others put in the Node's capacity stays there
// and becomes allocatable (e2e's "validates pod overhead is considered" patches
// example.com/beardsecond in); the kubelet's own resources are its own to say.
func TestKeepExtendedResources(t *testing.T) {
	previous := corev1.ResourceList{
		"example.com/beardsecond": resource.MustParse("1000"),
		corev1.ResourceCPU:        resource.MustParse("64"),
		"kubernetes.io/something": resource.MustParse("1"),
		"requests.example.com/x":  resource.MustParse("1"),
	}
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	allocatable := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	keepExtendedResources(previous, capacity, allocatable)
	for _, rl := range []corev1.ResourceList{capacity, allocatable} {
		if q := rl["example.com/beardsecond"]; q.Cmp(resource.MustParse("1000")) != 0 {
			t.Errorf("beardsecond %v, want 1000 kept", q.String())
		}
		if q := rl[corev1.ResourceCPU]; q.Cmp(resource.MustParse("2")) != 0 {
			t.Errorf("cpu %v, want the kubelet's own 2", q.String())
		}
		if _, ok := rl["kubernetes.io/something"]; ok {
			t.Error("a kubernetes.io resource carried over")
		}
		if _, ok := rl["requests.example.com/x"]; ok {
			t.Error("a quota name carried over")
		}
	}
}
