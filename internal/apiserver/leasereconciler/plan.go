package leasereconciler

//lint:file-ignore SA1019 core/v1 Endpoints are deprecated, not removed: Kubernetes still serves them and so does skiff.

import (
	"crypto/sha256"
	"encoding/base32"
	"net"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const (
	// ServiceName is the Service whose endpoints the reconciler owns, in default.
	ServiceName = "kubernetes"
	portName    = "https"
	// IdentityLabel marks API server identity Leases, with the value kube-apiserver, as upstream.
	IdentityLabel = "apiserver.kubernetes.io/identity"
	// skipMirror keeps the endpointslice mirroring controller off the Endpoints: the slice is
	// written here.
	skipMirror = "endpointslice.kubernetes.io/skip-mirror"
)

// IdentityLeaseName is the name of the identity Lease of the API server called identity:
// "apiserver-" and a hash, so that a restarted server on the same node takes over its old Lease.
func IdentityLeaseName(identity string) string {
	sum := sha256.Sum256([]byte(identity))
	return "apiserver-" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:16]))
}

// Desired is the sorted, de-duplicated list of addresses the endpoints should hold, given the IPs of
// the live master leases. Addresses that cannot be endpoints (not an IP, unspecified, loopback,
// link-local) are left out: validation refuses them, and other hosts could not reach them anyway.
func Desired(leaseIPs []string) []string {
	var out []string
	for _, s := range leaseIPs {
		ip := net.ParseIP(s)
		if !Endpointable(ip) {
			continue
		}
		out = append(out, ip.String())
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Endpointable says whether ip may be listed in the endpoints.
func Endpointable(ip net.IP) bool {
	return ip != nil && !ip.IsUnspecified() && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() && !ip.IsMulticast()
}

// Endpoints is the "kubernetes" Endpoints for addrs (all of one IP family) at port.
func Endpoints(addrs []string, port int32) *corev1.Endpoints {
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: ServiceName, Namespace: metav1.NamespaceDefault, Labels: map[string]string{skipMirror: "true"}}}
	if len(addrs) == 0 {
		return ep
	}
	sub := corev1.EndpointSubset{Ports: []corev1.EndpointPort{{Name: portName, Port: port, Protocol: corev1.ProtocolTCP}}}
	for _, a := range addrs {
		sub.Addresses = append(sub.Addresses, corev1.EndpointAddress{IP: a})
	}
	ep.Subsets = []corev1.EndpointSubset{sub}
	return ep
}

// EndpointSlice is the "kubernetes" EndpointSlice for addrs at port, as kube-apiserver writes it.
func EndpointSlice(addrs []string, port int32) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: ServiceName, Namespace: metav1.NamespaceDefault, Labels: map[string]string{discoveryv1.LabelServiceName: ServiceName}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(portName), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for _, a := range addrs {
		if ip := net.ParseIP(a); ip != nil && ip.To4() == nil {
			s.AddressType = discoveryv1.AddressTypeIPv6
		}
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{a}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	return s
}

// EndpointsNeedUpdate says whether current differs from desired in what the reconciler owns.
func EndpointsNeedUpdate(current, desired *corev1.Endpoints) bool {
	return !apiequality.Semantic.DeepEqual(current.Subsets, desired.Subsets) || current.Labels[skipMirror] != "true"
}

// SliceNeedsUpdate says whether current differs from desired in what the reconciler owns.
func SliceNeedsUpdate(current, desired *discoveryv1.EndpointSlice) bool {
	return current.AddressType != desired.AddressType ||
		!apiequality.Semantic.DeepEqual(current.Ports, desired.Ports) ||
		!apiequality.Semantic.DeepEqual(endpointAddrs(current), endpointAddrs(desired)) ||
		current.Labels[discoveryv1.LabelServiceName] != ServiceName
}

func endpointAddrs(s *discoveryv1.EndpointSlice) []string {
	var out []string
	for _, e := range s.Endpoints {
		if e.Conditions.Ready != nil && !*e.Conditions.Ready {
			continue
		}
		out = append(out, e.Addresses...)
	}
	slices.Sort(out)
	return out
}

// ExpiredIdentityLeases names the identity Leases whose renew time plus duration is before now (a
// Lease never renewed counts from its creation).
func ExpiredIdentityLeases(leases []coordinationv1.Lease, now time.Time) []string {
	var out []string
	for _, l := range leases {
		if l.Labels[IdentityLabel] != "kube-apiserver" || l.Spec.LeaseDurationSeconds == nil {
			continue
		}
		renewed := l.CreationTimestamp.Time
		if l.Spec.RenewTime != nil {
			renewed = l.Spec.RenewTime.Time
		}
		if renewed.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second).Before(now) {
			out = append(out, l.Name)
		}
	}
	slices.Sort(out)
	return out
}
