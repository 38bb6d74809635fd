package cluster

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/skiff-sh/skiff/internal/apiserver/local"
)

// The Node authorizer's pod and PVC caches are made when authorization starts (after the API
// server built its watch caches, whose in-process informers they then are); before, they read as
// empty, like an unsynced cache.
func TestAuthorizationNodeCachesMadeAtStart(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{NodeName: "n1"}}
	unbound := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "q"}}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	factory := informers.NewSharedInformerFactory(fake.NewClientset(pod, unbound, pvc), 0)
	asked := false
	a := &authorization{factory: factory, inProcess: func() (*local.Informers, error) { asked = true; return nil, nil }}
	pvcs := lazyPVCLister{a}

	if got, err := a.podsOnNode("n1"); err != nil || len(got) != 0 {
		t.Fatalf("before start: pods on n1 = %v, %v; want none", got, err)
	}
	if got, err := pvcs.List(labels.Everything()); err != nil || len(got) != 0 {
		t.Fatalf("before start: PVCs = %v, %v; want none", got, err)
	}
	if _, err := pvcs.PersistentVolumeClaims("ns").Get("c"); !apierrors.IsNotFound(err) {
		t.Fatalf("before start: get PVC: %v, want NotFound", err)
	}

	if err := a.makeNodeCaches(); err != nil {
		t.Fatal(err)
	}
	if !asked {
		t.Error("the in-process informers were not asked for before the caches were made")
	}
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	defer func() { cancel(); factory.Shutdown() }() // Shutdown waits for the informers to stop
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("cache of %v did not sync", typ)
		}
	}
	got, err := a.podsOnNode("n1")
	if err != nil || len(got) != 1 || got[0].Name != "p" {
		t.Errorf("pods on n1 = %v, %v; want p", got, err)
	}
	if c, err := pvcs.PersistentVolumeClaims("ns").Get("c"); err != nil || c.Name != "c" {
		t.Errorf("get PVC = %v, %v; want c", c, err)
	}
}
