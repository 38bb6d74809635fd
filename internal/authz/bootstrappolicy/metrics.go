package bootstrappolicy

import rbacv1 "k8s.io/api/rbac/v1"

// MetricsServer is the identity of the API server's resource metrics scraper (internal/metricsserver),
// named after the metrics-server it replaces.
const MetricsServer = "system:metrics-server"

// metricsGroup is the resource metrics API's group.
const metricsGroup = "metrics.k8s.io"

// MetricsClusterRoles are what metrics-server's manifest installs, built in because skiff serves
// metrics.k8s.io itself: system:aggregated-metrics-reader folds reading the metrics into view,
// edit and admin, and system:metrics-server lets the scraper read nodes, pods and the kubelets'
// metrics.
func MetricsClusterRoles() []rbacv1.ClusterRole {
	return []rbacv1.ClusterRole{
		{
			ObjectMeta: meta("system:aggregated-metrics-reader", map[string]string{AggregateToView: "true", AggregateToEdit: "true", AggregateToAdmin: "true"}),
			Rules:      rules(rule("get", "list", "watch").groups(metricsGroup).resources("pods", "nodes")),
		},
		{
			ObjectMeta: meta(MetricsServer, nil),
			Rules: rules(
				rule("get").groups(legacyGroup).resources("nodes/metrics"),
				rule("get", "list", "watch").groups(legacyGroup).resources("pods", "nodes"),
			),
		},
	}
}

// MetricsClusterRoleBindings bind MetricsServer to its role.
func MetricsClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	return []rbacv1.ClusterRoleBinding{clusterBinding(MetricsServer, subjects(rbacv1.UserKind, MetricsServer)...)}
}
