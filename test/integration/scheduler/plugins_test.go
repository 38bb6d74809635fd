package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	st "github.com/skiff-sh/skiff/internal/scheduler/schedtest"
)

// step creates one pod and waits for its outcome before the next step: bound to one of
// wantNodes, or unschedulable with a FailedScheduling message starting with wantMessage.
type step struct {
	pod         *v1.Pod
	wantNodes   []string
	wantMessage string
}

// filterCase is a set of fake nodes, pods already bound to them, and steps.
type filterCase struct {
	name  string
	nodes []*v1.Node
	// bound pods are created with spec.nodeName set, as if they ran there already.
	bound []*v1.Pod
	steps []step
	// check inspects the final placement (node -> pod names).
	check func(t *testing.T, placement map[string][]string)
}

const zoneKey = v1.LabelTopologyZone

func node(name string) *st.NodeWrapper {
	return st.MakeNode().Name(name).Capacity(st.Res{v1.ResourceCPU: "4", v1.ResourceMemory: "8Gi"})
}

func pod(name string) *st.PodWrapper { return st.MakePod().Name(name) }

// preemptionHopeless is the suffix Kubernetes adds when no preemption could help.
func preemptionHopeless(n int) string {
	return fmt.Sprintf(" preemption: 0/%d nodes are available: %d Preemption is not helpful for scheduling.", n, n)
}

