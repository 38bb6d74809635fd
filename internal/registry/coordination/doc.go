// Package coordination declares coordination.k8s.io/v1 leases, the objects leader election and node
// heartbeats use: validation with Kubernetes' rules and wording; leases have no defaults, status or
// generation. It must not import the API server or storage; table printing lives elsewhere.
package coordination
