package endpointslicemirroring

//lint:file-ignore SA1019 core/v1 Endpoints are deprecated, not removed: this controller mirrors them.

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
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrltest"
	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

func selectorless() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "ext", Namespace: "default", UID: "uid-svc"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
}

func endpoints(mods ...func(*corev1.Endpoints)) *corev1.Endpoints {
	ep := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: "ext", Namespace: "default", UID: "uid-ep",
			Labels:      map[string]string{"team": "a"},
			Annotations: map[string]string{"note": "kept", corev1.EndpointsLastChangeTriggerTime: "2026-01-01T00:00:00Z"}},
		Subsets: []corev1.EndpointSubset{{
			Addresses:         []corev1.EndpointAddress{{IP: "192.0.2.1", Hostname: "one", NodeName: ptr.To("n1")}},
			NotReadyAddresses: []corev1.EndpointAddress{{IP: "192.0.2.2"}},
			Ports:             []corev1.EndpointPort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}},
		}},
	}
	for _, m := range mods {
		m(ep)
	}
	return ep
}

func TestShouldMirror(t *testing.T) {
	withSelector := selectorless()
	withSelector.Spec.Selector = map[string]string{"app": "web"}
	tests := []struct {
		name string
		ep   *corev1.Endpoints
		svc  *corev1.Service
		want bool
	}{
		{"custom endpoints of a selectorless service", endpoints(), selectorless(), true},
		{"no service", endpoints(), nil, false},
		{"service with a selector", endpoints(), withSelector, false},
		{"skip-mirror", endpoints(func(ep *corev1.Endpoints) { ep.Labels[discoveryv1.LabelSkipMirror] = "true" }), selectorless(), false},
		{"leader lock", endpoints(func(ep *corev1.Endpoints) { ep.Annotations[leaderAnnotation] = "{}" }), selectorless(), false},
	}
	for _, tt := range tests {
		if got := ShouldMirror(tt.ep, tt.svc); got != tt.want {
			t.Errorf("%s: ShouldMirror = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestDesiredSlices(t *testing.T) {
	ep := endpoints(func(ep *corev1.Endpoints) {
		ep.Subsets = append(ep.Subsets,
			// Same ports as the first subset: shares its slice.
			corev1.EndpointSubset{Addresses: []corev1.EndpointAddress{{IP: "192.0.2.3"}, {IP: "not-an-ip"}}, Ports: ep.Subsets[0].Ports},
			corev1.EndpointSubset{Addresses: []corev1.EndpointAddress{{IP: "2001:db8::1"}}, Ports: ep.Subsets[0].Ports},
			corev1.EndpointSubset{Addresses: []corev1.EndpointAddress{{IP: "192.0.2.9"}}, Ports: []corev1.EndpointPort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}},
		)
	})
	got := DesiredSlices(ep, 1000)
	if len(got) != 3 {
		t.Fatalf("%d slices, want 3 (IPv4 http, IPv4 dns, IPv6 http): %+v", len(got), got)
	}
	byKey := map[string]int{}
	for _, d := range got {
		byKey[fmt.Sprintf("%s/%s", d.AddressType, *d.Ports[0].Name)] = len(d.Endpoints)
	}
	if byKey["IPv4/http"] != 3 || byKey["IPv6/http"] != 1 || byKey["IPv4/dns"] != 1 {
		t.Fatalf("endpoints per slice %v", byKey)
	}
	for _, d := range got {
		if d.AddressType != discoveryv1.AddressTypeIPv4 || *d.Ports[0].Name != "http" {
			continue
		}
		first, notReady := d.Endpoints[0], d.Endpoints[1]
		if !*first.Conditions.Ready || *first.Hostname != "one" || *first.NodeName != "n1" || first.Addresses[0] != "192.0.2.1" {
			t.Errorf("ready endpoint %+v", first)
		}
		if *notReady.Conditions.Ready || notReady.Addresses[0] != "192.0.2.2" {
			t.Errorf("not-ready endpoint %+v", notReady)
		}
	}

	big := endpoints(func(ep *corev1.Endpoints) {
		ep.Subsets[0].Addresses = nil
		for i := range MaxEndpointsPerSubset + 5 {
			ep.Subsets[0].Addresses = append(ep.Subsets[0].Addresses, corev1.EndpointAddress{IP: fmt.Sprintf("10.1.%d.%d", i/250, i%250+1)})
		}
	})
	total := 0
	for _, d := range DesiredSlices(big, 400) {
		if len(d.Endpoints) > 400 {
			t.Fatalf("%d endpoints in one slice", len(d.Endpoints))
		}
		total += len(d.Endpoints)
	}
	if total != MaxEndpointsPerSubset {
		t.Fatalf("%d endpoints mirrored, want the subset's first %d", total, MaxEndpointsPerSubset)
	}
}

func mirrored(name string, ep *corev1.Endpoints) *discoveryv1.EndpointSlice {
	lbls, annotations := sliceMeta(ep)
	d := DesiredSlices(ep, MaxEndpointsPerSubset)[0]
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: lbls, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Endpoints", Name: "ext", UID: "uid-ep", Controller: ptr.To(true)}}},
		AddressType: d.AddressType, Ports: d.Ports, Endpoints: d.Endpoints,
	}
}

func TestSync(t *testing.T) {
	current := endpoints()
	changed := endpoints(func(ep *corev1.Endpoints) { ep.Subsets[0].Addresses[0].IP = "192.0.2.7" })
	relabelled := endpoints(func(ep *corev1.Endpoints) { ep.Labels["team"] = "b" })
	withSelector := selectorless()
	withSelector.Spec.Selector = map[string]string{"app": "web"}
	tests := []struct {
		name   string
		ep     *corev1.Endpoints
		svc    *corev1.Service
		slices []*discoveryv1.EndpointSlice
		want   []string
	}{
		{"mirrored", current, selectorless(), nil, []string{"create endpointslices ext-*"}},
		{"up to date", current, selectorless(), []*discoveryv1.EndpointSlice{mirrored("ext-abc", current)}, nil},
		{"address changed: updated in place", changed, selectorless(), []*discoveryv1.EndpointSlice{mirrored("ext-abc", current)}, []string{"update endpointslices ext-abc"}},
		{"labels changed: updated", relabelled, selectorless(), []*discoveryv1.EndpointSlice{mirrored("ext-abc", current)}, []string{"update endpointslices ext-abc"}},
		{"endpoints deleted", nil, selectorless(), []*discoveryv1.EndpointSlice{mirrored("ext-abc", current)}, []string{"delete endpointslices ext-abc"}},
		{"service gained a selector", current, withSelector, []*discoveryv1.EndpointSlice{mirrored("ext-abc", current)}, []string{"delete endpointslices ext-abc"}},
		{"service deleted", current, nil, []*discoveryv1.EndpointSlice{mirrored("ext-abc", current)}, []string{"delete endpointslices ext-abc"}},
		{"no subsets: nothing", endpoints(func(ep *corev1.Endpoints) { ep.Subsets = nil }), selectorless(), nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs []runtime.Object
			if tt.ep != nil {
				objs = append(objs, tt.ep)
			}
			if tt.svc != nil {
				objs = append(objs, tt.svc)
			}
			for _, s := range tt.slices {
				objs = append(objs, s)
			}
			env := ctrltest.NewEnv(objs...)
			c, err := New(env.Deps)
			if err != nil {
				t.Fatal(err)
			}
			if tt.ep != nil {
				ctrltest.Seed(t, env.Factory.Core().V1().Endpoints().Informer(), tt.ep)
			}
			if tt.svc != nil {
				ctrltest.Seed(t, env.Factory.Core().V1().Services().Informer(), tt.svc)
			}
			for _, s := range tt.slices {
				ctrltest.Seed(t, env.Factory.Discovery().V1().EndpointSlices().Informer(), s)
			}
			if err := c.Sync(context.Background(), "default/ext"); err != nil {
				t.Fatal(err)
			}
			actions := env.Writes()
			if got := ctrltest.Describe(actions); !slices.Equal(got, tt.want) {
				t.Fatalf("actions %q, want %q", got, tt.want)
			}
			for _, a := range actions {
				if a.GetVerb() != "create" && a.GetVerb() != "update" {
					continue
				}
				s := a.(clienttesting.CreateAction).GetObject().(*discoveryv1.EndpointSlice)
				ref := metav1.GetControllerOf(s)
				if s.Labels[discoveryv1.LabelServiceName] != "ext" || s.Labels[discoveryv1.LabelManagedBy] != ManagedBy || s.Labels["team"] != tt.ep.Labels["team"] || ref == nil || ref.UID != "uid-ep" {
					t.Fatalf("slice meta %+v", s.ObjectMeta)
				}
				if s.Annotations["note"] != "kept" || s.Annotations[corev1.EndpointsLastChangeTriggerTime] != "" {
					t.Fatalf("slice annotations %v", s.Annotations)
				}
			}
		})
	}
}

