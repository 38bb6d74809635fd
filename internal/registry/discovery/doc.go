// Package discovery declares discovery.k8s.io/v1 endpointslices: port defaults, validation of
// address types (immutable), addresses, endpoint and port limits, hints, and generation on change.
// It must not import the API server or storage; table printing lives elsewhere.
package discovery
