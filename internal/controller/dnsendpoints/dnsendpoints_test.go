package dnsendpoints

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clienttesting "k8s.io/client-go/testing"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

func kubeDNS() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ServiceNamespace, Name: ServiceName, UID: "svc-uid"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.43.0.10", Ports: []corev1.ServicePort{
			{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
			{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
		}},
	}
}

type nodeBuilder struct{ n *corev1.Node }

func node(name string) nodeBuilder {
	return nodeBuilder{&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}}
}

func (b nodeBuilder) ip(addrs ...string) nodeBuilder {
	for _, a := range addrs {
		b.n.Status.Addresses = append(b.n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a})
	}
	b.n.Status.Addresses = append(b.n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: b.n.Name})
	return b
}

func (b nodeBuilder) ready(ok bool) nodeBuilder {
	s := corev1.ConditionFalse
	if ok {
		s = corev1.ConditionTrue
	}
	b.n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: s}}
	return b
}

func (b nodeBuilder) role(r string) nodeBuilder {
	b.n.Labels["node-role.kubernetes.io/"+r] = ""
	return b
}

func (b nodeBuilder) taint(key string) nodeBuilder {
	b.n.Spec.Taints = append(b.n.Spec.Taints, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule})
	return b
}

func (b nodeBuilder) obj() *corev1.Node { return b.n }

// describe prints a slice as "name type: addr@node(ready) ... ports".
func describe(s *discoveryv1.EndpointSlice) string {
	var parts []string
	for _, e := range s.Endpoints {
		parts = append(parts, e.Addresses[0]+"@"+*e.NodeName+map[bool]string{true: "", false: "(notready)"}[*e.Conditions.Ready])
	}
	for _, p := range s.Ports {
		parts = append(parts, *p.Name+"/"+string(*p.Protocol)+":"+itoa(*p.Port))
	}
	return s.Name + " " + string(s.AddressType) + ": " + strings.Join(parts, " ")
}

func itoa(i int32) string { return strconv.Itoa(int(i)) }

