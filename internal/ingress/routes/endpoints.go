package routes

import (
	"fmt"
	"net"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// ServicePort names a Service's port by number or, when Number is zero, by name, as an Ingress
// backend (and a Gateway API backendRef by number) does.
type ServicePort struct {
	Name   string
	Number int32
}

// ServiceBackend builds the backend for a Service port from the Service and its EndpointSlices:
// the endpoints are the pods' addresses on the port's target (so traffic skips the cluster IP),
// the ready ones, or the serving terminating ones when none is ready (as kube-proxy falls back).
// A missing Service, a port the Service lacks or an ExternalName Service makes the backend
// Invalid; a Service without endpoints gives a backend with none (answered 503).
func ServiceBackend(namespace, name string, port ServicePort, svc *corev1.Service, slices []*discoveryv1.EndpointSlice) Backend {
	b := Backend{Name: backendName(namespace, name, port), Weight: 1}
	if svc == nil {
		b.Invalid = fmt.Sprintf("service %s/%s not found", namespace, name)
		return b
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		b.Invalid = fmt.Sprintf("service %s/%s is of type ExternalName, which is not supported as a backend", namespace, name)
		return b
	}
	sp := findServicePort(svc, port)
	if sp == nil {
		b.Invalid = fmt.Sprintf("service %s/%s has no port %s", namespace, name, portString(port))
		return b
	}
	if sp.AppProtocol != nil && *sp.AppProtocol == AppProtocolH2C {
		b.Protocol = BackendH2C
	}
	var ready, terminating []Endpoint
	seen := map[string]bool{}
	for _, s := range slices {
		if s.Namespace != namespace || s.Labels[discoveryv1.LabelServiceName] != name {
			continue
		}
		target := slicePort(s, sp.Name)
		if target == 0 {
			continue
		}
		for _, ep := range s.Endpoints {
			cond := ep.Conditions
			isReady := cond.Ready == nil || *cond.Ready
			fallback := !isReady && cond.Serving != nil && *cond.Serving && cond.Terminating != nil && *cond.Terminating
			if !isReady && !fallback {
				continue
			}
			for _, a := range ep.Addresses {
				addr := net.JoinHostPort(a, strconv.Itoa(int(target)))
				if seen[addr] {
					continue
				}
				seen[addr] = true
				if isReady {
					ready = append(ready, Endpoint{Address: addr})
				} else {
					terminating = append(terminating, Endpoint{Address: addr})
				}
			}
		}
	}
	b.Endpoints = ready
	if len(ready) == 0 {
		b.Endpoints = terminating
	}
	sort.Slice(b.Endpoints, func(i, j int) bool { return b.Endpoints[i].Address < b.Endpoints[j].Address })
	return b
}

func findServicePort(svc *corev1.Service, port ServicePort) *corev1.ServicePort {
	for i := range svc.Spec.Ports {
		p := &svc.Spec.Ports[i]
		if p.Protocol != "" && p.Protocol != corev1.ProtocolTCP {
			continue
		}
		if (port.Number != 0 && p.Port == port.Number) || (port.Number == 0 && port.Name != "" && p.Name == port.Name) {
			return p
		}
	}
	return nil
}

func slicePort(s *discoveryv1.EndpointSlice, name string) int32 {
	for _, p := range s.Ports {
		if p.Port == nil || (p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP) {
			continue
		}
		if (p.Name == nil && name == "") || (p.Name != nil && *p.Name == name) {
			return *p.Port
		}
	}
	return 0
}

func portString(p ServicePort) string {
	if p.Number != 0 {
		return strconv.Itoa(int(p.Number))
	}
	return strconv.Quote(p.Name)
}

func backendName(namespace, name string, port ServicePort) string {
	if port.Number != 0 {
		return fmt.Sprintf("%s/%s:%d", namespace, name, port.Number)
	}
	return fmt.Sprintf("%s/%s:%s", namespace, name, port.Name)
}
