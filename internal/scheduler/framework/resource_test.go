package framework_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/internal/scheduler/framework"
	st "github.com/skiff-sh/skiff/internal/scheduler/schedtest"
)

func TestPodRequests(t *testing.T) {
	tests := []struct {
		name            string
		pod             *v1.Pod
		wantCPU, wantMB int64
		nonZero         bool
	}{
		{"sum of containers", st.MakePod().Req(st.Res{"cpu": "100m", "memory": "100Mi"}).Req(st.Res{"cpu": "200m", "memory": "50Mi"}).Obj(), 300, 150, false},
		{"init container larger than containers", st.MakePod().Req(st.Res{"cpu": "100m"}).InitReq(st.Res{"cpu": "1"}).Obj(), 1000, 0, false},
		{"init container smaller than containers", st.MakePod().Req(st.Res{"cpu": "2"}).InitReq(st.Res{"cpu": "1"}).Obj(), 2000, 0, false},
		{"overhead added", st.MakePod().Req(st.Res{"cpu": "1"}).Overhead(st.Res{"cpu": "250m", "memory": "10Mi"}).Obj(), 1250, 10, false},
		{"sidecar adds to containers", st.MakePod().Req(st.Res{"cpu": "1"}).SidecarReq(st.Res{"cpu": "500m"}).Obj(), 1500, 0, false},
		{"init after sidecar runs beside it", st.MakePod().Req(st.Res{"cpu": "100m"}).SidecarReq(st.Res{"cpu": "500m"}).InitReq(st.Res{"cpu": "1"}).Obj(), 1500, 0, false},
		{"init before sidecar does not", st.MakePod().Req(st.Res{"cpu": "100m"}).InitReq(st.Res{"cpu": "1"}).SidecarReq(st.Res{"cpu": "500m"}).Obj(), 1000, 0, false},
		{"non-zero defaults for scoring", st.MakePod().Req(st.Res{}).Obj(), 100, 200, true},
		{"non-zero keeps explicit requests", st.MakePod().Req(st.Res{"cpu": "300m"}).Obj(), 300, 200, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := framework.PodRequests(tc.pod, tc.nonZero)
			if r.MilliCPU != tc.wantCPU || r.Memory != tc.wantMB*1024*1024 {
				t.Fatalf("got cpu=%dm mem=%d, want cpu=%dm mem=%dMi", r.MilliCPU, r.Memory, tc.wantCPU, tc.wantMB)
			}
		})
	}
}

// resizing is a running pod whose spec asks for spec while its node allocated and applied held, with
// the PodResizePending condition's reason (empty: none).
func resizing(spec, held st.Res, pending string) *v1.Pod {
	pod := st.MakePod().Name("r").Req(spec).Obj()
	holds := st.MakePod().Req(held).Obj().Spec.Containers[0].Resources.Requests
	pod.Status.ContainerStatuses = []v1.ContainerStatus{{
		Name: pod.Spec.Containers[0].Name, AllocatedResources: holds, Resources: &v1.ResourceRequirements{Requests: holds},
	}}
	if pending != "" {
		pod.Status.Conditions = []v1.PodCondition{{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: pending}}
	}
	return pod
}

