// Package apps declares the apps/v1 resources (deployments, replicasets, statefulsets, daemonsets,
// controllerrevisions): their defaults as Kubernetes sets them, validation with Kubernetes' field
// paths and messages, the /status and /scale subresources and generation tracking.
//
// Pod templates are defaulted and validated through validationutil.PodTemplate hooks the caller
// passes in (the core registry owns the pod rules); this package must not import the core registry,
// the API server or storage. Table printing belongs elsewhere (Printer stays nil).
package apps
