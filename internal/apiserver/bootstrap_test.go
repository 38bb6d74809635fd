package apiserver

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestReconcileObject: created when missing, rewritten when the server's view changed (a restart
// on another address), left alone when it matches.
func TestReconcileObject(t *testing.T) {
	c := startTestCluster(t)
	ctx := context.Background()
	gr := schema.GroupResource{Resource: "endpoints"}
	want := func(ip string) (*corev1.Endpoints, func(runtime.Object) bool) {
		ep := &corev1.Endpoints{
			ObjectMeta: metav1.ObjectMeta{Name: "reconciled", Namespace: "default"},
			Subsets:    []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: ip}}, Ports: []corev1.EndpointPort{{Port: 6443}}}},
		}
		return ep, func(current runtime.Object) bool {
			cur := current.(*corev1.Endpoints)
			if len(cur.Subsets) == 1 && len(cur.Subsets[0].Addresses) == 1 && cur.Subsets[0].Addresses[0].IP == ip {
				return false
			}
			cur.Subsets = ep.Subsets
			return true
		}
	}
	for _, ip := range []string{"172.31.1.1", "172.31.1.1", "172.31.2.1"} {
		obj, mutate := want(ip)
		if err := c.api.ReconcileObject(ctx, gr, obj, mutate); err != nil {
			t.Fatal(err)
		}
		got, err := c.client.CoreV1().Endpoints("default").Get(ctx, "reconciled", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Subsets[0].Addresses[0].IP != ip {
			t.Errorf("after reconciling to %s the endpoints hold %v", ip, got.Subsets)
		}
	}
}
