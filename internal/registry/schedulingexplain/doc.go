// Package schedulingexplain serves scheduling.skiff.sh/v1alpha1 PodSchedulingExplanation: a
// computed, create-only, namespaced review (registry.Resource.Compute), like SubjectAccessReview.
// It owns the review's validation and its authorization beyond RBAC's create: the requester must
// also be allowed to get the pod and list nodes, asked of the server's authorizer before anything
// is computed. The evaluation itself is the scheduler's (registry.ComputeEnv.SchedulingExplainer,
// internal/scheduler.Explainer); this package must not evaluate plugins, read storage or store
// anything.
package schedulingexplain
