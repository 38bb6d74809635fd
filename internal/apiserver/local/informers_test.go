package local_test

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

// Only keeps the resources a component reads; a factory then starts in-process informers for
// those alone (it starts every informer registered on it).
func TestOnlyRegistersTheResourcesAsked(t *testing.T) {
	e := newEnv(t)
	in := e.informers(t)
	if got := in.Only(schema.GroupResource{Resource: "services"}); got != nil {
		t.Fatalf("Only(services) of a pods-only set = %d resources, want nil", got.Len())
	}
	pods := in.Only(schema.GroupResource{Resource: "services"}, schema.GroupResource{Resource: "pods"})
	if pods.Len() != 1 {
		t.Fatalf("Only(services, pods) = %d resources, want 1", pods.Len())
	}
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	in.Only(schema.GroupResource{Resource: "nodes"}).Register(factory) // nil: registers nothing
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	if started := factory.WaitForCacheSync(stop); len(started) != 0 {
		t.Fatalf("a factory given no in-process resource started %v", started)
	}
	pods.Register(factory)
	factory.Start(stop)
	started := factory.WaitForCacheSync(stop)
	if len(started) != 1 || !started[reflect.TypeOf(&corev1.Pod{})] {
		t.Fatalf("started informers %v, want the pod informer alone", started)
	}
}

// RegisterFiltered narrows lists and watches as a client factory's tweak does: a kubelet's
// factory holds its node's pods only, and still the watch cache's own objects.
func TestRegisterFilteredNarrowsByTweak(t *testing.T) {
	e := newEnv(t)
	e.createPod(t, "ns", "on-n1", "n1", nil)
	e.createPod(t, "ns", "on-n2", "n2", nil)
	in := e.informers(t)
	tweak := func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", "n1").String()
	}
	kubelet := informers.NewSharedInformerFactoryWithOptions(fake.NewClientset(), 0, informers.WithTweakListOptions(tweak))
	in.RegisterFiltered(kubelet, tweak)
	kubelet.Core().V1().Pods().Informer()
	stop := make(chan struct{})
	defer func() { close(stop); kubelet.Shutdown() }()
	kubelet.Start(stop)
	kubelet.WaitForCacheSync(stop)
	all := startFactory(t, in)

	any := func(*corev1.Pod) bool { return true }
	mine := waitForPod(t, kubelet, "ns", "on-n1", any)
	if mine != waitForPod(t, all, "ns", "on-n1", any) {
		t.Fatal("the filtered informer holds a copy, not the watch cache's object")
	}
	e.createPod(t, "ns", "later-on-n1", "n1", nil)
	e.createPod(t, "ns", "later-on-n2", "n2", nil)
	// The watch is in revision order: once the n1 pod created after n2's is there, n2's would be too.
	e.createPod(t, "ns", "last-on-n1", "n1", nil)
	waitForPod(t, kubelet, "ns", "last-on-n1", any)
	pods, err := kubelet.Core().V1().Pods().Lister().List(everything())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if p.Spec.NodeName != "n1" {
			t.Errorf("the n1 factory holds %s on %q", p.Name, p.Spec.NodeName)
		}
	}
	if len(pods) != 3 {
		t.Errorf("the n1 factory holds %d pods, want 3", len(pods))
	}
}
