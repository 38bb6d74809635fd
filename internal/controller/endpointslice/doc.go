// Package endpointslice is the EndpointSlice controller: for every Service
// with a selector it keeps discovery.k8s.io/v1 EndpointSlices (labelled
// kubernetes.io/service-name and managed-by endpointslice-controller.k8s.io,
// owned by the Service) listing the selected pods with ready, serving and
// terminating conditions, one slice per address type and port set, at most
// MaxEndpointsPerSlice endpoints each, and an empty placeholder slice when
// no pod matches. Existing slices are reused in place to limit churn.
//
// It reaches the cluster only through client-go.
package endpointslice
