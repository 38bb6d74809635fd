// Package apiextensions is the registry of apiextensions.k8s.io/v1 CustomResourceDefinitions: the
// resource, its strategy and Kubernetes' validation of a definition (names, scope, versions, the
// structural schema, subresources, printer columns, conversion). Serving the resources a definition
// declares is not here: internal/registry/customresource builds those, the API server runs them.
package apiextensions
