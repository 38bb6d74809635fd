// Package cel is the CEL environment of admission: webhooks' matchConditions and
// ValidatingAdmissionPolicies compile and evaluate their expressions here, with Kubernetes'
// variables (object, oldObject, request, params, namespaceObject, authorizer, variables), the
// Kubernetes CEL library functions policies commonly use (lists, regex, quantity, url, and ip/cidr
// through cel-go's Kubernetes-parity network library) and Kubernetes' cost limits. The libraries
// (Libraries) and the prices of their calls (CallCosts) are shared with CustomResourceDefinitions'
// x-kubernetes-validations, which internal/registry/customresource compiles.
//
// It is pure: no I/O, no server imports, so the registry may compile expressions for validation and
// both admission plugins share it.
package cel
