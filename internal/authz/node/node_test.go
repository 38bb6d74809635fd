package node

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-sh/skiff/internal/request"
)

func r(verb, group, resource, sub, ns, name string) *request.RequestInfo {
	return &request.RequestInfo{IsResourceRequest: true, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name}
}

func TestNodeAuthorizer(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team"},
		Spec: corev1.PodSpec{
			NodeName: "a", ServiceAccountName: "bot",
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}},
			Volumes: []corev1.Volume{
				{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}},
				{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}}},
				{Name: "d", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
			},
			Containers: []corev1.Container{{Name: "c", Env: []corev1.EnvVar{{Name: "P", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env"}, Key: "k"}}}}}},
		},
	}
	podsOnNode := func(name string) ([]*corev1.Pod, error) {
		if name == "a" {
			return []*corev1.Pod{pod}, nil
		}
		return nil, nil
	}
	pvcs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if err := pvcs.Add(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "team"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"}}); err != nil {
		t.Fatal(err)
	}
	nodeRules := []rbacv1.PolicyRule{
		{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"pods", "nodes"}},
		{Verbs: []string{"update", "patch"}, APIGroups: []string{""}, Resources: []string{"nodes/status"}},
		{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"pods/eviction"}},
	}
	pvs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, pv := range []*corev1.PersistentVolume{
		{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}, Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
			Driver: "d", VolumeHandle: "h", NodeStageSecretRef: &corev1.SecretReference{Namespace: "storage", Name: "stage"},
			NodeExpandSecretRef: &corev1.SecretReference{Namespace: "team", Name: "expand"},
		}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "pv-2"}, Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
			Driver: "d", VolumeHandle: "h2", NodePublishSecretRef: &corev1.SecretReference{Namespace: "storage", Name: "publish"},
		}}}},
	} {
		if err := pvs.Add(pv); err != nil {
			t.Fatal(err)
		}
	}
	a := New(podsOnNode, corelisters.NewPersistentVolumeClaimLister(pvcs), corelisters.NewPersistentVolumeLister(pvs).Get, nodeRules)
	nodeA := &request.UserInfo{Name: "system:node:a", Groups: []string{"system:nodes", "system:authenticated"}}
	nodeB := &request.UserInfo{Name: "system:node:b", Groups: []string{"system:nodes", "system:authenticated"}}
	tests := []struct {
		name  string
		user  *request.UserInfo
		req   *request.RequestInfo
		allow bool
	}{
		{"volume secret of its pod", nodeA, r("get", "", "secrets", "", "team", "tls"), true},
		{"pull secret", nodeA, r("get", "", "secrets", "", "team", "pull"), true},
		{"env secret", nodeA, r("get", "", "secrets", "", "team", "env"), true},
		{"watch of one secret", nodeA, r("watch", "", "secrets", "", "team", "tls"), true},
		{"configmap", nodeA, r("get", "", "configmaps", "", "team", "conf"), true},
		{"claim", nodeA, r("get", "", "persistentvolumeclaims", "", "team", "data"), true},
		{"bound volume", nodeA, r("get", "", "persistentvolumes", "", "", "pv-1"), true},
		{"other volume", nodeA, r("get", "", "persistentvolumes", "", "", "pv-2"), false},
		{"token of its pod's service account", nodeA, r("create", "", "serviceaccounts", "token", "team", "bot"), true},
		{"token of another service account", nodeA, r("create", "", "serviceaccounts", "token", "team", "admin"), false},
		{"token of its pod's service account in another namespace", nodeA, r("create", "", "serviceaccounts", "token", "other", "bot"), false},
		{"token for another node's pod", nodeB, r("create", "", "serviceaccounts", "token", "team", "bot"), false},
		{"token read", nodeA, r("get", "", "serviceaccounts", "token", "team", "bot"), false},
		{"token without a name", nodeA, r("create", "", "serviceaccounts", "token", "team", ""), false},
		{"create a service account", nodeA, r("create", "", "serviceaccounts", "", "team", "bot"), false},
		{"evict a pod (NodeRestriction decides which)", nodeA, r("create", "", "pods", "eviction", "team", "web"), true},
		{"read an eviction", nodeA, r("get", "", "pods", "eviction", "team", "web"), false},
		{"stage secret of its pod's CSI volume, in the volume's secret namespace", nodeA, r("get", "", "secrets", "", "storage", "stage"), true},
		{"expand secret of its pod's CSI volume", nodeA, r("get", "", "secrets", "", "team", "expand"), true},
		{"a volume's secret under another namespace", nodeA, r("get", "", "secrets", "", "team", "stage"), false},
		{"secret of a volume no pod of the node uses", nodeA, r("get", "", "secrets", "", "storage", "publish"), false},
		{"another node's volume secret", nodeB, r("get", "", "secrets", "", "storage", "stage"), false},
		{"unrelated secret", nodeA, r("get", "", "secrets", "", "team", "other"), false},
		{"same name elsewhere", nodeA, r("get", "", "secrets", "", "kube-system", "tls"), false},
		{"list of secrets", nodeA, r("list", "", "secrets", "", "team", ""), false},
		{"write a secret", nodeA, r("update", "", "secrets", "", "team", "tls"), false},
		{"another node's secret", nodeB, r("get", "", "secrets", "", "team", "tls"), false},
		{"its lease", nodeA, r("update", "coordination.k8s.io", "leases", "", "kube-node-lease", "a"), true},
		{"another node's lease", nodeA, r("update", "coordination.k8s.io", "leases", "", "kube-node-lease", "b"), false},
		{"node rules apply otherwise", nodeA, r("patch", "", "nodes", "status", "", "a"), true},
		{"not in node rules", nodeA, r("delete", "", "namespaces", "", "", "team"), false},
		{"not a node: no opinion", &request.UserInfo{Name: "system:node:a"}, r("get", "", "secrets", "", "team", "tls"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, reason := a.Authorize(context.Background(), tt.user, tt.req); got != tt.allow {
				t.Errorf("Authorize = %v (%s), want %v", got, reason, tt.allow)
			}
		})
	}
}
