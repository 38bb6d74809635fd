package simnode

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func TestConfigValidate(t *testing.T) {
	client := fake.NewClientset()
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantErr string
	}{
		{name: "defaults are valid", mutate: func(*Config) {}},
		{name: "no client", mutate: func(c *Config) { c.Client = nil }, wantErr: "client is required"},
		{name: "negative nodes", mutate: func(c *Config) { c.Nodes = -1 }, wantErr: "nodes must not be negative"},
		{name: "too many nodes", mutate: func(c *Config) { c.FirstIndex = MaxNodeIndex - 1; c.Nodes = 2 }, wantErr: "at most 32768"},
		{name: "bad prefix", mutate: func(c *Config) { c.NamePrefix = "Sim_" }, wantErr: "does not make valid node names"},
		{name: "negative start delay", mutate: func(c *Config) { c.PodStartDelay = -time.Second }, wantErr: "pod start delay"},
		{name: "negative capacity", mutate: func(c *Config) {
			c.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}
		}, wantErr: "capacity cpu must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Client: client, Nodes: 3}
			cfg.Default()
			tt.mutate(&cfg)
			err := cfg.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestDefaultCapacity(t *testing.T) {
	cfg := Config{}
	cfg.Default()
	want := map[corev1.ResourceName]string{"cpu": "4", "memory": "16Gi", "pods": "110", "ephemeral-storage": "100Gi"}
	if len(cfg.Capacity) != len(want) {
		t.Fatalf("capacity = %v", cfg.Capacity)
	}
	for name, q := range want {
		if got := cfg.Capacity[name]; got.Cmp(resource.MustParse(q)) != 0 {
			t.Errorf("capacity %s = %s, want %s", name, got.String(), q)
		}
	}
}

func TestRegistersNodesAndLeases(t *testing.T) {
	taint := corev1.Taint{Key: "sim", Value: "yes", Effect: corev1.TaintEffectNoSchedule}
	h := startHarness(t, Config{Nodes: 3, NamePrefix: "n-", FirstIndex: 300,
		Labels: map[string]string{"topology.kubernetes.io/zone": "z1"}, Taints: []corev1.Taint{taint}})

	if got := h.sim.NodeNames(); strings.Join(got, ",") != "n-300,n-301,n-302" {
		t.Fatalf("NodeNames() = %v", got)
	}
	nodes, err := h.client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 3 {
		t.Fatalf("got %d nodes, want 3", len(nodes.Items))
	}
	seenIPs := map[string]bool{}
	for _, node := range nodes.Items {
		for key, want := range map[string]string{"kubernetes.io/hostname": node.Name, "kubernetes.io/os": "linux",
			"topology.kubernetes.io/zone": "z1"} {
			if node.Labels[key] != want {
				t.Errorf("%s: label %s = %q, want %q", node.Name, key, node.Labels[key], want)
			}
		}
		if node.Labels["kubernetes.io/arch"] == "" || node.Annotations[SimulatedAnnotation] != "true" {
			t.Errorf("%s: labels %v annotations %v", node.Name, node.Labels, node.Annotations)
		}
		if len(node.Spec.Taints) != 1 || node.Spec.Taints[0] != taint || node.Spec.PodCIDR != "" {
			t.Errorf("%s: spec = %+v, want the taint and no podCIDR", node.Name, node.Spec)
		}
		for _, res := range []corev1.ResourceName{"cpu", "memory", "pods", "ephemeral-storage"} {
			c, a := node.Status.Capacity[res], node.Status.Allocatable[res]
			if c.IsZero() || c.Cmp(a) != 0 {
				t.Errorf("%s: %s capacity %s allocatable %s", node.Name, res, c.String(), a.String())
			}
		}
		wantConditions := map[corev1.NodeConditionType]corev1.ConditionStatus{
			corev1.NodeReady: corev1.ConditionTrue, corev1.NodeMemoryPressure: corev1.ConditionFalse,
			corev1.NodeDiskPressure: corev1.ConditionFalse, corev1.NodePIDPressure: corev1.ConditionFalse,
		}
		if len(node.Status.Conditions) != len(wantConditions) {
			t.Errorf("%s: conditions %+v", node.Name, node.Status.Conditions)
		}
		for _, c := range node.Status.Conditions {
			if c.Status != wantConditions[c.Type] || c.LastHeartbeatTime.Time != testEpoch || c.Reason == "" {
				t.Errorf("%s: condition %+v", node.Name, c)
			}
		}
		var internalIP string
		for _, a := range node.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				internalIP = a.Address
			}
		}
		if _, err := netip.ParseAddr(internalIP); err != nil || seenIPs[internalIP] {
			t.Errorf("%s: internal IP %q is invalid or repeated", node.Name, internalIP)
		}
		seenIPs[internalIP] = true
		info := node.Status.NodeInfo
		if info.KubeletVersion != defaultKubeletVersion() || info.OperatingSystem != "linux" || info.MachineID == "" ||
			info.ContainerRuntimeVersion == "" || node.Status.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
			t.Errorf("%s: nodeInfo %+v", node.Name, info)
		}

		lease, err := h.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(context.Background(), node.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("lease of %s: %v", node.Name, err)
		}
		if *lease.Spec.HolderIdentity != node.Name || *lease.Spec.LeaseDurationSeconds != 40 ||
			!lease.Spec.RenewTime.Time.Equal(testEpoch) {
			t.Errorf("lease %s: spec %+v", node.Name, lease.Spec)
		}
		if len(lease.OwnerReferences) != 1 || lease.OwnerReferences[0].Kind != "Node" || lease.OwnerReferences[0].Name != node.Name {
			t.Errorf("lease %s: owners %+v", node.Name, lease.OwnerReferences)
		}
	}
}

