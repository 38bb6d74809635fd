// Package apiextensionsv1 declares the apiextensions.k8s.io/v1 types skiff serves
// (CustomResourceDefinition and its schema), with the JSON shapes of Kubernetes' own. skiff may not
// depend on k8s.io/apiextensions-apiserver, whose module holds the upstream Go types, so they are
// declared here. It holds types only: no validation, no defaults.
package apiextensionsv1
