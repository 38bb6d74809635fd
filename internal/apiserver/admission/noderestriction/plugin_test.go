package noderestriction

import (
	"context"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-sh/skiff/internal/apiserver/admission"
	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/request"
)

func TestNodeRestriction(t *testing.T) {
	res := func(group, plural string) *registry.Resource {
		return &registry.Resource{GroupVersion: schema.GroupVersion{Group: group, Version: "v1"}, Plural: plural}
	}
	pods, nodes, leases := res("", "pods"), res("", "nodes"), res(coordinationv1.GroupName, "leases")
	nodeA := &request.UserInfo{Name: "system:node:a", Groups: []string{"system:nodes"}}
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
		a     admission.Attributes
		allow bool
	}{
		{"mirror pod on itself", admission.Attributes{Verb: "create", Resource: pods, Object: pod("a", true)}, true},
		{"plain pod", admission.Attributes{Verb: "create", Resource: pods, Object: pod("a", false)}, false},
		{"mirror pod elsewhere", admission.Attributes{Verb: "create", Resource: pods, Object: pod("b", true)}, false},
		{"status of its pod", admission.Attributes{Verb: "update", Subresource: "status", Resource: pods, Object: pod("a", false), OldObject: pod("a", false)}, true},
		{"labels through its pod's status", admission.Attributes{Verb: "update", Subresource: "status", Resource: pods, Object: func() *corev1.Pod {
			p := pod("a", false)
			p.Labels = map[string]string{"app": "other"}
			return p
		}(), OldObject: pod("a", false)}, false},
		{"status of another node's pod", admission.Attributes{Verb: "update", Subresource: "status", Resource: pods, Object: pod("b", false), OldObject: pod("b", false)}, false},
		{"pod spec", admission.Attributes{Verb: "update", Resource: pods, Object: pod("a", false), OldObject: pod("a", false)}, false},
		{"delete its pod", admission.Attributes{Verb: "delete", Resource: pods, OldObject: pod("a", false)}, true},
		{"delete another node's pod", admission.Attributes{Verb: "delete", Resource: pods, OldObject: pod("b", false)}, false},
		{"register itself", admission.Attributes{Verb: "create", Resource: nodes, Name: "a", Object: node("a", map[string]string{"kubernetes.io/hostname": "a", "example.com/x": "y", "node.kubernetes.io/instance-type": "t"})}, true},
		{"register as control plane", admission.Attributes{Verb: "create", Resource: nodes, Name: "a", Object: node("a", map[string]string{"node-role.kubernetes.io/control-plane": ""})}, false},
		{"restricted label", admission.Attributes{Verb: "update", Resource: nodes, Name: "a", Object: node("a", map[string]string{"node-restriction.kubernetes.io/pool": "x"}), OldObject: node("a", nil)}, false},
		{"keeps an admin's label", admission.Attributes{Verb: "update", Resource: nodes, Name: "a", Object: node("a", map[string]string{"node-role.kubernetes.io/control-plane": "", "kubernetes.io/os": "linux"}), OldObject: node("a", map[string]string{"node-role.kubernetes.io/control-plane": ""})}, true},
		{"removes an admin's label", admission.Attributes{Verb: "update", Resource: nodes, Name: "a", Object: node("a", nil), OldObject: node("a", map[string]string{"node-role.kubernetes.io/control-plane": ""})}, false},
		{"another node", admission.Attributes{Verb: "update", Subresource: "status", Resource: nodes, Name: "b", Object: node("b", nil), OldObject: node("b", nil)}, false},
		{"its lease", admission.Attributes{Verb: "create", Resource: leases, Namespace: "kube-node-lease", Name: "a", Object: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "a"}}}, true},
		{"proxy to another node (a CONNECT, not a write)", admission.Attributes{Verb: "connect", Subresource: "proxy", Resource: nodes, Name: "b", Object: &corev1.NodeProxyOptions{Path: "stats"}}, true},
		{"another lease", admission.Attributes{Verb: "update", Resource: leases, Namespace: "kube-node-lease", Name: "b", Object: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "b"}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.a.User = nodeA
			err := Plugin{}.Validate(context.Background(), &tt.a, nil)
			if (err == nil) != tt.allow {
				t.Errorf("Validate = %v, allow %v", err, tt.allow)
			}
		})
	}
	var _ runtime.Object = pod("a", false)
	other := admission.Attributes{Verb: "create", Resource: pods, Object: pod("b", false), User: &request.UserInfo{Name: "jane"}}
	if err := (Plugin{}).Validate(context.Background(), &other, nil); err != nil {
		t.Errorf("a non-node was restricted: %v", err)
	}
}