func TestReregistersExistingNodeKeepingSpec(t *testing.T) {
	staleRenewal := metav1.NewMicroTime(testEpoch.Add(-time.Hour))
	client := fake.NewClientset(&corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "sim-node-0"},
		Spec:       corev1.NodeSpec{Unschedulable: true},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}},
	}, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "sim-node-0", Namespace: corev1.NamespaceNodeLease},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("someone-else"), RenewTime: &staleRenewal},
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sim, err := Start(ctx, Config{Client: client, Nodes: 1, Clock: clocktesting.NewFakeClock(testEpoch)})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Stop()
	node, err := client.CoreV1().Nodes().Get(ctx, "sim-node-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !node.Spec.Unschedulable {
		t.Error("re-registration dropped spec.unschedulable")
	}
	if len(node.Status.Conditions) != 4 || node.Status.Capacity.Pods().Value() != 110 {
		t.Errorf("status not refreshed: %+v", node.Status)
	}
	lease, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "sim-node-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *lease.Spec.HolderIdentity != "sim-node-0" || !lease.Spec.RenewTime.Time.Equal(testEpoch) {
		t.Errorf("existing lease not taken over: %+v", lease.Spec)
	}
}

func TestBoundPodBecomesRunningAndReady(t *testing.T) {
	h := startHarness(t, Config{Nodes: 3})
	// A pod on a node this simulator does not own must be left alone; it is created first so its
	// event has been handled by the time the other pod is running.
	h.createPod(makePod("foreign").node("real-node").obj())
	h.createPod(makePod("web").node("sim-node-1").containers("zeta", "alpha").
		initContainer("setup", false).initContainer("proxy", true).obj())
	h.eventually("web runs", nil, podPhaseIs(h, "web", corev1.PodRunning))

	pod := h.getPod("web")
	st := pod.Status
	if st.HostIP != hostIP(1) || len(st.HostIPs) != 1 || st.HostIPs[0].IP != st.HostIP {
		t.Errorf("hostIP %q hostIPs %v", st.HostIP, st.HostIPs)
	}
	ip, err := netip.ParseAddr(st.PodIP)
	if err != nil || !podRange(1).Contains(ip) || len(st.PodIPs) != 1 || st.PodIPs[0].IP != st.PodIP {
		t.Errorf("podIP %q podIPs %v, want one address in %s", st.PodIP, st.PodIPs, podRange(1))
	}
	if st.StartTime == nil || !st.StartTime.Time.Equal(testEpoch) {
		t.Errorf("startTime = %v", st.StartTime)
	}
	wantTrue := []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady,
		corev1.PodReady, corev1.PodReadyToStartContainers}
	for _, ct := range wantTrue {
		c := findCondition(st.Conditions, ct)
		if c == nil || c.Status != corev1.ConditionTrue || c.LastTransitionTime.IsZero() {
			t.Errorf("condition %s = %+v", ct, c)
		}
	}
	if len(st.ContainerStatuses) != 2 || st.ContainerStatuses[0].Name != "alpha" || st.ContainerStatuses[1].Name != "zeta" {
		t.Fatalf("containerStatuses = %+v, want alpha and zeta sorted", st.ContainerStatuses)
	}
	for _, cs := range st.ContainerStatuses {
		if !cs.Ready || cs.Started == nil || !*cs.Started || cs.State.Running == nil || cs.RestartCount != 0 ||
			cs.Image != "registry.example/"+cs.Name+":1" || !strings.HasPrefix(cs.ImageID, "sim://sha256:") ||
			!strings.HasPrefix(cs.ContainerID, "sim://") {
			t.Errorf("container status %+v", cs)
		}
	}
	if st.ContainerStatuses[0].ContainerID == st.ContainerStatuses[1].ContainerID {
		t.Error("container IDs repeat")
	}
	if len(st.InitContainerStatuses) != 2 {
		t.Fatalf("initContainerStatuses = %+v", st.InitContainerStatuses)
	}
	if setup := st.InitContainerStatuses[0]; setup.State.Terminated == nil || setup.State.Terminated.ExitCode != 0 ||
		setup.State.Terminated.Reason != "Completed" {
		t.Errorf("ordinary init container %+v, want terminated Completed", setup)
	}
	if proxy := st.InitContainerStatuses[1]; proxy.State.Running == nil || !proxy.Ready {
		t.Errorf("sidecar %+v, want running and ready", proxy)
	}
	if foreign := h.getPod("foreign"); foreign.Status.Phase != corev1.PodPending {
		t.Errorf("pod on a foreign node was changed: %+v", foreign.Status)
	}
}

