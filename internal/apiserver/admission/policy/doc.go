// Package policy is the ValidatingAdmissionPolicy admission plugin: policies and their bindings come
// from informer caches over the API server's own store; a request matched by a binding (and its
// policy's match constraints and match conditions) is judged by the policy's CEL validations, with
// params, variables, messageExpression, reason, and the binding's Deny/Warn/Audit actions.
//
// Deciding (Decide) is a pure function of the policy, the binding, the params and the request's CEL
// variables, table-tested; the plugin around it reads the caches and the params.
//
// It also keeps each policy's status.typeChecking, as Kubernetes' policy status controller does:
// TypeCheck, pure as well, compiles the validations with object, oldObject and params typed by the
// matched kinds' schemas (which the server gives it, Schemas); the status loop writes the result.
package policy
