// Package rbacescalation is Kubernetes' RBAC escalation and bind check as a validating admission
// plugin: a Role or ClusterRole may only hold rules its writer holds (unless the writer may
// `escalate` it), and a binding may only refer to a role whose rules its writer holds (unless the
// writer may `bind` it). Kubernetes does this in its RBAC storage; skiff does it here with the same
// decisions and wording. The writer's rules and the escalate/bind checks come in through the small
// internal/request interfaces (RuleLister, Authorizer) the server's authorizer implements; the role a
// binding names is read through admission's Lookup.
package rbacescalation
