// Package apps declares the apps/v1 resources (deployments, replicasets, statefulsets, daemonsets,
// controllerrevisions): their defaults as Kubernetes sets them, validation with Kubernetes' field
// paths and messages, the /status and /scale subresources and generation tracking.
//
// Pod templates are defaulted and validated by the core registry's exported pod-template functions,
// reached through validationutil.PodTemplate hooks (CorePodTemplate) so tests can substitute them.
// This package must not import the API server or storage, nor reach into core beyond those exports.
// Table printing belongs elsewhere (Printer stays nil).
package apps
