// Package servicecidrs is Kubernetes' service-cidrs-controller: each ServiceCIDR gets the
// networking.k8s.io/service-cidr-finalizer and a Ready condition, so the API server's allocator
// (internal/apiserver/store/servicealloc) may hand out its addresses. A ServiceCIDR being deleted
// keeps its finalizer, with Ready False and reason Terminating, while a cluster IP it holds (an
// IPAddress object or a Service's clusterIPs) lies in no other live ServiceCIDR; once none does,
// and 10 s after the deletion began (so every API server's allocator has seen it go), the
// finalizer comes off and the ServiceCIDR goes.
//
// Decide is pure and table-tested. It reaches the cluster only through client-go.
package servicecidrs