func TestPodAddressesAreUniquePerNode(t *testing.T) {
	h := startHarness(t, Config{Nodes: 2})
	names := []string{"a", "b", "c", "d", "e", "f"}
	for i, n := range names {
		h.createPod(makePod(n).node(NodeName(defaultNamePrefix, i%2)).obj())
	}
	seen := map[string]string{}
	for _, n := range names {
		h.eventually(n+" runs", nil, podPhaseIs(h, n, corev1.PodRunning))
		ip := h.getPod(n).Status.PodIP
		if other, dup := seen[ip]; dup {
			t.Errorf("pods %s and %s share %s", n, other, ip)
		}
		seen[ip] = n
	}
}

func TestPodStartDelay(t *testing.T) {
	h := startHarness(t, Config{Nodes: 1, PodStartDelay: 5 * time.Second})
	h.createPod(makePod("slow").node("sim-node-0").obj())
	h.eventually("slow runs", func() { h.clock.Step(500 * time.Millisecond) }, podPhaseIs(h, "slow", corev1.PodRunning))
	start := h.getPod("slow").Status.StartTime.Time
	if start.Sub(testEpoch) < 5*time.Second {
		t.Errorf("pod started %s after it was bound, want at least 5s", start.Sub(testEpoch))
	}
}

func TestCompletePods(t *testing.T) {
	complete := func(pod *corev1.Pod) (int32, time.Duration, bool) {
		switch pod.Labels["outcome"] {
		case "succeed":
			return 0, time.Second, true
		case "fail":
			return 3, 2 * time.Second, true
		}
		return 0, 0, false
	}
	h := startHarness(t, Config{Nodes: 2, CompletePods: complete})
	h.createPod(makePod("ok").node("sim-node-0").label("outcome", "succeed").obj())
	h.createPod(makePod("bad").node("sim-node-1").label("outcome", "fail").containers("a", "b").obj())
	h.createPod(makePod("server").node("sim-node-0").obj())

	step := func() { h.clock.Step(100 * time.Millisecond) }
	h.eventually("ok succeeds", step, podPhaseIs(h, "ok", corev1.PodSucceeded))
	h.eventually("bad fails", step, podPhaseIs(h, "bad", corev1.PodFailed))

	tests := []struct {
		pod, reason, containerReason string
		exitCode                     int32
		runFor                       time.Duration
	}{
		{pod: "ok", reason: "PodCompleted", containerReason: "Completed", exitCode: 0, runFor: time.Second},
		{pod: "bad", reason: "PodFailed", containerReason: "Error", exitCode: 3, runFor: 2 * time.Second},
	}
	for _, tt := range tests {
		st := h.getPod(tt.pod).Status
		for _, ct := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
			if c := findCondition(st.Conditions, ct); c == nil || c.Status != corev1.ConditionFalse || c.Reason != tt.reason {
				t.Errorf("%s: condition %s = %+v, want False %s", tt.pod, ct, c, tt.reason)
			}
		}
		for _, cs := range st.ContainerStatuses {
			term := cs.State.Terminated
			if term == nil || term.ExitCode != tt.exitCode || term.Reason != tt.containerReason || cs.Ready {
				t.Fatalf("%s: container %+v", tt.pod, cs)
			}
			if ran := term.FinishedAt.Sub(term.StartedAt.Time); ran < tt.runFor {
				t.Errorf("%s: container ran %s, want at least %s", tt.pod, ran, tt.runFor)
			}
		}
	}
	if p := h.getPod("server"); p.Status.Phase != corev1.PodRunning {
		t.Errorf("a pod CompletePods declines must keep running, got %s", p.Status.Phase)
	}
}

