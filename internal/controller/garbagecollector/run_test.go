package garbagecollector

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// TestRunCollectsOrphansOfADeletedOwner runs the collector with live
// (fake) watches: deleting an owner makes its dependant go.
func TestRunCollectsOrphansOfADeletedOwner(t *testing.T) {
	listKinds := map[schema.GroupVersionResource]string{podsGVR(): "PodList", replicasetsGVR(): "ReplicaSetList", deploymentsGVR(): "DeploymentList"}
	owner, dependant := replicaSet("rs"), pod("p", "ReplicaSet/rs")
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, owner, dependant)
	env := ctrltest.NewEnv()
	// Only the dynamic client holds the objects: no typed informers.
	env.Deps.Informers = nil
	gc := New(env.Deps, client, func(context.Context) ([]ctrlutil.APIResource, error) { return resources(), nil })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go gc.Run(ctx, 2)

	deadline := time.Now().Add(10 * time.Second)
	for gc.Informer(podsGVR()) == nil || !gc.synced() {
		if time.Now().After(deadline) {
			t.Fatal("monitors never synced")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The dependant has a live owner: it must survive.
	time.Sleep(100 * time.Millisecond)
	if _, err := client.Resource(podsGVR()).Namespace("default").Get(ctx, "p", metav1.GetOptions{}); err != nil {
		t.Fatalf("dependant of a live owner was collected: %v", err)
	}
	if err := client.Resource(replicasetsGVR()).Namespace("default").Delete(ctx, "rs", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		_, err := client.Resource(podsGVR()).Namespace("default").Get(ctx, "p", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("dependant not collected after its owner was deleted (err %v)", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRunFollowsTypedResourcesThroughTheSharedFactory: resources the controller manager's typed
// factory knows are followed through its informers (no unstructured copy); deletions still go
// through the dynamic client.
func TestRunFollowsTypedResourcesThroughTheSharedFactory(t *testing.T) {
	listKinds := map[schema.GroupVersionResource]string{podsGVR(): "PodList", replicasetsGVR(): "ReplicaSetList", deploymentsGVR(): "DeploymentList"}
	owner, dependant := replicaSet("rs"), pod("p", "ReplicaSet/rs")
	typedOwner, typedDependant := &appsv1.ReplicaSet{}, &corev1.Pod{}
	for from, to := range map[*unstructured.Unstructured]any{owner: typedOwner, dependant: typedDependant} {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(from.Object, to); err != nil {
			t.Fatal(err)
		}
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, owner, dependant)
	env := ctrltest.NewEnv(typedOwner, typedDependant)
	gc := New(env.Deps, client, func(context.Context) ([]ctrlutil.APIResource, error) { return resources(), nil })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go gc.Run(ctx, 2)

	deadline := time.Now().Add(10 * time.Second)
	for gc.Informer(podsGVR()) == nil || !gc.synced() {
		if time.Now().After(deadline) {
			t.Fatal("monitors never synced")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, ok := env.Factory.Core().V1().Pods().Informer().GetIndexer().GetIndexers()[ownerIndex]; !ok {
		t.Fatal("pods are not followed through the shared typed informer")
	}
	// Both fakes stand for the one cluster: the owner goes from both.
	if err := client.Resource(replicasetsGVR()).Namespace("default").Delete(ctx, "rs", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.AppsV1().ReplicaSets("default").Delete(ctx, "rs", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		_, err := client.Resource(podsGVR()).Namespace("default").Get(ctx, "p", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("dependant not collected after its owner was deleted (err %v)", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
