package apiserver

import (
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A generated name that is already taken is replaced by another, as Kubernetes retries, instead of
// failing the create with AlreadyExists.
func TestGenerateNameRetriesCollisions(t *testing.T) {
	c := startTestCluster(t)
	ns := c.namespace(t, "gen")
	var mu sync.Mutex
	suffixes := []string{"aaaaa", "aaaaa", "aaaaa", "bbbbb"}
	c.api.nameSuffix = func() string {
		mu.Lock()
		defer mu.Unlock()
		s := suffixes[0]
		if len(suffixes) > 1 {
			suffixes = suffixes[1:]
		}
		return s
	}
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "cfg-"}}
	first, err := c.client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	if err != nil || first.Name != "cfg-aaaaa" {
		t.Fatalf("first create: %v, %v", first.GetName(), err)
	}
	second, err := c.client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	if err != nil || second.Name != "cfg-bbbbb" {
		t.Fatalf("second create got %v, %v; want cfg-bbbbb after two collisions", second.GetName(), err)
	}

	// An explicit name that exists is still AlreadyExists.
	if _, err := c.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg-aaaaa"}}, metav1.CreateOptions{}); err == nil {
		t.Fatal("explicit duplicate name created")
	}

	// When every attempt collides, the client hears AlreadyExists.
	c.api.nameSuffix = func() string { return "aaaaa" }
	if _, err := c.client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err == nil {
		t.Fatal("create succeeded although every generated name was taken")
	}
}
