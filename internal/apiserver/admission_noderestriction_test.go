package apiserver

import (
	"context"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/registry"
)

func TestNodeRestriction(t *testing.T) {
	res := func(group, plural string) *registry.Resource {
		return &registry.Resource{GroupVersion: schema.GroupVersion{Group: group, Version: "v1"}, Plural: plural}
	}
	pods, nodes, leases := res("", "pods"), res("", "nodes"), res(coordinationv1.GroupName, "leases")
	nodeA := &UserInfo{Name: "system:node:a", Groups: []string{"system:nodes"}}
	pod := func(node string, mirror bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{NodeName: node}}
		if mirror {
			p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
		}
		return p
	}
	node := func(name string, labels map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	tests := []struct {
		name  string
		a     AdmissionAttributes
		allow bool
	}{
		{"mirror pod on itself", AdmissionAttributes{Verb: "create", Resource: pods, Object: pod("a", true)}, true},
		{"plain pod", AdmissionAttributes{Verb: "create", Resource: pods, Object: pod("a", false)}, false},
		{"mirror pod elsewhere", AdmissionAttributes{Verb: "create", Resource: pods, Object: pod("b", true)}, false},
		{"status of its pod", AdmissionAttributes{Verb: "update", Subresource: "status", Resource: pods, Object: pod("a", false), OldObject: pod("a", false)}, true},
		{"labels through its pod's status", AdmissionAttributes{Verb: "update", Subresource: "status", Resource: pods, Object: func() *corev1.Pod {
			p := pod("a", false)
			p.Labels = map[string]string{"app": "other"}
			return p
		}(), OldObject: pod("a", false)}, false},
		{"status of another node's pod", AdmissionAttributes{Verb: "update", Subresource: "status", Resource: pods, Object: pod("b", false), OldObject: pod("b", false)}, false},
		{"pod spec", AdmissionAttributes{Verb: "update", Resource: pods, Object: pod("a", false), OldObject: pod("a", false)}, false},
		{"delete its pod", AdmissionAttributes{Verb: "delete", Resource: pods, OldObject: pod("a", false)}, true},
		{"delete another node's pod", AdmissionAttributes{Verb: "delete", Resource: pods, OldObject: pod("b", false)}, false},
		{"register itself", AdmissionAttributes{Verb: "create", Resource: nodes, Name: "a", Object: node("a", map[string]string{"kubernetes.io/hostname": "a", "example.com/x": "y", "node.kubernetes.io/instance-type": "t"})}, true},
		{"register as control plane", AdmissionAttributes{Verb: "create", Resource: nodes, Name: "a", Object: node("a", map[string]string{"node-role.kubernetes.io/control-plane": ""})}, false},
		{"restricted label", AdmissionAttributes{Verb: "update", Resource: nodes, Name: "a", Object: node("a", map[string]string{"node-restriction.kubernetes.io/pool": "x"}), OldObject: node("a", nil)}, false},
		{"keeps an admin's label", AdmissionAttributes{Verb: "update", Resource: nodes, Name: "a", Object: node("a", map[string]string{"node-role.kubernetes.io/control-plane": "", "kubernetes.io/os": "linux"}), OldObject: node("a", map[string]string{"node-role.kubernetes.io/control-plane": ""})}, true},
		{"removes an admin's label", AdmissionAttributes{Verb: "update", Resource: nodes, Name: "a", Object: node("a", nil), OldObject: node("a", map[string]string{"node-role.kubernetes.io/control-plane": ""})}, false},
		{"another node", AdmissionAttributes{Verb: "update", Subresource: "status", Resource: nodes, Name: "b", Object: node("b", nil), OldObject: node("b", nil)}, false},
		{"its lease", AdmissionAttributes{Verb: "create", Resource: leases, Namespace: "kube-node-lease", Name: "a", Object: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "a"}}}, true},
		{"proxy to another node (a CONNECT, not a write)", AdmissionAttributes{Verb: "connect", Subresource: "proxy", Resource: nodes, Name: "b", Object: &corev1.NodeProxyOptions{Path: "stats"}}, true},
		{"another lease", AdmissionAttributes{Verb: "update", Resource: leases, Namespace: "kube-node-lease", Name: "b", Object: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "b"}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.a.User = nodeA
			err := NodeRestriction{}.Validate(context.Background(), &tt.a, nil)
			if (err == nil) != tt.allow {
				t.Errorf("Validate = %v, allow %v", err, tt.allow)
			}
		})
	}
	var _ runtime.Object = pod("a", false)
	other := AdmissionAttributes{Verb: "create", Resource: pods, Object: pod("b", false), User: &UserInfo{Name: "jane"}}
	if err := (NodeRestriction{}).Validate(context.Background(), &other, nil); err != nil {
		t.Errorf("a non-node was restricted: %v", err)
	}
}