func TestFiltersAndScores(t *testing.T) {
	cp := "node-role.kubernetes.io/control-plane"
	webAnti := st.PodAffinityTerm(v1.LabelHostname, "app", "web")
	cases := []filterCase{
		{
			name:  "resources",
			nodes: []*v1.Node{node("res-small").Capacity(st.Res{v1.ResourceCPU: "1", v1.ResourceMemory: "1Gi"}).Obj(), node("res-big").Obj()},
			steps: []step{
				{pod: pod("two-cpus").Req(st.Res{v1.ResourceCPU: "2"}).Obj(), wantNodes: []string{"res-big"}},
				{pod: pod("three-cpus").Req(st.Res{v1.ResourceCPU: "3"}).Obj(), wantMessage: "0/2 nodes are available: 2 Insufficient cpu."},
				{pod: pod("much-memory").Req(st.Res{v1.ResourceMemory: "9Gi"}).Obj(), wantMessage: "0/2 nodes are available: 2 Insufficient memory."},
				// Init containers count as their maximum, not their sum: 1.5 cpu fits the 2 left.
				{pod: pod("init").Req(st.Res{v1.ResourceCPU: "1500m"}).InitReq(st.Res{v1.ResourceCPU: "1500m"}).InitReq(st.Res{v1.ResourceCPU: "1"}).Obj(), wantNodes: []string{"res-big"}},
			},
		},
		{
			name:  "pod count",
			nodes: []*v1.Node{node("pods-one").Capacity(st.Res{v1.ResourcePods: "1"}).Obj()},
			bound: []*v1.Pod{pod("occupant").Node("pods-one").Req(st.Res{v1.ResourceCPU: "100m"}).Obj()},
			steps: []step{{pod: pod("second").Req(st.Res{v1.ResourceCPU: "100m"}).Obj(), wantMessage: "0/1 nodes are available: 1 Too many pods."}},
		},
		{
			name: "node selector and affinity",
			nodes: []*v1.Node{
				node("sel-ssd").Label("disktype", "ssd").Label(zoneKey, "z1").Obj(),
				node("sel-hdd").Label("disktype", "hdd").Label(zoneKey, "z2").Obj(),
			},
			steps: []step{
				{pod: pod("wants-ssd").NodeSelector(map[string]string{"disktype": "ssd"}).Req(st.Res{v1.ResourceCPU: "100m"}).Obj(), wantNodes: []string{"sel-ssd"}},
				{pod: pod("wants-z2").NodeAffinityIn(zoneKey, "z2").Req(st.Res{v1.ResourceCPU: "100m"}).Obj(), wantNodes: []string{"sel-hdd"}},
				{pod: pod("wants-nvme").NodeSelector(map[string]string{"disktype": "nvme"}).Req(st.Res{v1.ResourceCPU: "100m"}).Obj(),
					wantMessage: "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector." + preemptionHopeless(2)},
			},
		},
		{
			name: "taints and tolerations",
			nodes: []*v1.Node{
				node("taint-cp").Taint(cp, "", v1.TaintEffectNoSchedule).Obj(),
				node("taint-gpu").Taint("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj(),
			},
			steps: []step{
				{pod: pod("intolerant").Req(st.Res{v1.ResourceCPU: "100m"}).Obj(),
					wantMessage: "0/2 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 1 node(s) had untolerated taint {" + cp + ": }." + preemptionHopeless(2)},
				{pod: pod("tolerates-cp").Toleration(cp, v1.TolerationOpExists, "", v1.TaintEffectNoSchedule).Req(st.Res{v1.ResourceCPU: "100m"}).Obj(), wantNodes: []string{"taint-cp"}},
				{pod: pod("tolerates-gpu").Toleration("dedicated", v1.TolerationOpEqual, "gpu", "").Req(st.Res{v1.ResourceCPU: "100m"}).Obj(), wantNodes: []string{"taint-gpu"}},
			},
		},
		{
			name:  "host ports",
			nodes: []*v1.Node{node("port-a").Obj(), node("port-b").Obj()},
			steps: []step{
				{pod: pod("http-1").HostPort("", v1.ProtocolTCP, 8080).Obj(), wantNodes: []string{"port-a", "port-b"}},
				{pod: pod("http-2").HostPort("", v1.ProtocolTCP, 8080).Obj(), wantNodes: []string{"port-a", "port-b"}},
				{pod: pod("http-3").HostPort("", v1.ProtocolTCP, 8080).Obj(),
					wantMessage: "0/2 nodes are available: 2 node(s) didn't have free ports for the requested pod ports."},
				// Another protocol on the same port is free.
				{pod: pod("dns").HostPort("", v1.ProtocolUDP, 8080).Obj(), wantNodes: []string{"port-a", "port-b"}},
			},
			check: func(t *testing.T, placement map[string][]string) {
				for n, pods := range placement {
					if slices.Contains(pods, "http-1") && slices.Contains(pods, "http-2") {
						t.Errorf("http-1 and http-2 share node %s and host port 8080", n)
					}
				}
			},
		},
		{
			name:  "inter-pod affinity and anti-affinity",
			nodes: []*v1.Node{node("ipa-1").Obj(), node("ipa-2").Obj(), node("ipa-3").Obj()},
			bound: []*v1.Pod{pod("db").Node("ipa-2").Label("app", "db").Req(st.Res{v1.ResourceCPU: "100m"}).Obj()},
			steps: []step{
				{pod: pod("web-1").Label("app", "web").PodAntiAffinity(webAnti).Req(st.Res{v1.ResourceCPU: "100m"}).Obj(), wantNodes: []string{"ipa-1", "ipa-2", "ipa-3"}},
				{pod: pod("web-2").Label("app", "web").PodAntiAffinity(webAnti).Req(st.Res{v1.ResourceCPU: "100m"}).Obj(), wantNodes: []string{"ipa-1", "ipa-2", "ipa-3"}},
				{pod: pod("web-3").Label("app", "web").PodAntiAffinity(webAnti).Req(st.Res{v1.ResourceCPU: "100m"}).Obj(), wantNodes: []string{"ipa-1", "ipa-2", "ipa-3"}},
				{pod: pod("web-4").Label("app", "web").PodAntiAffinity(webAnti).Req(st.Res{v1.ResourceCPU: "100m"}).Obj(),
					wantMessage: "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules."},
				{pod: pod("near-db").PodAffinity(st.PodAffinityTerm(v1.LabelHostname, "app", "db")).Req(st.Res{v1.ResourceCPU: "100m"}).Obj(), wantNodes: []string{"ipa-2"}},
				{pod: pod("near-cache").PodAffinity(st.PodAffinityTerm(v1.LabelHostname, "app", "cache")).Req(st.Res{v1.ResourceCPU: "100m"}).Obj(),
					wantMessage: "0/3 nodes are available: 3 node(s) didn't match pod affinity rules."},
			},
			check: func(t *testing.T, placement map[string][]string) {
				for n, pods := range placement {
					web := 0
					for _, p := range pods {
						if strings.HasPrefix(p, "web-") {
							web++
						}
					}
					if web > 1 {
						t.Errorf("node %s runs %d web pods despite required anti-affinity: %v", n, web, pods)
					}
				}
			},
		},
		{
			name: "topology spread",
			nodes: []*v1.Node{
				node("spread-a1").Label(zoneKey, "za").Obj(), node("spread-a2").Label(zoneKey, "za").Obj(),
				node("spread-b1").Label(zoneKey, "zb").Obj(),
			},
			steps: func() []step {
				var out []step
				for i := range 6 {
					out = append(out, step{pod: pod(fmt.Sprintf("spread-%d", i)).Label("app", "spread").
						Spread(1, zoneKey, v1.DoNotSchedule, "app", "spread", nil).Req(st.Res{v1.ResourceCPU: "100m"}).Obj(),
						wantNodes: []string{"spread-a1", "spread-a2", "spread-b1"}})
				}
				// Pinned to zone za by its node selector: by default (nodeAffinityPolicy Honor)
				// only zones of matching nodes count as domains, so za alone has no skew.
				out = append(out, step{pod: pod("spread-za-only").Label("app", "spread").
					Spread(1, zoneKey, v1.DoNotSchedule, "app", "spread", nil).NodeSelector(map[string]string{zoneKey: "za"}).Req(st.Res{v1.ResourceCPU: "100m"}).Obj(),
					wantNodes: []string{"spread-a1", "spread-a2"}})
				return out
			}(),
			check: func(t *testing.T, placement map[string][]string) {
				za := len(placement["spread-a1"]) + len(placement["spread-a2"])
				zb := len(placement["spread-b1"])
				// Six pods spread by maxSkew 1 end 3/3; the seventh honours its node selector,
				// whose zone alone makes up the domains it is counted against.
				if za != 4 || zb != 3 {
					t.Errorf("zones za=%d zb=%d pods, want 4 and 3 (placement %v)", za, zb, placement)
				}
			},
		},
		{
			name:  "least allocated scoring",
			nodes: []*v1.Node{node("score-busy").Obj(), node("score-idle").Obj()},
			bound: []*v1.Pod{pod("hog").Node("score-busy").Req(st.Res{v1.ResourceCPU: "3", v1.ResourceMemory: "6Gi"}).Obj()},
			steps: []step{{pod: pod("newcomer").Req(st.Res{v1.ResourceCPU: "500m", v1.ResourceMemory: "512Mi"}).Obj(), wantNodes: []string{"score-idle"}}},
		},
		{
			name:  "preferred node affinity scoring",
			nodes: []*v1.Node{node("pref-plain").Obj(), node("pref-fast").Label("fast", "yes").Obj()},
			steps: []step{{pod: pod("likes-fast").PreferredNodeAffinityIn(100, "fast", "yes").Req(st.Res{v1.ResourceCPU: "100m"}).Obj(), wantNodes: []string{"pref-fast"}}},
		},
		{
			name:  "PreferNoSchedule scoring",
			nodes: []*v1.Node{node("soft-tainted").Taint("flaky", "true", v1.TaintEffectPreferNoSchedule).Obj(), node("soft-clean").Obj()},
			steps: []step{{pod: pod("avoids-flaky").Req(st.Res{v1.ResourceCPU: "100m"}).Obj(), wantNodes: []string{"soft-clean"}}},
		},
		{
			name:  "unschedulable node",
			nodes: []*v1.Node{node("cordoned").Unschedulable().Obj()},
			steps: []step{{pod: pod("nowhere").Req(st.Res{v1.ResourceCPU: "100m"}).Obj(),
				wantMessage: "0/1 nodes are available: 1 node(s) were unschedulable." + preemptionHopeless(1)}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.createNodes(tc.nodes...)
			for _, p := range tc.bound {
				e.createPod(p)
			}
			for _, s := range tc.steps {
				e.createPod(s.pod)
				if s.wantMessage != "" {
					msg := e.waitUnschedulable(s.pod.Name)
					if !strings.HasPrefix(msg, s.wantMessage) {
						t.Fatalf("pod %s: PodScheduled message\n  %q\nwant prefix\n  %q", s.pod.Name, msg, s.wantMessage)
					}
					ev := e.waitEvent(s.pod.Name, "FailedScheduling")
					if ev.Message != msg || ev.Type != v1.EventTypeWarning || ev.Source.Component != "default-scheduler" {
						t.Fatalf("pod %s: FailedScheduling event %s %q from %q, want Warning %q from default-scheduler", s.pod.Name, ev.Type, ev.Message, ev.Source.Component, msg)
					}
					continue
				}
				got := e.waitBound(s.pod.Name)
				if !slices.Contains(s.wantNodes, got) {
					t.Fatalf("pod %s bound to %s, want one of %v", s.pod.Name, got, s.wantNodes)
				}
				ev := e.waitEvent(s.pod.Name, "Scheduled")
				if want := fmt.Sprintf("Successfully assigned %s/%s to %s", e.ns, s.pod.Name, got); ev.Message != want {
					t.Fatalf("Scheduled event %q, want %q", ev.Message, want)
				}
			}
			if tc.check != nil {
				tc.check(t, e.podsOn())
			}
		})
	}
}
