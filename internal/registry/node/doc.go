// Package node declares node.k8s.io/v1 runtimeclasses: the handler (a DNS label, immutable), the
// pod overhead and the scheduling constraints, validated with Kubernetes' rules and wording. The
// RuntimeClass admission (adding overhead and scheduling to pods) is not here. It must not import
// the API server or storage; table printing lives in the printers package.
package node
