// Package networking declares the networking.k8s.io/v1 resources: ingresses (with /status),
// ingressclasses and networkpolicies, with Kubernetes' defaults and validation (paths and path
// types, backends, ports, TLS hosts, policy rules and peers). The objects are stored and validated
// only: no ingress controller or policy enforcement lives here. It must not import the API server
// or storage; table printing lives in the printers package.
package networking
