package bootstrappolicy

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// controllerRole is one system:controller:<name> role; upstream runs the controller as the
// kube-system service account <name>.
func controllerRole(name string, rs ...*ruleBuilder) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{ObjectMeta: meta("system:controller:"+name, nil), Rules: append(rules(rs...), eventsRule())}
}

// quietControllerRole is a controller role without the events rule: upstream's for controllers
// that record no events.
func quietControllerRole(name string, rs ...*ruleBuilder) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{ObjectMeta: meta("system:controller:"+name, nil), Rules: rules(rs...)}
}

// ControllerRoles are upstream's per-controller roles (those of the controllers skiff runs and the
// ones a Kubernetes cluster is expected to carry).
func ControllerRoles() []rbacv1.ClusterRole {
	return []rbacv1.ClusterRole{
		controllerRole("attachdetach-controller",
			rule("list", "watch").groups(legacyGroup).resources("persistentvolumes", "persistentvolumeclaims"),
			rule("get", "list", "watch").groups(legacyGroup).resources("nodes"),
			rule("patch", "update").groups(legacyGroup).resources("nodes/status"),
			rule("list", "watch").groups(legacyGroup).resources("pods"),
			rule("create", "delete", "get", "list", "watch").groups(storageGroup).resources("volumeattachments"),
			rule("get", "list", "watch").groups(storageGroup).resources("csidrivers"),
			rule("get", "list", "watch").groups(storageGroup).resources("csinodes"),
		),
		quietControllerRole("clusterrole-aggregation-controller",
			// escalate: it writes rules it does not hold itself.
			rule("escalate", "get", "list", "patch", "update", "watch").groups(rbacGroup).resources("clusterroles"),
		),
		controllerRole("cronjob-controller",
			rule("get", "list", "watch", "update").groups(batchGroup).resources("cronjobs"),
			rule("get", "list", "watch", "create", "update", "delete", "patch").groups(batchGroup).resources("jobs"),
			rule("update").groups(batchGroup).resources("cronjobs/status"),
			rule("update").groups(batchGroup).resources("cronjobs/finalizers"),
			rule("list", "watch", "delete").groups(legacyGroup).resources("pods"),
		),
		controllerRole("daemon-set-controller",
			rule("get", "list", "watch").groups(appsGroup, extensionsGroup).resources("daemonsets"),
			rule("update").groups(appsGroup, extensionsGroup).resources("daemonsets/status"),
			rule("update").groups(appsGroup, extensionsGroup).resources("daemonsets/finalizers"),
			rule("list", "watch").groups(legacyGroup).resources("nodes"),
			rule("list", "watch", "create", "delete", "patch").groups(legacyGroup).resources("pods"),
			rule("create").groups(legacyGroup).resources("pods/binding"),
			rule("get", "list", "watch", "create", "delete", "update", "patch").groups(appsGroup).resources("controllerrevisions"),
		),
		controllerRole("deployment-controller",
			rule("get", "list", "watch", "update").groups(appsGroup, extensionsGroup).resources("deployments"),
			rule("update").groups(appsGroup, extensionsGroup).resources("deployments/status"),
			rule("update").groups(appsGroup, extensionsGroup).resources("deployments/finalizers"),
			rule("get", "list", "watch", "create", "update", "patch", "delete").groups(appsGroup, extensionsGroup).resources("replicasets"),
			// Pods are read and updated to relabel them on a selector change.
			rule("get", "list", "watch", "update").groups(legacyGroup).resources("pods"),
		),
		controllerRole("disruption-controller",
			rule("get", "list", "watch").groups(appsGroup, extensionsGroup).resources("deployments"),
			rule("get", "list", "watch").groups(appsGroup, extensionsGroup).resources("replicasets"),
			rule("get", "list", "watch").groups(legacyGroup).resources("replicationcontrollers"),
			rule("get", "list", "watch").groups(policyGroup).resources("poddisruptionbudgets"),
			rule("get", "list", "watch").groups(appsGroup).resources("statefulsets"),
			rule("update").groups(policyGroup).resources("poddisruptionbudgets/status"),
			rule("get").groups("*").resources("*/scale"),
			rule("patch", "update").groups(legacyGroup).resources("pods/status"),
		),
		controllerRole("endpoint-controller",
			rule("get", "list", "watch").groups(legacyGroup).resources("services", "pods"),
			rule("get", "list", "watch", "create", "update", "delete").groups(legacyGroup).resources("endpoints"),
			rule("create").groups(legacyGroup).resources("endpoints/restricted"),
		),
		controllerRole("endpointslice-controller",
			rule("get", "list", "watch").groups(legacyGroup).resources("services", "pods", "nodes"),
			// The slices' owner references block the Service's deletion.
			rule("update").groups(legacyGroup).resources("services/finalizers"),
			rule("get", "list", "watch", "create", "update", "delete").groups(discoveryGroup).resources("endpointslices"),
		),
		// skiff's own: the kube-dns Service's slices, one endpoint per worker node.
		controllerRole("dns-endpoints-controller",
			rule("get", "list", "watch").groups(legacyGroup).resources("services", "nodes"),
			rule("get", "list", "watch", "create", "update", "delete").groups(discoveryGroup).resources("endpointslices"),
		),
		controllerRole("endpointslicemirroring-controller",
			rule("get", "list", "watch").groups(legacyGroup).resources("services", "endpoints"),
			rule("update").groups(legacyGroup).resources("services/finalizers"),
			rule("update").groups(legacyGroup).resources("endpoints/finalizers"),
			rule("get", "list", "watch", "create", "update", "delete").groups(discoveryGroup).resources("endpointslices"),
		),
		controllerRole("ephemeral-volume-controller",
			rule("get", "list", "watch").groups(legacyGroup).resources("pods"),
			rule("update").groups(legacyGroup).resources("pods/finalizers"),
			rule("get", "list", "watch", "create").groups(legacyGroup).resources("persistentvolumeclaims"),
		),
		// skiff's own: the Gateway API controller (internal/controller/gateway) reads the Gateway
		// API objects, the Services, Secrets, Namespaces and Nodes they refer to, and writes status.
		controllerRole("gateway-controller",
			rule("get", "list", "watch").groups("gateway.networking.k8s.io").resources("gatewayclasses", "gateways", "httproutes", "grpcroutes", "referencegrants"),
			rule("update", "patch").groups("gateway.networking.k8s.io").resources("gatewayclasses/status", "gateways/status", "httproutes/status", "grpcroutes/status"),
			// configmaps: the address pools the classes' parametersRefs name.
			rule("get", "list", "watch").groups(legacyGroup).resources("services", "secrets", "namespaces", "nodes", "configmaps"),
		),
		controllerRole("expand-controller",
			rule("get", "list", "watch", "update", "patch").groups(legacyGroup).resources("persistentvolumes"),
			rule("update", "patch").groups(legacyGroup).resources("persistentvolumeclaims/status"),
			rule("get", "list", "watch").groups(legacyGroup).resources("persistentvolumeclaims"),
			rule("get").groups(legacyGroup).resources("services"),
		),
		controllerRole("generic-garbage-collector",
			rule("get", "list", "watch", "patch", "update", "delete").groups("*").resources("*"),
		),
		controllerRole("horizontal-pod-autoscaler",
			rule("get", "list", "watch").groups(autoscalingGroup).resources("horizontalpodautoscalers"),
			rule("update").groups(autoscalingGroup).resources("horizontalpodautoscalers/status"),
			rule("get", "update").groups("*").resources("*/scale"),
			rule("list", "watch").groups(legacyGroup).resources("pods"),
			rule("list", "watch").groups("metrics.k8s.io").resources("pods"),
			rule("get", "list", "watch").groups("custom.metrics.k8s.io").resources("*"),
			rule("get", "list", "watch").groups("external.metrics.k8s.io").resources("*"),
		),
		controllerRole("job-controller",
			rule("get", "list", "watch", "update", "patch").groups(batchGroup).resources("jobs"),
			rule("update").groups(batchGroup).resources("jobs/status"),
			rule("update").groups(batchGroup).resources("jobs/finalizers"),
			rule("list", "watch", "create", "delete", "patch").groups(legacyGroup).resources("pods"),
		),
		quietControllerRole("legacy-service-account-token-cleaner",
			rule("get").groups(legacyGroup).resources("configmaps").names("kube-apiserver-legacy-service-account-token-tracking"),
			rule("patch", "delete").groups(legacyGroup).resources("secrets"),
		),
		quietControllerRole("namespace-controller",
			rule("get", "list", "watch", "delete").groups(legacyGroup).resources("namespaces"),
			rule("update").groups(legacyGroup).resources("namespaces/finalize", "namespaces/status"),
			rule("get", "list", "watch", "delete", "deletecollection").groups("*").resources("*"),
		),
		controllerRole("node-controller",
			rule("get", "list", "watch", "update", "delete", "patch").groups(legacyGroup).resources("nodes"),
			rule("patch", "update").groups(legacyGroup).resources("nodes/status"),
			rule("patch", "update").groups(legacyGroup).resources("pods/status"),
			rule("get", "list", "watch", "delete").groups(legacyGroup).resources("pods"),
		),
		controllerRole("persistent-volume-binder",
			rule("get", "list", "watch", "update", "create", "delete").groups(legacyGroup).resources("persistentvolumes"),
			rule("update").groups(legacyGroup).resources("persistentvolumes/status"),
			rule("get", "list", "watch", "update").groups(legacyGroup).resources("persistentvolumeclaims"),
			rule("update").groups(legacyGroup).resources("persistentvolumeclaims/status"),
			rule("list", "watch", "get", "create", "delete").groups(legacyGroup).resources("pods"),
			rule("get", "list", "watch").groups(storageGroup).resources("storageclasses"),
			rule("list", "watch").groups(legacyGroup).resources("nodes"),
			rule("watch").groups(legacyGroup).resources("events"),
			rule("get").groups(legacyGroup).resources("services"),
		),
		quietControllerRole("pod-garbage-collector",
			rule("list", "watch", "delete").groups(legacyGroup).resources("pods"),
			rule("get", "list", "watch").groups(legacyGroup).resources("nodes"),
			rule("patch").groups(legacyGroup).resources("pods/status"),
		),
		controllerRole("pv-protection-controller",
			rule("get", "list", "watch", "update").groups(legacyGroup).resources("persistentvolumes"),
		),
		// Upstream's role with the VolumeAttributesClass gate on (skiff serves the class).
		controllerRole("volumeattributesclass-protection-controller",
			rule("get", "list", "watch", "update").groups(storageGroup).resources("volumeattributesclasses"),
			rule("list", "watch", "get").groups(legacyGroup).resources("persistentvolumeclaims", "persistentvolumes"),
		),
		controllerRole("pvc-protection-controller",
			rule("get", "list", "watch", "update").groups(legacyGroup).resources("persistentvolumeclaims"),
			rule("list", "watch", "get").groups(legacyGroup).resources("pods"),
		),
		controllerRole("replicaset-controller",
			rule("get", "list", "watch", "update").groups(appsGroup, extensionsGroup).resources("replicasets"),
			rule("update").groups(appsGroup, extensionsGroup).resources("replicasets/status"),
			rule("update").groups(appsGroup, extensionsGroup).resources("replicasets/finalizers"),
			rule("list", "watch", "patch", "create", "delete").groups(legacyGroup).resources("pods"),
		),
		controllerRole("replication-controller",
			rule("get", "list", "watch", "update").groups(legacyGroup).resources("replicationcontrollers"),
			rule("update").groups(legacyGroup).resources("replicationcontrollers/status"),
			rule("update").groups(legacyGroup).resources("replicationcontrollers/finalizers"),
			rule("list", "watch", "patch", "create", "delete").groups(legacyGroup).resources("pods"),
		),
		controllerRole("resourcequota-controller",
			// Quota counts every resource.
			rule("list", "watch").groups("*").resources("*"),
			rule("update").groups(legacyGroup).resources("resourcequotas/status"),
		),
		controllerRole("root-ca-cert-publisher",
			rule("create", "update").groups(legacyGroup).resources("configmaps"),
		),
		controllerRole("route-controller",
			rule("list", "watch").groups(legacyGroup).resources("nodes"),
			rule("patch").groups(legacyGroup).resources("nodes/status"),
		),
		controllerRole("service-account-controller",
			rule("create").groups(legacyGroup).resources("serviceaccounts"),
		),
		controllerRole("service-controller",
			rule("get", "list", "watch").groups(legacyGroup).resources("services"),
			rule("patch", "update").groups(legacyGroup).resources("services/status"),
			rule("list", "watch").groups(legacyGroup).resources("nodes"),
		),
		controllerRole("statefulset-controller",
			rule("list", "watch").groups(legacyGroup).resources("pods"),
			rule("get", "list", "watch").groups(appsGroup).resources("statefulsets"),
			rule("update").groups(appsGroup).resources("statefulsets/status"),
			rule("update").groups(appsGroup).resources("statefulsets/finalizers"),
			rule("get", "create", "delete", "update", "patch").groups(legacyGroup).resources("pods"),
			rule("get", "create", "delete", "update", "patch", "list", "watch").groups(appsGroup).resources("controllerrevisions"),
			rule("get", "create", "list", "watch").groups(legacyGroup).resources("persistentvolumeclaims"),
			rule("update", "delete").groups(legacyGroup).resources("persistentvolumeclaims"),
			rule("update").groups(legacyGroup).resources("pods/finalizers"),
		),
		controllerRole("selinux-warning-controller",
			rule("get", "list", "watch").groups(legacyGroup).resources("persistentvolumes", "persistentvolumeclaims", "pods"),
			rule("get", "list", "watch").groups(storageGroup).resources("csidrivers"),
		),
		controllerRole("service-cidrs-controller",
			rule("get", "list", "watch", "patch", "update").groups(networkingGroup).resources("servicecidrs"),
			rule("patch", "update").groups(networkingGroup).resources("servicecidrs/finalizers", "servicecidrs/status"),
			rule("get", "list", "watch").groups(networkingGroup).resources("ipaddresses"),
		),
		controllerRole("ttl-controller",
			rule("update", "patch", "list", "watch").groups(legacyGroup).resources("nodes"),
		),
		controllerRole("certificate-controller",
			rule("get", "list", "watch", "delete").groups(certificatesGroup).resources("certificatesigningrequests"),
			rule("update").groups(certificatesGroup).resources("certificatesigningrequests/status", "certificatesigningrequests/approval"),
			// kubelet-serving: skiff's csrapproving also approves a node's serving certificate
			// requests (upstream leaves them to an external approver; see upstream_test.go).
			rule("approve").groups(certificatesGroup).resources("signers").names(
				"kubernetes.io/kube-apiserver-client-kubelet", "kubernetes.io/kubelet-serving"),
			rule("sign").groups(certificatesGroup).resources("signers").names(
				"kubernetes.io/kube-apiserver-client", "kubernetes.io/kube-apiserver-client-kubelet",
				"kubernetes.io/kubelet-serving", "kubernetes.io/legacy-unknown"),
			rule("create").groups(authorizationGroup).resources("subjectaccessreviews"),
		),
		controllerRole("validatingadmissionpolicy-status-controller",
			rule("get", "list", "watch").groups("admissionregistration.k8s.io").resources("validatingadmissionpolicies"),
			rule("get", "patch", "update").groups("admissionregistration.k8s.io").resources("validatingadmissionpolicies/status"),
		),
		controllerRole("ttl-after-finished-controller",
			rule("get", "list", "watch", "delete").groups(batchGroup).resources("jobs"),
		),
	}
}

// ControllerRoleBindings bind each controller role to its kube-system service account, as upstream.
func ControllerRoleBindings() []rbacv1.ClusterRoleBinding {
	var out []rbacv1.ClusterRoleBinding
	for _, r := range ControllerRoles() {
		name := r.Name[len("system:controller:"):]
		out = append(out, clusterBinding(r.Name, serviceAccount("kube-system", name)))
	}
	return out
}

// ControllerManagerBindings are skiff's own addition: skiff's controller manager runs every
// controller under its one client identity, system:kube-controller-manager, rather than a service
// account per controller (upstream's --use-service-account-credentials). Binding that user to each
// controller role gives it exactly the union upstream's controllers hold, and nothing more.
func ControllerManagerBindings() []rbacv1.ClusterRoleBinding {
	var out []rbacv1.ClusterRoleBinding
	for _, r := range ControllerRoles() {
		b := clusterBinding(r.Name, subjects(rbacv1.UserKind, KubeControllerManager)...)
		b.Name = "skiff:kube-controller-manager:" + r.Name[len("system:controller:"):]
		b.Annotations = nil
		out = append(out, b)
	}
	return out
}
