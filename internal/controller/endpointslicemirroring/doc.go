// Package endpointslicemirroring mirrors custom Endpoints into EndpointSlices, as
// kube-controller-manager's endpointslicemirroring controller does: Endpoints of a Service without a
// selector (which the endpointslice controller leaves alone) get slices labelled managed-by
// endpointslicemirroring-controller.k8s.io, owned by the Endpoints, so that consumers of slices
// (the service proxy, DNS) see hand-written endpoints too. It reaches the cluster only through
// client-go.
package endpointslicemirroring