// podLookup serves pods by namespace/name.
type podLookup map[string]*corev1.Pod

func (l podLookup) Get(_ context.Context, group, resource, namespace, name string) (runtime.Object, error) {
	if p, ok := l[namespace+"/"+name]; ok && group == "" && resource == "pods" {
		return p, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: resource}, name)
}

func (podLookup) List(context.Context, string, string, string) (runtime.Object, error) {
	return &corev1.PodList{}, nil
}

func TestNodeRestrictionTokensAndEvictions(t *testing.T) {
	pods := &registry.Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Plural: "pods"}
	serviceAccounts := &registry.Resource{GroupVersion: schema.GroupVersion{Version: "v1"}, Plural: "serviceaccounts"}
	onA := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "on-a", Namespace: "ns", UID: "uid-a"}, Spec: corev1.PodSpec{NodeName: "a", ServiceAccountName: "bot"}}
	onB := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "on-b", Namespace: "ns", UID: "uid-b"}, Spec: corev1.PodSpec{NodeName: "b", ServiceAccountName: "bot"}}
	lookup := podLookup{"ns/on-a": onA, "ns/on-b": onB}
	evict := func(urlName, bodyName string) admission.Attributes {
		return admission.Attributes{Verb: "create", Resource: pods, Subresource: "eviction", Namespace: "ns", Name: urlName,
			Object: &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: bodyName, Namespace: "ns"}}}
	}
	token := func(ref *authenticationv1.BoundObjectReference) admission.Attributes {
		return admission.Attributes{Verb: "create", Resource: serviceAccounts, Subresource: "token", Namespace: "ns", Name: "bot",
			Object: &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref}}}
	}
	podRef := func(name, uid string) *authenticationv1.BoundObjectReference {
		return &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: name, UID: types.UID(uid)}
	}
	tests := []struct {
		name string
		a    admission.Attributes
		// want is "" when allowed, else a part of the Forbidden message; notFound wants a 404.
		want     string
		notFound bool
	}{
		{name: "evict its pod", a: evict("on-a", "on-a")},
		{name: "evict its pod named only in the body", a: evict("", "on-a")},
		{name: "evict another node's pod", a: evict("on-b", "on-b"), want: `pods "on-b" is forbidden: node a can only evict pods with spec.nodeName set to itself`},
		{name: "the URL's pod counts, not the body's", a: evict("on-b", "on-a"), want: "node a can only evict pods with spec.nodeName set to itself"},
		{name: "evict no pod", a: evict("", ""), want: "could not determine pod from request data"},
		{name: "evict a missing pod", a: evict("gone", "gone"), notFound: true},
		{name: "another pod subresource", a: admission.Attributes{Verb: "create", Resource: pods, Subresource: "binding", Namespace: "ns", Name: "on-a"},
			want: `unexpected pod subresource "binding", only 'status' and 'eviction' are allowed`},
		{name: "token bound to its pod", a: token(podRef("on-a", "uid-a"))},
		{name: "token bound to nothing", a: token(nil), want: `serviceaccounts "bot" is forbidden: node requested token not bound to a pod`},
		{name: "token bound to a secret", a: token(&authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Secret", Name: "s", UID: "u"}), want: "node requested token not bound to a pod"},
		{name: "token bound to a pod without uid", a: token(podRef("on-a", "")), want: "node requested token with a pod binding without a uid"},
		{name: "token bound to a recreated pod", a: token(podRef("on-a", "old-uid")),
			want: "the UID in the bound object reference (old-uid) does not match the UID in record. The object might have been deleted and then recreated"},
		{name: "token bound to another node's pod", a: token(podRef("on-b", "uid-b")), want: "node requested token bound to a pod scheduled on a different node"},
		{name: "token bound to a missing pod", a: token(podRef("gone", "x")), notFound: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.a.User = &request.UserInfo{Name: "system:node:a", Groups: []string{"system:nodes"}}
			err := Plugin{}.Validate(context.Background(), &tt.a, lookup)
			switch {
			case tt.notFound:
				if !apierrors.IsNotFound(err) {
					t.Fatalf("Validate = %v, want NotFound", err)
				}
			case tt.want == "":
				if err != nil {
					t.Fatalf("Validate = %v, want allowed", err)
				}
			default:
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Validate = %v, want Forbidden with %q", err, tt.want)
				}
			}
		})
	}
	// Other users are not restricted.
	other := evict("on-b", "on-b")
	other.User = &request.UserInfo{Name: "jane"}
	if err := (Plugin{}).Validate(context.Background(), &other, lookup); err != nil {
		t.Errorf("a non-node was restricted: %v", err)
	}
}
