// Package rbac declares the rbac.authorization.k8s.io/v1 roles, clusterroles, rolebindings and
// clusterrolebindings: path-segment names, the binding defaults, rule and subject validation and the
// immutable roleRef. Escalation checks (a user may only grant what they hold) belong to the API
// server's authorization layer, not here. It must not import the API server or storage.
package rbac
