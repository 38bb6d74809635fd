package bootstrappolicy

import rbacv1 "k8s.io/api/rbac/v1"

// CloudControllerManager is the cloud controller manager's client identity.
const CloudControllerManager = "system:cloud-controller-manager"

// CloudClusterRoles are the cloud controller manager's rights: its Lease, Events, load-balancer
// Services (finalizer and status) and nodes (read, NetworkUnavailable).
func CloudClusterRoles() []rbacv1.ClusterRole {
	return []rbacv1.ClusterRole{{
		ObjectMeta: meta(CloudControllerManager, nil),
		Rules: rules(
			eventsRuleBuilder(),
			rule("create").groups(coordinationGroup).resources("leases"),
			rule("get", "update").groups(coordinationGroup).resources("leases").names("cloud-controller-manager"),
			rule("get", "list", "watch", "patch", "update").groups(legacyGroup).resources("services"),
			rule("patch", "update").groups(legacyGroup).resources("services/status"),
			rule("get", "list", "watch").groups(legacyGroup).resources("nodes"),
			rule("patch", "update").groups(legacyGroup).resources("nodes/status"),
		),
	}}
}

// CloudClusterRoleBindings bind CloudControllerManager to its role.
func CloudClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	return []rbacv1.ClusterRoleBinding{clusterBinding(CloudControllerManager, subjects(rbacv1.UserKind, CloudControllerManager)...)}
}
