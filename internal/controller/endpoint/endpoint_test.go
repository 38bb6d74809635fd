package endpoint

//lint:file-ignore SA1019 core/v1 Endpoints are deprecated, not removed: Kubernetes still serves them and so does skiff.

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
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
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"team": "a"}},
		Spec: corev1.ServiceSpec{
			Selector:  web(),
			ClusterIP: "10.96.0.10",
			Ports: []corev1.ServicePort{
				{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("web")},
				{Name: "metrics", Port: 9090, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(9090)},
			},
		},
	}
}

func servingPod(name, ip string, namedPort bool) *ctrltest.PodBuilder {
	b := ctrltest.MakePod(name).Labels(web())
	b.Obj().Status.PodIP = ip
	if namedPort {
		b.Obj().Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "web", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}
	}
	return b
}

func ips(addrs []corev1.EndpointAddress) []string {
	var out []string
	for _, a := range addrs {
		out = append(out, a.IP)
	}
	return out
}

func TestBuildSubsets(t *testing.T) {
	now := ctrltest.Epoch()
	svc := makeService()
	pods := []*corev1.Pod{
		servingPod("b", "10.0.0.2", true).Ready(now).Obj(),
		servingPod("a", "10.0.0.1", true).Ready(now).Obj(),
		servingPod("slow", "10.0.0.3", true).Running().Obj(),
		servingPod("unnamed", "10.0.0.4", false).Ready(now).Obj(),
		servingPod("no-ip", "", true).Ready(now).Obj(),
		servingPod("leaving", "10.0.0.5", true).Ready(now).Deleting(now).Obj(),
		servingPod("done", "10.0.0.6", true).Phase(corev1.PodSucceeded).Obj(),
	}
	subsets := BuildSubsets(svc, pods)
	if len(subsets) != 2 {
		t.Fatalf("subsets %+v", subsets)
	}
	// Pods resolving both ports form one subset; the pod without the named port another.
	full, metricsOnly := subsets[0], subsets[1]
	if len(full.Ports) != 2 {
		full, metricsOnly = metricsOnly, full
	}
	if got := ips(full.Addresses); !slices.Equal(got, []string{"10.0.0.1", "10.0.0.2"}) {
		t.Fatalf("ready %v", got)
	}
	if got := ips(full.NotReadyAddresses); !slices.Equal(got, []string{"10.0.0.3"}) {
		t.Fatalf("not ready %v", got)
	}
	if len(full.Ports) != 2 || full.Ports[0] != (corev1.EndpointPort{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}) {
		t.Fatalf("ports %+v", full.Ports)
	}
	if got := ips(metricsOnly.Addresses); !slices.Equal(got, []string{"10.0.0.4"}) || len(metricsOnly.Ports) != 1 || metricsOnly.Ports[0].Port != 9090 {
		t.Fatalf("metrics-only subset %+v", metricsOnly)
	}
	ref := full.Addresses[0].TargetRef
	if ref == nil || ref.Kind != "Pod" || ref.Name != "a" || *full.Addresses[0].NodeName != "node-1" {
		t.Fatalf("address %+v", full.Addresses[0])
	}

	svc.Spec.PublishNotReadyAddresses = true
	for _, s := range BuildSubsets(svc, pods) {
		if len(s.NotReadyAddresses) != 0 {
			t.Fatalf("publishNotReadyAddresses left not-ready addresses: %+v", s)
		}
	}
}

func TestHostnameWhenSubdomainMatches(t *testing.T) {
	svc := makeService()
	svc.Spec.ClusterIP = corev1.ClusterIPNone
	p := servingPod("db-0", "10.0.0.9", true).Ready(ctrltest.Epoch()).Obj()
	p.Spec.Hostname, p.Spec.Subdomain = "db-0", "web"
	if got := BuildSubsets(svc, []*corev1.Pod{p})[0].Addresses[0].Hostname; got != "db-0" {
		t.Fatalf("hostname %q", got)
	}
}

