// Package authentication serves authentication.k8s.io/v1 TokenReview and SelfSubjectReview, as
// computed, create-only resources (registry.Resource.Compute): a TokenReview runs the API server's
// own token authentication (lent through registry.ComputeEnv), a SelfSubjectReview returns the
// caller's identity. Nothing is stored.
package authentication
