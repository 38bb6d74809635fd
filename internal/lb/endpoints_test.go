package lb

import (
	"slices"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"
)

func TestAddressesFromSlices(t *testing.T) {
	slice := func(port *discoveryv1.EndpointPort, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
		s := &discoveryv1.EndpointSlice{Endpoints: eps}
		if port != nil {
			s.Ports = []discoveryv1.EndpointPort{*port}
		}
		return s
	}
	https := &discoveryv1.EndpointPort{Name: ptr.To("https"), Port: ptr.To(int32(6443))}
	ep := func(ready *bool, addrs ...string) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: addrs, Conditions: discoveryv1.EndpointConditions{Ready: ready}}
	}
	tests := []struct {
		name   string
		slices []*discoveryv1.EndpointSlice
		want   []string
	}{
		{"none", nil, nil},
		{"ready and unset readiness count, unready does not", []*discoveryv1.EndpointSlice{slice(https, ep(ptr.To(true), "10.0.0.2"), ep(nil, "10.0.0.1"), ep(ptr.To(false), "10.0.0.3"))},
			[]string{"10.0.0.1:6443", "10.0.0.2:6443"}},
		{"IPv6 is bracketed", []*discoveryv1.EndpointSlice{slice(https, ep(nil, "fd00::1"))}, []string{"[fd00::1]:6443"}},
		{"a slice without a port is skipped", []*discoveryv1.EndpointSlice{slice(nil, ep(nil, "10.0.0.1"))}, nil},
		{"a single unnamed port is used", []*discoveryv1.EndpointSlice{slice(&discoveryv1.EndpointPort{Port: ptr.To(int32(7443))}, ep(nil, "10.0.0.1"))}, []string{"10.0.0.1:7443"}},
		{"duplicates across slices collapse; junk addresses are skipped", []*discoveryv1.EndpointSlice{slice(https, ep(nil, "10.0.0.1", "not-an-ip")), slice(https, ep(nil, "10.0.0.1"))},
			[]string{"10.0.0.1:6443"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := AddressesFromSlices(tt.slices); !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}
