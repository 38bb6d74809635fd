package cloudroutes

import (
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/cloudprovider"
)

func node(name, cidr string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{PodCIDR: cidr}}
}

func route(node, cidr string) *cloudprovider.Route {
	return &cloudprovider.Route{Name: node, TargetNode: node, DestinationCIDR: cidr}
}

func names(rs []*cloudprovider.Route) []string {
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s=%s", r.TargetNode, r.DestinationCIDR))
	}
	return out
}

func TestPlan(t *testing.T) {
	deleting := node("c", "10.42.2.0/24")
	deleting.DeletionTimestamp = &metav1.Time{}
	tests := []struct {
		name               string
		nodes              []*corev1.Node
		routes             []*cloudprovider.Route
		create, del, ready []string
	}{
		{name: "nothing"},
		{name: "missing routes created; a node without podCIDR waits",
			nodes: []*corev1.Node{node("b", "10.42.1.0/24"), node("a", "10.42.0.0/24"), node("x", "")}, create: []string{"a=10.42.0.0/24", "b=10.42.1.0/24"}},
		{name: "in place: ready", nodes: []*corev1.Node{node("a", "10.42.0.0/24")}, routes: []*cloudprovider.Route{route("a", "10.42.0.0/24")}, ready: []string{"a"}},
		{name: "gone or deleting node, changed podCIDR: deleted (and the new one created)",
			nodes:  []*corev1.Node{node("a", "10.42.5.0/24"), deleting},
			routes: []*cloudprovider.Route{route("a", "10.42.0.0/24"), route("b", "10.42.1.0/24"), route("c", "10.42.2.0/24")},
			create: []string{"a=10.42.5.0/24"}, del: []string{"a=10.42.0.0/24", "b=10.42.1.0/24", "c=10.42.2.0/24"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			create, del, ready := Plan(tt.nodes, tt.routes)
			if !reflect.DeepEqual(names(create), tt.create) || !reflect.DeepEqual(names(del), tt.del) || !reflect.DeepEqual(ready, tt.ready) {
				t.Errorf("Plan = create %v del %v ready %v; want %v %v %v", names(create), names(del), ready, tt.create, tt.del, tt.ready)
			}
		})
	}
}

// Only what a route depends on reconciles the table: a heartbeat does not.
func TestRouteInputsChanged(t *testing.T) {
	base := node("a", "10.0.1.0/24")
	base.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.1.0.1"}}
	tests := []struct {
		name   string
		change func(n *corev1.Node)
		want   bool
	}{
		{"heartbeat", func(n *corev1.Node) {
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}
		}, false},
		{"podCIDR", func(n *corev1.Node) { n.Spec.PodCIDR = "10.0.2.0/24" }, true},
		{"address", func(n *corev1.Node) { n.Status.Addresses[0].Address = "10.1.0.2" }, true},
		{"deletion", func(n *corev1.Node) { n.DeletionTimestamp = &metav1.Time{} }, true},
		{"network available", func(n *corev1.Node) {
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse}}
		}, true},
	}
	for _, tt := range tests {
		n := base.DeepCopy()
		tt.change(n)
		if got := routeInputsChanged(base, n); got != tt.want {
			t.Errorf("%s: changed = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestJoinErrorsBounded(t *testing.T) {
	var errs []error
	for i := range 5000 {
		errs = append(errs, fmt.Errorf("route %d refused", i))
	}
	got := joinErrors(errs).Error()
	if want := "route 0 refused\nroute 1 refused\nroute 2 refused\nroute 3 refused\nroute 4 refused\nand 4995 more"; got != want {
		t.Fatalf("joined %q, want %q", got, want)
	}
	if joinErrors(nil) != nil {
		t.Fatal("no errors joined to an error")
	}
}
