// Package routes is the route table of skiff's built-in HTTP data plane: the one shape into which
// both Ingress (internal/ingress) and Gateway API HTTPRoutes are translated, and which the data
// plane (internal/ingress/dataplane) serves.
//
// A Table holds listeners by port; a listener holds its TLS certificates (chosen by SNI) and its
// virtual hosts; a virtual host holds its routes in precedence order. One Route is one match of
// an HTTPRoute rule (or one path of an Ingress rule) with the rule's filters and weighted
// backends; a backend lists the endpoint addresses (pod IP and port) traffic goes to directly.
// The shape follows Gateway API v1 HTTPRoute (matches on path, headers, query parameters and
// method; request and response header modifiers, redirects, URL rewrites, mirrors; weighted
// backends), since Ingress is a subset of it.
//
// Precedes is the one precedence rule (Gateway API's: exact path over prefix, longest prefix,
// method, most header matches, most query matches, then oldest source, then name, then rule and
// match order), and SelectHost the one host choice; both translators and the data plane use them.
//
// It holds pure types and pure functions. It must not reach the cluster, do I/O or keep
// package-level mutable state.
package routes
