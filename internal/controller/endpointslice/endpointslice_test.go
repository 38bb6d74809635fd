package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

func web() map[string]string { return map[string]string{"app": "web"} }

func makeService() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-svc"},
		Spec: corev1.ServiceSpec{Selector: web(), ClusterIP: "10.96.0.10",
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("web")}}},
	}
}

func servingPod(name, ip string) *ctrltest.PodBuilder {
	b := ctrltest.MakePod(name).Labels(web())
	b.Obj().Status.PodIP = ip
	b.Obj().Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "web", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}
	return b
}

func ownedSlice(name string, endpoints ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
			Labels:          map[string]string{discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: ManagedBy},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: "web", UID: "uid-svc", Controller: ptr.To(true)}}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints:   endpoints,
	}
}

func TestConditions(t *testing.T) {
	now := ctrltest.Epoch()
	pods := []*corev1.Pod{
		servingPod("ready", "10.0.0.1").Ready(now).Obj(),
		servingPod("starting", "10.0.0.2").Running().Obj(),
		servingPod("leaving", "10.0.0.3").Ready(now).Deleting(now).Obj(),
	}
	groups := DesiredGroups(makeService(), pods)
	if len(groups) != 1 || len(groups[0].endpoints) != 3 {
		t.Fatalf("groups %+v", groups)
	}
	want := map[string][3]bool{"10.0.0.1": {true, true, false}, "10.0.0.2": {false, false, false}, "10.0.0.3": {false, true, true}}
	for _, ep := range groups[0].endpoints {
		c := ep.Conditions
		got := [3]bool{*c.Ready, *c.Serving, *c.Terminating}
		if got != want[ep.Addresses[0]] {
			t.Errorf("%s ready/serving/terminating = %v, want %v", ep.Addresses[0], got, want[ep.Addresses[0]])
		}
	}
	if p := groups[0].ports[0]; *p.Port != 8080 || *p.Name != "http" {
		t.Fatalf("port %+v", p)
	}
	svc := makeService()
	svc.Spec.PublishNotReadyAddresses = true
	for _, ep := range DesiredGroups(svc, pods)[0].endpoints {
		if !*ep.Conditions.Ready {
			t.Fatalf("publishNotReadyAddresses: %s not ready", ep.Addresses[0])
		}
	}
}

func TestSync(t *testing.T) {
	now := ctrltest.Epoch()
	ready := servingPod("a", "10.0.0.1").Ready(now).Obj()
	current := DesiredGroups(makeService(), []*corev1.Pod{ready})[0].endpoints
	many := func() []*corev1.Pod {
		var out []*corev1.Pod
		for i := range 150 {
			out = append(out, servingPod(fmt.Sprintf("p%03d", i), fmt.Sprintf("10.0.%d.%d", i/200, i%200+1)).Ready(now).Obj())
		}
		return out
	}
	tests := []struct {
		name   string
		pods   []*corev1.Pod
		slices []*discoveryv1.EndpointSlice
		want   []string
	}{
		{"first slice created", []*corev1.Pod{ready}, nil, []string{"create endpointslices web-*"}},
		{"up to date", []*corev1.Pod{ready}, []*discoveryv1.EndpointSlice{ownedSlice("web-abc", current...)}, nil},
		{"stale slice updated in place", []*corev1.Pod{ready}, []*discoveryv1.EndpointSlice{ownedSlice("web-abc")}, []string{"update endpointslices web-abc"}},
		{"no pods: placeholder", nil, nil, []string{"create endpointslices web-*"}},
		{"surplus slice deleted", []*corev1.Pod{ready}, []*discoveryv1.EndpointSlice{ownedSlice("web-a", current...), ownedSlice("web-b")},
			[]string{"delete endpointslices web-b"}},
		{"150 endpoints: two slices", many(), nil, []string{"create endpointslices web-*", "create endpointslices web-*"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []runtime.Object{makeService()}
			for _, p := range tt.pods {
				objs = append(objs, p)
			}
			for _, s := range tt.slices {
				objs = append(objs, s)
			}
			env := ctrltest.NewEnv(objs...)
			c, err := New(env.Deps)
			if err != nil {
				t.Fatal(err)
			}
			ctrltest.Seed(t, env.Factory.Core().V1().Services().Informer(), makeService())
			for _, p := range tt.pods {
				ctrltest.Seed(t, env.Factory.Core().V1().Pods().Informer(), p)
			}
			for _, s := range tt.slices {
				ctrltest.Seed(t, env.Factory.Discovery().V1().EndpointSlices().Informer(), s)
			}
			if err := c.Sync(context.Background(), "default/web"); err != nil {
				t.Fatal(err)
			}
			actions := env.Writes()
			if got := ctrltest.Describe(actions); !slices.Equal(got, tt.want) {
				t.Fatalf("actions %q, want %q", got, tt.want)
			}
			for _, a := range actions {
				if a.GetVerb() != "create" {
					continue
				}
				s := a.(clienttesting.CreateAction).GetObject().(*discoveryv1.EndpointSlice)
				ref := metav1.GetControllerOf(s)
				if s.Labels[discoveryv1.LabelServiceName] != "web" || s.Labels[discoveryv1.LabelManagedBy] != ManagedBy || ref == nil || ref.UID != "uid-svc" {
					t.Fatalf("slice meta %+v", s.ObjectMeta)
				}
				if len(s.Endpoints) > MaxEndpointsPerSlice {
					t.Fatalf("%d endpoints in one slice", len(s.Endpoints))
				}
			}
		})
	}
}