func TestTerminatingPodIsDeleted(t *testing.T) {
	h := startHarness(t, Config{Nodes: 1})
	h.createPod(makePod("old").node("sim-node-0").deleting(testEpoch).obj())
	h.eventually("old is deleted", nil, func() bool { return h.getPod("old") == nil })

	var deletes []k8stesting.DeleteActionImpl
	for _, a := range h.client.Actions() {
		if d, ok := a.(k8stesting.DeleteActionImpl); ok && d.Resource.Resource == "pods" {
			deletes = append(deletes, d)
		}
	}
	if len(deletes) != 1 {
		t.Fatalf("got %d pod deletes, want 1", len(deletes))
	}
	opts := deletes[0].DeleteOptions
	if deletes[0].Name != "old" || opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds != 0 ||
		opts.Preconditions == nil || *opts.Preconditions.UID != "uid-old" {
		t.Errorf("delete %s with %+v, want grace period 0 and a UID precondition", deletes[0].Name, opts)
	}
}

func TestAddressFreedWhenPodGoes(t *testing.T) {
	h := startHarness(t, Config{Nodes: 1})
	h.createPod(makePod("first").node("sim-node-0").obj())
	h.eventually("first runs", nil, podPhaseIs(h, "first", corev1.PodRunning))
	if err := h.client.CoreV1().Pods("default").Delete(context.Background(), "first", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("the simulator forgets first", nil, func() bool {
		h.sim.mu.Lock()
		defer h.sim.mu.Unlock()
		return len(h.sim.pods) == 0 && h.sim.nodes[0].pods.used == [4]uint64{}
	})
}

func TestLeasesRenewedSpreadOverTheInterval(t *testing.T) {
	h := startHarness(t, Config{Nodes: 10, HeartbeatInterval: 10 * time.Second})
	renewedAt := func(at time.Time) int {
		leases, err := h.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			h.t.Fatal(err)
		}
		n := 0
		for _, l := range leases.Items {
			if l.Spec.RenewTime.Time.Equal(at) {
				n++
			}
		}
		return n
	}
	// Half an interval later, the first half of the nodes have renewed, the others not yet.
	h.clock.Step(5 * time.Second)
	h.eventually("half the leases renew", nil, func() bool { return renewedAt(testEpoch.Add(5*time.Second)) == 5 })
	if n := renewedAt(testEpoch); n != 5 {
		t.Errorf("%d leases still carry the registration time, want 5", n)
	}
	// One interval after registration, all have renewed: the second half now.
	h.clock.Step(5 * time.Second)
	h.eventually("the other half renew", nil, func() bool { return renewedAt(testEpoch.Add(10*time.Second)) == 5 })
	if n := renewedAt(testEpoch.Add(5 * time.Second)); n != 5 {
		t.Errorf("%d leases renewed at 5s, want them untouched at 5", n)
	}
	// A long stall renews everything at once, then spreads out again.
	h.clock.Step(time.Minute)
	at := testEpoch.Add(70 * time.Second)
	h.eventually("all leases renew after a stall", nil, func() bool { return renewedAt(at) == 10 })
}

func findCondition(conditions []corev1.PodCondition, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range conditions {
		if conditions[i].Type == t {
			return &conditions[i]
		}
	}
	return nil
}

func TestCacheDropsManagedFields(t *testing.T) {
	pod := makePod("tracked").node("sim-node-0").obj()
	pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	h := startHarness(t, Config{Nodes: 1}, pod)
	h.eventually("tracked runs", nil, podPhaseIs(h, "tracked", corev1.PodRunning))
	cached, err := h.sim.lister.Pods("default").Get("tracked")
	if err != nil {
		t.Fatal(err)
	}
	if cached.ManagedFields != nil {
		t.Errorf("cached pod keeps managedFields %+v", cached.ManagedFields)
	}
}
