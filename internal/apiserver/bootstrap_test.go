package apiserver

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// EnsureObjects writes every seed, several at once, leaves the ones that exist alone, and names
// each that failed without stopping the others.
func TestEnsureObjects(t *testing.T) {
	c := startTestCluster(t)
	ctx := context.Background()
	namespaces := schema.GroupResource{Resource: "namespaces"}
	existing := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "seeded-0", Labels: map[string]string{"kept": "yes"}}}
	if err := c.api.EnsureObject(ctx, namespaces, existing); err != nil {
		t.Fatal(err)
	}
	var seeds []Seed
	for i := range 40 {
		seeds = append(seeds, Seed{Resource: namespaces, Object: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("seeded-%d", i)}}})
	}
	seeds = append(seeds, Seed{Resource: schema.GroupResource{Group: "example.com", Resource: "nothings"}, Object: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x"}}})
	err := c.api.EnsureObjects(ctx, seeds)
	if err == nil || !strings.Contains(err.Error(), "nothings.example.com: resource not served") {
		t.Fatalf("the seed of a resource not served: %v", err)
	}
	for i := range 40 {
		ns, err := c.client.CoreV1().Namespaces().Get(ctx, fmt.Sprintf("seeded-%d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 && ns.Labels["kept"] != "yes" {
			t.Errorf("an existing seed was replaced: %v", ns.Labels)
		}
	}
	if err := c.api.EnsureObjects(ctx, seeds[:40]); err != nil {
		t.Errorf("seeds that exist: %v", err)
	}
}
