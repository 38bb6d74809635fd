package lb

import (
	"net"
	"slices"
	"strconv"

	discoveryv1 "k8s.io/api/discovery/v1"
)

// PortName is the "kubernetes" Service's port the API servers serve on.
const PortName = "https"

// AddressesFromSlices lists the API servers (host:port) the "kubernetes" EndpointSlices name:
// every address of an endpoint not marked unready, at the slice's "https" port (or its only port).
func AddressesFromSlices(slices_ []*discoveryv1.EndpointSlice) []string {
	var out []string
	for _, s := range slices_ {
		port, ok := slicePort(s)
		if !ok {
			continue
		}
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			for _, a := range ep.Addresses {
				if net.ParseIP(a) == nil {
					continue
				}
				out = append(out, net.JoinHostPort(a, strconv.Itoa(int(port))))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func slicePort(s *discoveryv1.EndpointSlice) (int32, bool) {
	for _, p := range s.Ports {
		if p.Port == nil {
			continue
		}
		if (p.Name != nil && *p.Name == PortName) || len(s.Ports) == 1 {
			return *p.Port, true
		}
	}
	return 0, false
}
