package discovery

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/registry/validationutil/errtest"
)

func slice(mods ...func(*discoveryv1.EndpointSlice)) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-abc", Namespace: "default"},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses: []string{"10.0.0.5"}, NodeName: ptr.To("node-a"), Hostname: ptr.To("web-0"),
			Hints: &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "zone-a"}}},
		}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](80)}},
	}
	DefaultEndpointSlice(s)
	for _, m := range mods {
		m(s)
	}
	return s
}

func TestDefaults(t *testing.T) {
	s := runtime.NewScheme()
	if err := discoveryv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := RegisterDefaults(s); err != nil {
		t.Fatal(err)
	}
	es := &discoveryv1.EndpointSlice{Ports: []discoveryv1.EndpointPort{{Port: ptr.To[int32](53), Protocol: ptr.To(corev1.ProtocolUDP)}, {}}}
	s.Default(es)
	if *es.Ports[0].Name != "" || *es.Ports[0].Protocol != corev1.ProtocolUDP || *es.Ports[1].Protocol != corev1.ProtocolTCP {
		t.Fatalf("ports = %+v", es.Ports)
	}
}

func TestValidateEndpointSlice(t *testing.T) {
	many := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("10.0.%d.%d", i/250, i%250+1)
		}
		return out
	}
	tests := []struct {
		name string
		obj  *discoveryv1.EndpointSlice
		want *errtest.Want
	}{
		{"valid", slice(), nil},
		{"ipv6", slice(func(s *discoveryv1.EndpointSlice) {
			s.AddressType = discoveryv1.AddressTypeIPv6
			s.Endpoints[0].Addresses = []string{"fd00::5"}
		}), nil},
		{"fqdn", slice(func(s *discoveryv1.EndpointSlice) {
			s.AddressType = discoveryv1.AddressTypeFQDN
			s.Endpoints[0].Addresses = []string{"db.example.com"}
		}), nil},
		{"no address type", slice(func(s *discoveryv1.EndpointSlice) { s.AddressType = "" }), &errtest.Want{Field: "addressType", Type: field.ErrorTypeRequired}},
		{"bad address type", slice(func(s *discoveryv1.EndpointSlice) { s.AddressType = "IPX" }), &errtest.Want{Field: "addressType", Type: field.ErrorTypeNotSupported}},
		{"no addresses", slice(func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = nil }), &errtest.Want{Field: "endpoints[0].addresses", Type: field.ErrorTypeRequired, Detail: "must contain at least 1 address"}},
		{"too many addresses", slice(func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = many(101) }), &errtest.Want{Field: "endpoints[0].addresses", Type: field.ErrorTypeTooMany}},
		{"too many endpoints", slice(func(s *discoveryv1.EndpointSlice) { s.Endpoints = make([]discoveryv1.Endpoint, 1001) }), &errtest.Want{Field: "endpoints", Type: field.ErrorTypeTooMany}},
		{"not an ip", slice(func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = []string{"ten"} }), &errtest.Want{Field: "endpoints[0].addresses[0]", Type: field.ErrorTypeInvalid, Detail: "must be a valid IP address"}},
		{"v6 in v4 slice", slice(func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = []string{"fd00::1"} }), &errtest.Want{Field: "endpoints[0].addresses[0]", Type: field.ErrorTypeInvalid, Detail: "must be an IPv4 address"}},
		{"loopback", slice(func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = []string{"127.0.0.1"} }), &errtest.Want{Field: "endpoints[0].addresses[0]", Type: field.ErrorTypeInvalid, Detail: "may not be in the loopback range"}},
		{"link local", slice(func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = []string{"169.254.169.254"} }), &errtest.Want{Field: "endpoints[0].addresses[0]", Type: field.ErrorTypeInvalid, Detail: "link-local"}},
		{"bad hostname", slice(func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Hostname = ptr.To("Web_0") }), &errtest.Want{Field: "endpoints[0].hostname", Type: field.ErrorTypeInvalid}},
		{"bad node name", slice(func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].NodeName = ptr.To("Node A") }), &errtest.Want{Field: "endpoints[0].nodeName", Type: field.ErrorTypeInvalid}},
		{"duplicate zone hint", slice(func(s *discoveryv1.EndpointSlice) {
			s.Endpoints[0].Hints.ForZones = append(s.Endpoints[0].Hints.ForZones, discoveryv1.ForZone{Name: "zone-a"})
		}), &errtest.Want{Field: "endpoints[0].hints.forZones[1].name", Type: field.ErrorTypeDuplicate}},
		{"duplicate port name", slice(func(s *discoveryv1.EndpointSlice) { s.Ports = append(s.Ports, s.Ports[0]) }), &errtest.Want{Field: "ports[1].name", Type: field.ErrorTypeDuplicate}},
		{"bad port name", slice(func(s *discoveryv1.EndpointSlice) { s.Ports[0].Name = ptr.To("HTTP") }), &errtest.Want{Field: "ports[0].name", Type: field.ErrorTypeInvalid}},
		{"no protocol", slice(func(s *discoveryv1.EndpointSlice) { s.Ports[0].Protocol = nil }), &errtest.Want{Field: "ports[0].protocol", Type: field.ErrorTypeRequired}},
		{"bad protocol", slice(func(s *discoveryv1.EndpointSlice) { s.Ports[0].Protocol = ptr.To(corev1.Protocol("ICMP")) }), &errtest.Want{Field: "ports[0].protocol", Type: field.ErrorTypeNotSupported}},
		{"bad app protocol", slice(func(s *discoveryv1.EndpointSlice) { s.Ports[0].AppProtocol = ptr.To("not valid/") }), &errtest.Want{Field: "ports[0].appProtocol", Type: field.ErrorTypeInvalid}},
	}
	r := Resources()[0]
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errtest.Check(t, r.Strategy.Validate(context.Background(), tt.obj), tt.want)
		})
	}
}

func TestEndpointSliceUpdate(t *testing.T) {
	ctx := context.Background()
	r := Resources()[0]
	old := slice(func(s *discoveryv1.EndpointSlice) { s.ResourceVersion = "4"; s.Generation = 2 })
	relabeled := old.DeepCopy()
	relabeled.Labels = map[string]string{"a": "b"}
	r.Strategy.PrepareForUpdate(ctx, relabeled, old)
	if relabeled.Generation != 2 {
		t.Fatalf("metadata change bumped generation to %d", relabeled.Generation)
	}
	moved := old.DeepCopy()
	moved.Endpoints[0].Addresses = []string{"10.0.0.6"}
	r.Strategy.PrepareForUpdate(ctx, moved, old)
	if moved.Generation != 3 {
		t.Fatalf("endpoint change: generation %d", moved.Generation)
	}
	errtest.Check(t, r.Strategy.ValidateUpdate(ctx, moved, old), nil)
	retyped := old.DeepCopy()
	retyped.AddressType = discoveryv1.AddressTypeFQDN
	retyped.Endpoints[0].Addresses = []string{"a.example.com"}
	errtest.Check(t, r.Strategy.ValidateUpdate(ctx, retyped, old), &errtest.Want{Field: "addressType", Type: field.ErrorTypeInvalid, Detail: "field is immutable"})
}