func TestSync(t *testing.T) {
	now := ctrltest.Epoch()
	ready := servingPod("a", "10.0.0.1", true).Ready(now).Obj()
	noSelector := makeService()
	noSelector.Spec.Selector = nil
	headless := makeService()
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	upToDate := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"team": "a"}},
		Subsets: BuildSubsets(makeService(), []*corev1.Pod{ready})}
	stale := upToDate.DeepCopy()
	stale.Subsets = nil
	tests := []struct {
		name string
		svc  *corev1.Service
		ep   *corev1.Endpoints
		want []string
	}{
		{"missing: created", makeService(), nil, []string{"create endpoints web"}},
		{"up to date: nothing", makeService(), upToDate, nil},
		{"stale: updated", makeService(), stale, []string{"update endpoints web"}},
		{"headless label added", headless, upToDate, []string{"update endpoints web"}},
		{"no selector: left alone", noSelector, stale, nil},
		{"service deleted: endpoints deleted", nil, upToDate, []string{"delete endpoints web"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []runtime.Object{ready}
			if tt.svc != nil {
				objs = append(objs, tt.svc)
			}
			if tt.ep != nil {
				objs = append(objs, tt.ep)
			}
			env := ctrltest.NewEnv(objs...)
			c, err := New(env.Deps)
			if err != nil {
				t.Fatal(err)
			}
			ctrltest.Seed(t, env.Factory.Core().V1().Pods().Informer(), ready)
			if tt.svc != nil {
				ctrltest.Seed(t, env.Factory.Core().V1().Services().Informer(), tt.svc)
			}
			if tt.ep != nil {
				ctrltest.Seed(t, env.Factory.Core().V1().Endpoints().Informer(), tt.ep)
			}
			if err := c.Sync(context.Background(), "default/web"); err != nil {
				t.Fatal(err)
			}
			actions := env.Writes()
			if got := ctrltest.Describe(actions); !slices.Equal(got, tt.want) {
				t.Fatalf("actions %q, want %q", got, tt.want)
			}
			if tt.name == "headless label added" {
				ep := actions[0].(clienttesting.UpdateAction).GetObject().(*corev1.Endpoints)
				if _, ok := ep.Labels[HeadlessLabel]; !ok {
					t.Fatalf("labels %v", ep.Labels)
				}
			}
		})
	}
}

func TestPodEventsEnqueueMatchingServices(t *testing.T) {
	env := ctrltest.NewEnv()
	c, err := New(env.Deps)
	if err != nil {
		t.Fatal(err)
	}
	other := makeService()
	other.Name = "other"
	other.Spec.Selector = map[string]string{"app": "other"}
	ctrltest.Seed(t, env.Factory.Core().V1().Services().Informer(), makeService(), other)
	keys := ctrlutil.ServiceKeysForPod(c.svcLister, servingPod("a", "10.0.0.1", true).Obj())
	if !slices.Equal(keys, []string{"default/web"}) {
		t.Fatalf("keys %v", keys)
	}
}

// TestEndpointsWithoutServiceAreLeftAlone: a change to Endpoints of a Service queues that
// Service (to put the controller's answer back), while a change to Endpoints no Service owns
// queues nothing, since syncing them would delete what someone wrote by hand.
func TestEndpointsWithoutServiceAreLeftAlone(t *testing.T) {
	env := ctrltest.NewEnv()
	c, err := New(env.Deps)
	if err != nil {
		t.Fatal(err)
	}
	ctrltest.Seed(t, env.Factory.Core().V1().Services().Informer(), makeService())
	c.endpointsUpdated(&corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "static", Namespace: "default"}})
	if n := c.loop.Queue.Len(); n != 0 {
		t.Fatalf("Endpoints without a Service queued %d keys", n)
	}
	c.endpointsUpdated(&corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}})
	if n := c.loop.Queue.Len(); n != 1 {
		t.Fatalf("Endpoints of Service web queued %d keys, want its key", n)
	}
}