func TestPodRequestsDuringResize(t *testing.T) {
	tests := []struct {
		name            string
		pod             *v1.Pod
		wantCPU, wantMB int64
		specCPU         int64
	}{
		{"growing: the spec", resizing(st.Res{"cpu": "2", "memory": "100Mi"}, st.Res{"cpu": "1", "memory": "100Mi"}, ""), 2000, 100, 2000},
		{"deferred: the spec", resizing(st.Res{"cpu": "2", "memory": "100Mi"}, st.Res{"cpu": "1", "memory": "100Mi"}, v1.PodReasonDeferred), 2000, 100, 2000},
		{"shrinking: what it holds until its node took it in", resizing(st.Res{"cpu": "500m", "memory": "50Mi"}, st.Res{"cpu": "1", "memory": "100Mi"}, ""), 1000, 100, 500},
		{"infeasible: what it holds", resizing(st.Res{"cpu": "64", "memory": "100Mi"}, st.Res{"cpu": "1", "memory": "100Mi"}, v1.PodReasonInfeasible), 1000, 100, 64000},
		{"each resource on its own", resizing(st.Res{"cpu": "2", "memory": "50Mi"}, st.Res{"cpu": "1", "memory": "100Mi"}, ""), 2000, 100, 2000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := framework.PodRequests(tc.pod, false)
			if r.MilliCPU != tc.wantCPU || r.Memory != tc.wantMB*1024*1024 {
				t.Fatalf("got cpu=%dm mem=%d, want cpu=%dm mem=%dMi", r.MilliCPU, r.Memory, tc.wantCPU, tc.wantMB)
			}
			if got := framework.PodSpecRequests(tc.pod, false).MilliCPU; got != tc.specCPU {
				t.Fatalf("spec alone: cpu=%dm, want %dm", got, tc.specCPU)
			}
		})
	}
	shrunk := resizing(st.Res{"cpu": "500m"}, st.Res{"cpu": "500m"}, "")
	if !framework.RequestsShrank(resizing(st.Res{"cpu": "500m"}, st.Res{"cpu": "1"}, ""), shrunk) {
		t.Error("a shrink taken in by the node is not seen")
	}
	if framework.RequestsShrank(shrunk, shrunk) {
		t.Error("an unchanged pod shrank")
	}
}

func TestPodRequestsExtended(t *testing.T) {
	r := framework.PodRequests(st.MakePod().Req(st.Res{"example.com/gpu": "2", "hugepages-2Mi": "4Mi", "ephemeral-storage": "1Gi"}).Obj(), false)
	if r.ScalarResources["example.com/gpu"] != 2 || r.ScalarResources["hugepages-2Mi"] != 4*1024*1024 || r.EphemeralStorage != 1<<30 {
		t.Fatalf("unexpected %+v", r)
	}
}

func TestIsScalarResourceName(t *testing.T) {
	for name, want := range map[v1.ResourceName]bool{
		"cpu": false, "memory": false, "example.com/gpu": true, "nvidia.com/gpu": true,
		"kubernetes.io/foo": false, "node.kubernetes.io/bar": false, "hugepages-1Gi": true, "requests.example.com/x": false,
	} {
		if got := framework.IsScalarResourceName(name); got != want {
			t.Errorf("%s: got %v want %v", name, got, want)
		}
	}
}

func TestNodeInfoAddRemove(t *testing.T) {
	p1 := st.MakePod().Name("a").Req(st.Res{"cpu": "1"}).HostPort("", "", 80).Obj()
	p2 := st.MakePod().Name("b").Req(st.Res{"cpu": "2"}).PodAntiAffinity(st.PodAffinityTerm("zone", "app", "x")).Obj()
	ni := framework.NewNodeInfo(p1, p2)
	if ni.Requested.MilliCPU != 3000 || len(ni.PodsWithRequiredAntiAffinity) != 1 || !ni.UsedPorts.Conflicts("10.0.0.1", "TCP", 80) {
		t.Fatalf("after add: %+v", ni)
	}
	clone := ni.Clone()
	if err := ni.RemovePod(p1); err != nil {
		t.Fatal(err)
	}
	if ni.Requested.MilliCPU != 2000 || ni.UsedPorts.Conflicts("", "TCP", 80) {
		t.Fatalf("after remove: cpu %d ports %v", ni.Requested.MilliCPU, ni.UsedPorts)
	}
	if clone.Requested.MilliCPU != 3000 || len(clone.Pods) != 2 {
		t.Fatal("clone changed with the original")
	}
	if err := ni.RemovePod(p1); err == nil {
		t.Fatal("removing a missing pod must fail")
	}
}

func TestHostPortConflicts(t *testing.T) {
	h := framework.HostPortSet{}
	h.Add("10.0.0.1", "TCP", 8080)
	tests := []struct {
		ip, proto string
		port      int32
		want      bool
	}{
		{"10.0.0.1", "TCP", 8080, true},
		{"10.0.0.2", "TCP", 8080, false},
		{"0.0.0.0", "TCP", 8080, true},
		{"", "TCP", 8080, true},
		{"10.0.0.1", "UDP", 8080, false},
		{"10.0.0.1", "TCP", 8081, false},
	}
	for _, tc := range tests {
		if got := h.Conflicts(tc.ip, tc.proto, tc.port); got != tc.want {
			t.Errorf("%s/%s/%d: got %v want %v", tc.ip, tc.proto, tc.port, got, tc.want)
		}
	}
}