// TestSidecarNamedTargetPort: a named targetPort that only a restartable init
// container (a sidecar) declares resolves to that port, as upstream's
// "should connect to the named ports exposed by restartable init containers"
// expects; before, the pod was left out and the slice stayed empty.
func TestSidecarNamedTargetPort(t *testing.T) {
	now := ctrltest.Epoch()
	svc := makeService()
	svc.Spec.Ports[0].TargetPort = intstr.FromString("http-sidecar")
	pod := servingPod("sidecar-port", "10.0.0.1").Ready(now).
		Sidecar("sidecar", corev1.ContainerPort{Name: "http-sidecar", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}).Obj()
	s := syncCreatedOne(t, svc, pod)
	if len(s.Ports) != 1 || *s.Ports[0].Port != 9090 || *s.Ports[0].Name != "http" {
		t.Fatalf("ports %+v", s.Ports)
	}
	if len(s.Endpoints) != 1 || s.Endpoints[0].Addresses[0] != "10.0.0.1" || !*s.Endpoints[0].Conditions.Ready {
		t.Fatalf("endpoints %+v", s.Endpoints)
	}
}

// syncCreatedOne syncs svc over pods with no slices yet and returns the one slice created.
func syncCreatedOne(t *testing.T, svc *corev1.Service, pods ...*corev1.Pod) *discoveryv1.EndpointSlice {
	t.Helper()
	env := ctrltest.NewEnv(svc)
	c, err := New(env.Deps)
	if err != nil {
		t.Fatal(err)
	}
	return ctrltest.SyncServiceCreate(t, env, c.Sync, "create endpointslices web-*", svc, pods...).(*discoveryv1.EndpointSlice)
}

// TestEvictedPodsGetNoEndpoint: an evicted pod (phase Failed) gets no endpoint, not even a
// not-ready one under publishNotReadyAddresses; its Service keeps the one empty slice that
// upstream's "should be rejected for evicted pods (no endpoints exist)" waits for.
func TestEvictedPodsGetNoEndpoint(t *testing.T) {
	svc := makeService()
	svc.Spec.PublishNotReadyAddresses = true
	evicted := servingPod("evicted", "10.0.0.4").Phase(corev1.PodFailed).Obj()
	evicted.Status.Reason = "Evicted"
	s := syncCreatedOne(t, svc, evicted)
	if len(s.Endpoints) != 0 {
		t.Fatalf("endpoints %+v, want none", s.Endpoints)
	}
}

