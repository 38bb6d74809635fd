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
	gr := schema.GroupResource{Resource: "configmaps"}
	var lastRV string
	for i, addr := range []string{"172.31.1.1", "172.31.1.1", "172.31.2.1"} {
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "reconciled", Namespace: "default"}, Data: map[string]string{"address": addr}}
		err := c.api.ReconcileObject(ctx, gr, obj, func(current runtime.Object) bool {
			cur := current.(*corev1.ConfigMap)
			if cur.Data["address"] == addr {
				return false
			}
			cur.Data = obj.Data
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.client.CoreV1().ConfigMaps("default").Get(ctx, "reconciled", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Data["address"] != addr {
			t.Errorf("after reconciling to %s the object holds %v", addr, got.Data)
		}
		if i == 1 && got.ResourceVersion != lastRV {
			t.Errorf("an object that already matched was written again")
		}
		lastRV = got.ResourceVersion
	}
}