func TestDesired(t *testing.T) {
	tests := []struct {
		name  string
		nodes []*corev1.Node
		want  []string
	}{
		{"no nodes: no slice", nil, nil},
		{"workers, sorted by name, ready from the node", []*corev1.Node{
			node("b").ip("172.31.0.2").ready(false).role("worker").obj(),
			node("a").ip("172.31.0.1").ready(true).obj(),
		}, []string{"kube-dns-ipv4 IPv4: 172.31.0.1@a 172.31.0.2@b(notready) dns/UDP:53 dns-tcp/TCP:53"}},
		{"control-plane-only and etcd-only nodes serve no DNS", []*corev1.Node{
			node("cp").ip("172.31.0.1").ready(true).role("control-plane").obj(),
			node("etcd").ip("172.31.0.2").ready(true).role("etcd").obj(),
			node("tainted").ip("172.31.0.3").ready(true).taint("node-role.kubernetes.io/control-plane").obj(),
			node("all").ip("172.31.0.4").ready(true).role("control-plane").role("etcd").role("worker").obj(),
		}, []string{"kube-dns-ipv4 IPv4: 172.31.0.4@all dns/UDP:53 dns-tcp/TCP:53"}},
		{"loopback and unusable addresses are skipped", []*corev1.Node{
			node("lo").ip("127.0.0.1").ready(true).obj(),
			node("bad").ip("not-an-ip").ready(true).obj(),
			node("none").ready(true).obj(),
		}, nil},
		{"dual stack: a slice per family, first address of each", []*corev1.Node{
			node("a").ip("172.31.0.1", "fd00::1", "172.31.0.9").ready(true).obj(),
		}, []string{"kube-dns-ipv4 IPv4: 172.31.0.1@a dns/UDP:53 dns-tcp/TCP:53", "kube-dns-ipv6 IPv6: fd00::1@a dns/UDP:53 dns-tcp/TCP:53"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, s := range Desired(kubeDNS(), tt.nodes, nil) {
				got = append(got, describe(s))
				if s.Labels[discoveryv1.LabelServiceName] != ServiceName || s.Labels[discoveryv1.LabelManagedBy] != ManagedBy ||
					len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != "svc-uid" {
					t.Errorf("slice metadata %+v", s.ObjectMeta)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// With DNS on every node, a large cluster's endpoints span several slices of at most
// MaxEndpointsPerSlice; a node joining or leaving rewrites the one slice that holds it.
func TestDesiredSplitsAndKeepsNodesInPlace(t *testing.T) {
	svc := kubeDNS()
	nodes := func(names ...int) []*corev1.Node {
		var out []*corev1.Node
		for _, i := range names {
			out = append(out, node(fmt.Sprintf("n%04d", i)).ip(fmt.Sprintf("172.31.%d.%d", i/250, i%250+1)).ready(true).obj())
		}
		return out
	}
	count := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	summary := func(ss []*discoveryv1.EndpointSlice) []string {
		var out []string
		for _, s := range ss {
			out = append(out, fmt.Sprintf("%s:%d", s.Name, len(s.Endpoints)))
		}
		return out
	}
	first := Desired(svc, nodes(count(250)...), nil)
	if got := summary(first); !slices.Equal(got, []string{"kube-dns-ipv4:100", "kube-dns-ipv4-2:100", "kube-dns-ipv4-3:50"}) {
		t.Fatalf("250 nodes: %v", got)
	}
	if n := *first[1].Endpoints[0].NodeName; n != "n0100" {
		t.Errorf("second slice starts at %s, want n0100 (nodes by name)", n)
	}
	// n0005 (in the first slice) leaves, n9999 joins: it takes the free place in the first slice.
	next := append(nodes(slices.DeleteFunc(count(250), func(i int) bool { return i == 5 })...), nodes(9999)...)
	second := Desired(svc, next, first)
	ch := Plan(second, first)
	var updated []string
	for _, s := range ch.Update {
		updated = append(updated, s.Name)
	}
	if len(ch.Create) != 0 || len(ch.Delete) != 0 || !slices.Equal(updated, []string{"kube-dns-ipv4"}) {
		t.Fatalf("plan after one node replaced another: create %d, update %v, delete %v; want only kube-dns-ipv4 updated", len(ch.Create), updated, ch.Delete)
	}
	// Past the last slice's room a new slice comes; a slice whose nodes all left goes.
	third := Desired(svc, nodes(append(count(100), 300, 301, 302)...), second)
	if got := summary(third); !slices.Equal(got, []string{"kube-dns-ipv4:100", "kube-dns-ipv4-2:3"}) {
		t.Fatalf("after most nodes left: %v", got)
	}
	ch = Plan(third, second)
	if !slices.Equal(ch.Delete, []string{"kube-dns-ipv4-3"}) {
		t.Errorf("delete %v, want the emptied third slice", ch.Delete)
	}
	for _, s := range Desired(svc, nodes(count(5000)...), nil) {
		if len(s.Endpoints) > MaxEndpointsPerSlice {
			t.Fatalf("slice %s has %d endpoints", s.Name, len(s.Endpoints))
		}
	}
}

func TestPlan(t *testing.T) {
	svc := kubeDNS()
	one := Desired(svc, []*corev1.Node{node("a").ip("172.31.0.1").ready(true).obj()}, nil)
	two := Desired(svc, []*corev1.Node{node("a").ip("172.31.0.1").ready(true).obj(), node("b").ip("172.31.0.2").ready(true).obj()}, nil)
	stale := one[0].DeepCopy()
	stale.ResourceVersion = "7"
	wrongType := one[0].DeepCopy()
	wrongType.AddressType = discoveryv1.AddressTypeFQDN
	orphanV6 := one[0].DeepCopy()
	orphanV6.Name = "kube-dns-ipv6"
	tests := []struct {
		name              string
		desired, existing []*discoveryv1.EndpointSlice
		create, update    []string
		del               []string
	}{
		{"missing: create", one, nil, []string{"kube-dns-ipv4"}, nil, nil},
		{"equal: nothing", one, []*discoveryv1.EndpointSlice{one[0].DeepCopy()}, nil, nil, nil},
		{"a node joined: update", two, []*discoveryv1.EndpointSlice{stale}, nil, []string{"kube-dns-ipv4@7"}, nil},
		{"address type changed: replace", one, []*discoveryv1.EndpointSlice{wrongType}, []string{"kube-dns-ipv4"}, nil, []string{"kube-dns-ipv4"}},
		{"no longer wanted: delete", one, []*discoveryv1.EndpointSlice{one[0].DeepCopy(), orphanV6}, nil, nil, []string{"kube-dns-ipv6"}},
		{"no nodes: delete all", nil, []*discoveryv1.EndpointSlice{one[0].DeepCopy()}, nil, nil, []string{"kube-dns-ipv4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := Plan(tt.desired, tt.existing)
			var create, update []string
			for _, s := range ch.Create {
				create = append(create, s.Name)
			}
			for _, s := range ch.Update {
				update = append(update, s.Name+"@"+s.ResourceVersion)
			}
			if !slices.Equal(create, tt.create) || !slices.Equal(update, tt.update) || !slices.Equal(ch.Delete, tt.del) {
				t.Errorf("plan create %v update %v delete %v, want %v %v %v", create, update, ch.Delete, tt.create, tt.update, tt.del)
			}
		})
	}
	if stale.Endpoints[0].Addresses[0] != "172.31.0.1" || len(stale.Endpoints) != 1 {
		t.Error("Plan mutated an existing slice")
	}
}

func TestSync(t *testing.T) {
	nodeA := node("a").ip("172.31.0.1").ready(true).obj()
	svc := kubeDNS()
	tests := []struct {
		name  string
		objs  []runtime.Object
		want  []string
		check func(t *testing.T, writes []clienttesting.Action)
	}{
		{"creates the slice", []runtime.Object{svc, nodeA}, []string{"create endpointslices kube-dns-ipv4"}, func(t *testing.T, w []clienttesting.Action) {
			s := w[0].(clienttesting.CreateAction).GetObject().(*discoveryv1.EndpointSlice)
			if got := describe(s); got != "kube-dns-ipv4 IPv4: 172.31.0.1@a dns/UDP:53 dns-tcp/TCP:53" {
				t.Errorf("created %s", got)
			}
		}},
		{"no service: nothing", []runtime.Object{nodeA}, nil, nil},
		{"in sync: nothing", []runtime.Object{svc, nodeA, Desired(svc, []*corev1.Node{nodeA}, nil)[0]}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := ctrltest.NewEnv(tt.objs...)
			c, err := New(env.Deps)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range tt.objs {
				switch o := o.(type) {
				case *corev1.Service:
					ctrltest.Seed(t, env.Factory.Core().V1().Services().Informer(), o)
				case *corev1.Node:
					ctrltest.Seed(t, env.Factory.Core().V1().Nodes().Informer(), o)
				case *discoveryv1.EndpointSlice:
					ctrltest.Seed(t, env.Factory.Discovery().V1().EndpointSlices().Informer(), o)
				}
			}
			if err := c.Sync(context.Background(), key); err != nil {
				t.Fatal(err)
			}
			writes := env.Writes()
			if got := ctrltest.Describe(writes); !slices.Equal(got, tt.want) {
				t.Fatalf("actions %q, want %q", got, tt.want)
			}
			if tt.check != nil {
				tt.check(t, writes)
			}
		})
	}
}

// Heartbeats do not recompute the slices; readiness, addresses, roles and deletion do.
func TestNodeUpdateKicksOnlyForWhatTheSlicesUse(t *testing.T) {
	base := node("a").ip("172.31.0.1").ready(true).obj()
	tests := []struct {
		name   string
		change func(n *corev1.Node)
		want   bool
	}{
		{"heartbeat", func(n *corev1.Node) { n.Status.Conditions[0].LastHeartbeatTime = metav1.Now() }, false},
		{"not ready", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }, true},
		{"address", func(n *corev1.Node) { n.Status.Addresses[0].Address = "172.31.0.2" }, true},
		{"control-plane only", func(n *corev1.Node) { n.Labels = map[string]string{roleLabelPrefix + "control-plane": ""} }, true},
		{"deletion", func(n *corev1.Node) { n.DeletionTimestamp = &metav1.Time{} }, true},
	}
	for _, tt := range tests {
		n := base.DeepCopy()
		tt.change(n)
		kicked := false
		ctrlutil.OnNodeUpdate(slicesInputsChanged, func(any) { kicked = true })(base, n)
		if kicked != tt.want {
			t.Errorf("%s: kicked = %v, want %v", tt.name, kicked, tt.want)
		}
	}
}