// TestConditionsTable: serving is the pod's readiness alone, publishNotReadyAddresses or
// not, so that a terminating pod that failed its readiness probe is not fallen back to.
func TestConditionsTable(t *testing.T) {
	now := ctrltest.Epoch()
	tests := []struct {
		name                        string
		pod                         *corev1.Pod
		publishNotReady             bool
		ready, serving, terminating bool
	}{
		{"ready", servingPod("p", "10.0.0.1").Ready(now).Obj(), false, true, true, false},
		{"not ready", servingPod("p", "10.0.0.1").Running().Obj(), false, false, false, false},
		{"terminating, still ready", servingPod("p", "10.0.0.1").Ready(now).Deleting(now).Obj(), false, false, true, true},
		{"terminating, unready", servingPod("p", "10.0.0.1").Running().Deleting(now).Obj(), false, false, false, true},
		{"publishNotReadyAddresses, not ready", servingPod("p", "10.0.0.1").Running().Obj(), true, true, false, false},
		{"publishNotReadyAddresses, terminating, unready", servingPod("p", "10.0.0.1").Running().Deleting(now).Obj(), true, true, false, true},
		{"publishNotReadyAddresses, terminating, still ready", servingPod("p", "10.0.0.1").Ready(now).Deleting(now).Obj(), true, true, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := makeService()
			svc.Spec.PublishNotReadyAddresses = tt.publishNotReady
			c := Conditions(svc, tt.pod)
			got := [3]bool{*c.Ready, *c.Serving, *c.Terminating}
			if want := [3]bool{tt.ready, tt.serving, tt.terminating}; got != want {
				t.Fatalf("ready/serving/terminating = %v, want %v", got, want)
			}
		})
	}
}

// TestSyncPublishNotReadyKeepsServing: the slice written for a Service that publishes
// not-ready addresses says ready for a terminating, unready pod but not serving.
func TestSyncPublishNotReadyKeepsServing(t *testing.T) {
	now := ctrltest.Epoch()
	svc := makeService()
	svc.Spec.PublishNotReadyAddresses = true
	s := syncCreatedOne(t, svc, servingPod("draining", "10.0.0.3").Running().Deleting(now).Obj())
	if len(s.Endpoints) != 1 {
		t.Fatalf("endpoints %+v", s.Endpoints)
	}
	c := s.Endpoints[0].Conditions
	if got := [3]bool{*c.Ready, *c.Serving, *c.Terminating}; got != [3]bool{true, false, true} {
		t.Fatalf("ready/serving/terminating = %v, want [true false true]", got)
	}
}

// TestSyncWaitsForItsOwnWrites: a sync that runs before the slice informer shows the slice the
// last one created writes nothing (it would create the slice a second time, and a later sync
// would delete one of the two, which e2e's "should create Endpoints and EndpointSlices for Pods
// matching a Service" then fails to delete); once the informer shows it, the sync goes on, and a
// slice deleted by someone else is recreated.
func TestSyncWaitsForItsOwnWrites(t *testing.T) {
	now := ctrltest.Epoch()
	svc := makeService()
	pod := servingPod("a", "10.0.0.1").Ready(now).Obj()
	env := ctrltest.NewEnv(svc)
	c, err := New(env.Deps)
	if err != nil {
		t.Fatal(err)
	}
	ctrltest.SyncServiceCreate(t, env, c.Sync, "create endpointslices web-*", svc, pod)
	stored, err := env.Client.DiscoveryV1().EndpointSlices("default").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(stored.Items) != 1 {
		t.Fatalf("stored slices %v, %v", stored, err)
	}
	created := &stored.Items[0]
	env.Client.ClearActions()

	if err := c.Sync(context.Background(), "default/web"); !errors.Is(err, ctrlutil.ErrStaleSlices) {
		t.Fatalf("sync on a cache without the created slice = %v, want the stale-cache error", err)
	}
	if got := env.Writes(); len(got) != 0 {
		t.Fatalf("writes %q on a stale cache, want none", ctrltest.Describe(got))
	}

	sliceInformer := env.Factory.Discovery().V1().EndpointSlices().Informer()
	ctrltest.Seed(t, sliceInformer, created)
	if err := c.Sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if got := env.Writes(); len(got) != 0 {
		t.Fatalf("writes %q once the cache shows the slice, want none", ctrltest.Describe(got))
	}

	// Deleted by a client: the informer's delete event settles it and the slice comes back.
	if err := sliceInformer.GetIndexer().Delete(created); err != nil {
		t.Fatal(err)
	}
	c.sliceDeleted(created)
	if err := c.Sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if got := ctrltest.Describe(env.Writes()); !slices.Equal(got, []string{"create endpointslices web-*"}) {
		t.Fatalf("writes %q after the slice was deleted, want it created again", got)
	}
}
