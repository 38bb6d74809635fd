// Package rbac is Kubernetes' RBAC authorizer: it resolves the Roles and ClusterRoles bound to a
// user through RoleBindings and ClusterRoleBindings and allows a request when any of their rules
// matches it. It also answers "which rules does this user hold" (SelfSubjectRulesReview) and "do
// these rules cover those" (the escalation check on writes of roles and bindings).
//
// Rule matching is a set of pure functions over rbac/v1 types. The authorizer reads roles and
// bindings through client-go listers (informer caches), never storage: a request costs no etcd read.
// It must not import the API server's HTTP layer (only internal/request).
package rbac
