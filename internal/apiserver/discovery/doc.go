// Package discovery serves the API discovery documents kubectl and client-go read before anything
// else: the legacy form (/api, /apis, /apis/<group>, /api/v1, /apis/<group>/<version>) and the
// aggregated form (apidiscovery.k8s.io v2 and v2beta1 APIGroupDiscoveryList at /api and /apis,
// chosen by the Accept header). Everything is derived from the []*registry.Resource being served plus
// the extra subresources the caller lists, and can be rebuilt at run time with Update.
//
// It must not import k8s.io/apiserver, and it routes nothing beyond the discovery paths: Handles says
// which paths are its own, so the API server's router can send everything else to the REST handlers.
package discovery
