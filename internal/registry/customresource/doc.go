// Package customresource builds, at run time, the registry.Resource of each served version of a
// CustomResourceDefinition: unstructured objects, a strategy from the version's structural schema
// (validation with Kubernetes' messages, pruning of unknown fields, defaulting), /status and /scale
// when declared, printer columns and selectable fields. x-kubernetes-validations rules are typed
// from the schema (celtypes.go), their cost estimated and bounded as kube-apiserver bounds it when a
// definition is written (ValidateRuleDefinitions) and again when they run. It knows nothing of HTTP
// or etcd: the API server serves what it builds.
package customresource
