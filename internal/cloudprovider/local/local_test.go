package local

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-sh/skiff/internal/cloudprovider"
)

type nb struct{ n *corev1.Node }

func mkNode(name, ip string) nb {
	return nb{&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Status: corev1.NodeStatus{
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		}}}
}
func (b nb) label(k, v string) nb { b.n.Labels[k] = v; return b }
func (b nb) notReady() nb         { b.n.Status.Conditions[0].Status = corev1.ConditionFalse; return b }
func (b nb) external(ip string) nb {
	b.n.Status.Addresses = append(b.n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: ip})
	return b
}

type sb struct{ s *corev1.Service }

func mkSvc(name string, age time.Duration, ports ...int32) sb {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name),
		CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(-age))},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	for _, p := range ports {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Port: p})
	}
	return sb{s}
}
func (b sb) udp() sb { b.s.Spec.Ports[0].Protocol = corev1.ProtocolUDP; return b }
func (b sb) at(ips ...string) sb {
	for _, ip := range ips {
		b.s.Status.LoadBalancer.Ingress = append(b.s.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
	}
	return b
}
func (b sb) class(c string) sb { b.s.Spec.LoadBalancerClass = &c; return b }

func TestAssign(t *testing.T) {
	n1, n2, n3 := mkNode("n1", "172.31.5.2").n, mkNode("n2", "172.31.5.3").n, mkNode("n3", "172.31.5.4").n
	tests := []struct {
		name    string
		svc     *corev1.Service
		nodes   []*corev1.Node
		others  []*corev1.Service
		want    string // ingress IPs, space-separated
		wantErr string
	}{
		{name: "every ready node, sorted by address", svc: mkSvc("a", 0, 80).s, nodes: []*corev1.Node{n3, n1, n2}, want: "172.31.5.2 172.31.5.3 172.31.5.4"},
		{name: "external address preferred", svc: mkSvc("a", 0, 80).s, nodes: []*corev1.Node{mkNode("n1", "172.31.5.2").external("172.31.9.2").n}, want: "172.31.9.2"},
		{name: "not ready, excluded, loopback-only left out",
			svc: mkSvc("a", 0, 80).s, nodes: []*corev1.Node{n1, mkNode("n2", "172.31.5.3").notReady().n, mkNode("n3", "172.31.5.4").label(ExcludeLabel, "").n,
				mkNode("n4", "127.0.0.1").n}, want: "172.31.5.2"},
		{name: "only the enablelb-labelled nodes when any is", svc: mkSvc("a", 0, 80).s,
			nodes: []*corev1.Node{n1, mkNode("n2", "172.31.5.3").label(EnableLBLabel, "true").n}, want: "172.31.5.3"},
		{name: "an older balancer keeps its port", svc: mkSvc("new", 0, 80).s, nodes: []*corev1.Node{n1, n2},
			others: []*corev1.Service{mkSvc("old", time.Hour, 80).at("172.31.5.2").s}, want: "172.31.5.3"},
		{name: "a younger one does not take it away", svc: mkSvc("old", time.Hour, 80).s, nodes: []*corev1.Node{n1},
			others: []*corev1.Service{mkSvc("new", 0, 80).at("172.31.5.2").s}, want: "172.31.5.2"},
		{name: "other port or protocol: no clash", svc: mkSvc("new", 0, 80).s, nodes: []*corev1.Node{n1},
			others: []*corev1.Service{mkSvc("o1", time.Hour, 81).at("172.31.5.2").s, mkSvc("o2", time.Hour, 80).udp().at("172.31.5.2").s}, want: "172.31.5.2"},
		{name: "another class's balancer is not ours", svc: mkSvc("new", 0, 80).s, nodes: []*corev1.Node{n1},
			others: []*corev1.Service{mkSvc("o", time.Hour, 80).class("example.com/lb").at("172.31.5.2").s}, want: "172.31.5.2"},
		{name: "port taken everywhere: an error naming the holder", svc: mkSvc("new", 0, 80).s, nodes: []*corev1.Node{n1},
			others: []*corev1.Service{mkSvc("old", time.Hour, 80).at("172.31.5.2").s}, wantErr: "n1: port in use by default/old"},
		{name: "no nodes", svc: mkSvc("a", 0, 80).s, wantErr: "no nodes"},
		{name: "no ports", svc: mkSvc("a", 0).s, nodes: []*corev1.Node{n1}, wantErr: "no ports"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Assign(tt.svc, tt.nodes, tt.others)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ips []string
			for _, in := range got {
				ips = append(ips, in.IP)
				if in.IPMode == nil || *in.IPMode != corev1.LoadBalancerIPModeVIP {
					t.Errorf("ingress %s without ipMode VIP", in.IP)
				}
			}
			if s := strings.Join(ips, " "); s != tt.want {
				t.Errorf("ingress %q, want %q", s, tt.want)
			}
		})
	}
}

func TestRegistry(t *testing.T) {
	r := &cloudprovider.Registry{}
	if err := Register(r); err != nil {
		t.Fatal(err)
	}
	if err := Register(r); err == nil {
		t.Error("registering local twice succeeded")
	}
	if !r.Has("local") || !r.Has("none") || r.Has("aws") {
		t.Errorf("Has: local %v none %v aws %v", r.Has("local"), r.Has("none"), r.Has("aws"))
	}
	if p, err := r.New("none", cloudprovider.InitContext{}); p != nil || err != nil {
		t.Errorf("none = %v, %v", p, err)
	}
	if _, err := r.New("aws", cloudprovider.InitContext{}); err == nil || !strings.Contains(err.Error(), "local") {
		t.Errorf("unknown provider: %v", err)
	}
}
