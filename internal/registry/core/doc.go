// Package core declares the core/v1 resources the API server serves (namespaces, pods, nodes,
// services, endpoints, configmaps, secrets, serviceaccounts, events, limitranges, resourcequotas,
// persistentvolumes, persistentvolumeclaims): their discovery names, field selectors, defaulting
// (RegisterDefaults, applied by the scheme on decode), validation with Kubernetes' rules and
// wording, and create/update/status strategies; and the action subresources pods/binding
// (binding.go), pods/eviction with its PodDisruptionBudget check (eviction.go) and
// serviceaccounts/token (serviceaccount_token.go), which write through the generic store the API
// server lends them (registry.ObjectStore).
//
// It also exports the pod template helpers (DefaultPodSpec, ValidatePodTemplateSpec) that the
// workload groups reuse.
//
// It must not: allocate cluster IPs or node ports (the API server does), run admission (default
// tolerations, priority, service account injection), print tables, or import the API server's HTTP
// layer or storage. It holds no mutable package state.
package core
