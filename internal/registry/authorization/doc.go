// Package authorization serves authorization.k8s.io/v1: SubjectAccessReview,
// SelfSubjectAccessReview, LocalSubjectAccessReview and SelfSubjectRulesReview. They are computed,
// create-only resources (registry.Resource.Compute): the answer comes from the API server's
// authorizer, lent through registry.ComputeEnv, and nothing is stored. The translation between a
// review's spec and a request's attributes is pure and table-tested.
package authorization