// TestSidecarNamedTargetPort: the Endpoints of a Service whose named targetPort
// only a restartable init container (a sidecar) declares list the pod at that
// port; before, the pod was left out and the Endpoints had no subsets.
func TestSidecarNamedTargetPort(t *testing.T) {
	now := ctrltest.Epoch()
	svc := makeService()
	svc.Spec.Ports = svc.Spec.Ports[:1]
	svc.Spec.Ports[0].TargetPort = intstr.FromString("http-sidecar")
	pod := servingPod("sidecar-port", "10.0.0.1", false).Ready(now).
		Sidecar("sidecar", corev1.ContainerPort{Name: "http-sidecar", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}).Obj()
	ep := syncCreated(t, svc, pod)
	want := []corev1.EndpointSubset{{
		Addresses: []corev1.EndpointAddress{{IP: "10.0.0.1", NodeName: ptr.To("node-1"),
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "sidecar-port", UID: pod.UID}}},
		Ports: []corev1.EndpointPort{{Name: "http", Port: 9090, Protocol: corev1.ProtocolTCP}},
	}}
	if !apiequality.Semantic.DeepEqual(ep.Subsets, want) {
		t.Fatalf("subsets %+v, want %+v", ep.Subsets, want)
	}
}

// syncCreated syncs svc over pods with no Endpoints yet and returns the Endpoints created.
func syncCreated(t *testing.T, svc *corev1.Service, pods ...*corev1.Pod) *corev1.Endpoints {
	t.Helper()
	env := ctrltest.NewEnv(svc)
	c, err := New(env.Deps)
	if err != nil {
		t.Fatal(err)
	}
	return ctrltest.SyncServiceCreate(t, env, c.Sync, "create endpoints web", svc, pods...).(*corev1.Endpoints)
}

// TestTerminatingAndEvictedPods: Endpoints have no terminating state, so a pod being deleted
// is listed only when the Service publishes not-ready addresses (then as ready, as every
// address of such a Service); an evicted (Failed) or Succeeded pod is never listed, even then.
func TestTerminatingAndEvictedPods(t *testing.T) {
	now := ctrltest.Epoch()
	pods := []*corev1.Pod{
		servingPod("a", "10.0.0.1", true).Ready(now).Obj(),
		servingPod("leaving", "10.0.0.2", true).Ready(now).Deleting(now).Obj(),
		servingPod("draining", "10.0.0.3", true).Running().Deleting(now).Obj(),
		servingPod("evicted", "10.0.0.4", true).Phase(corev1.PodFailed).Obj(),
		servingPod("done", "10.0.0.5", true).Phase(corev1.PodSucceeded).Obj(),
	}
	tests := []struct {
		name            string
		publishNotReady bool
		pods            []*corev1.Pod
		ready, notReady []string
	}{
		{"terminating pods left out", false, pods, []string{"10.0.0.1"}, nil},
		{"publishNotReadyAddresses: terminating pods ready", true, pods, []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}, nil},
		{"only an evicted pod: no subsets", true, pods[3:4], nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := makeService()
			svc.Spec.PublishNotReadyAddresses = tt.publishNotReady
			ep := syncCreated(t, svc, tt.pods...)
			var ready, notReady []string
			for _, s := range ep.Subsets {
				ready = append(ready, ips(s.Addresses)...)
				notReady = append(notReady, ips(s.NotReadyAddresses)...)
			}
			if !slices.Equal(ready, tt.ready) || !slices.Equal(notReady, tt.notReady) {
				t.Fatalf("ready %v, not ready %v; want %v, %v", ready, notReady, tt.ready, tt.notReady)
			}
			if len(tt.ready)+len(tt.notReady) == 0 && len(ep.Subsets) != 0 {
				t.Fatalf("subsets %+v, want none", ep.Subsets)
			}
		})
	}
}