// TestSyncWaitsForItsOwnWrites: as the endpointslice controller, a sync on a slice cache without
// the slice the last sync created writes nothing (it would mirror the Endpoints twice).
func TestSyncWaitsForItsOwnWrites(t *testing.T) {
	ep, svc := endpoints(), selectorless()
	env := ctrltest.NewEnv(ep, svc)
	c, err := New(env.Deps)
	if err != nil {
		t.Fatal(err)
	}
	ctrltest.Seed(t, env.Factory.Core().V1().Endpoints().Informer(), ep)
	ctrltest.Seed(t, env.Factory.Core().V1().Services().Informer(), svc)
	if err := c.Sync(context.Background(), "default/ext"); err != nil {
		t.Fatal(err)
	}
	if got := ctrltest.Describe(env.Writes()); !slices.Equal(got, []string{"create endpointslices ext-*"}) {
		t.Fatalf("first sync %q", got)
	}
	if err := c.Sync(context.Background(), "default/ext"); !errors.Is(err, ctrlutil.ErrStaleSlices) {
		t.Fatalf("sync on a cache without the created slice = %v, want the stale-cache error", err)
	}
	if got := env.Writes(); len(got) != 0 {
		t.Fatalf("writes %q on a stale cache, want none", ctrltest.Describe(got))
	}
	stored, err := env.Client.DiscoveryV1().EndpointSlices("default").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(stored.Items) != 1 {
		t.Fatalf("stored %v %v", stored, err)
	}
	ctrltest.Seed(t, env.Factory.Discovery().V1().EndpointSlices().Informer(), &stored.Items[0])
	if err := c.Sync(context.Background(), "default/ext"); err != nil {
		t.Fatal(err)
	}
	if got := env.Writes(); len(got) != 0 {
		t.Fatalf("writes %q once the cache shows the slice, want none", ctrltest.Describe(got))
	}
}