// The node fields filters read without following the Node pointer follow every SetNode, survive
// a Clone and go with RemoveNode; a clone's resources are its own.
func TestNodeInfoNodeFields(t *testing.T) {
	ni := framework.NewNodeInfo()
	if ni.Unschedulable() || len(ni.Taints()) != 0 {
		t.Fatal("a NodeInfo without a node is cordoned or tainted")
	}
	ni.SetNode(st.MakeNode().Name("n").Capacity(st.Res{"cpu": "4", "pods": "10"}).Taint("gpu", "yes", v1.TaintEffectNoSchedule).Unschedulable().Obj())
	if !ni.Unschedulable() || len(ni.Taints()) != 1 || ni.Taints()[0].Key != "gpu" || ni.Allocatable.MilliCPU != 4000 || ni.Allocatable.AllowedPodNumber != 10 {
		t.Fatalf("after SetNode: unschedulable %v taints %v allocatable %+v", ni.Unschedulable(), ni.Taints(), ni.Allocatable)
	}
	clone := ni.Clone()
	ni.SetNode(st.MakeNode().Name("n").Capacity(st.Res{"cpu": "8"}).Obj())
	if ni.Unschedulable() || len(ni.Taints()) != 0 || ni.Allocatable.MilliCPU != 8000 {
		t.Fatalf("after an uncordon and untaint: unschedulable %v taints %v cpu %d", ni.Unschedulable(), ni.Taints(), ni.Allocatable.MilliCPU)
	}
	if !clone.Unschedulable() || len(clone.Taints()) != 1 || clone.Allocatable.MilliCPU != 4000 {
		t.Fatal("the clone changed with the original's node")
	}
	ni.RemoveNode()
	if ni.Unschedulable() || ni.Taints() != nil || ni.Node() != nil {
		t.Fatal("RemoveNode left the node's fields")
	}
}

// Label answers the well-known topology keys from the NodeInfo and any other key from the node,
// and follows the node's labels through SetNode, Clone and RemoveNode.
func TestNodeInfoLabel(t *testing.T) {
	ni := framework.NewNodeInfo()
	if _, ok := ni.Label(v1.LabelHostname); ok {
		t.Fatal("a NodeInfo without a node has a hostname")
	}
	if _, ok := ni.Label("rack"); ok {
		t.Fatal("a NodeInfo without a node has a label")
	}
	ni.SetNode(st.MakeNode().Name("n").Label(v1.LabelHostname, "n").Label(v1.LabelTopologyZone, "z1").Label("rack", "r7").Obj())
	want := map[string]string{v1.LabelHostname: "n", v1.LabelTopologyZone: "z1", "rack": "r7"}
	for _, key := range []string{v1.LabelHostname, v1.LabelTopologyZone, v1.LabelTopologyRegion, "rack", "row"} {
		v, ok := ni.Label(key)
		if w, has := want[key]; v != w || ok != has {
			t.Errorf("Label(%s) = %q, %v; want %q, %v", key, v, ok, w, has)
		}
	}
	clone := ni.Clone()
	ni.SetNode(st.MakeNode().Name("n").Label(v1.LabelTopologyRegion, "r").Obj())
	if _, ok := ni.Label(v1.LabelTopologyZone); ok {
		t.Error("a removed zone label is still answered")
	}
	if v, ok := ni.Label(v1.LabelTopologyRegion); v != "r" || !ok {
		t.Errorf("region %q %v after relabel", v, ok)
	}
	if v, ok := clone.Label(v1.LabelTopologyZone); v != "z1" || !ok {
		t.Errorf("the clone's zone %q %v changed with the original", v, ok)
	}
	ni.RemoveNode()
	if _, ok := ni.Label(v1.LabelTopologyRegion); ok {
		t.Error("RemoveNode left the region label")
	}
}
