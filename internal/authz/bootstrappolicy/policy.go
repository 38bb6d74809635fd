package bootstrappolicy

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Names and groups Kubernetes gives its built-in identities.
const (
	SystemPrivilegedGroup = "system:masters"
	NodesGroup            = "system:nodes"
	MonitoringGroup       = "system:monitoring"
	AllAuthenticated      = "system:authenticated"
	AllUnauthenticated    = "system:unauthenticated"
	ServiceAccountsGroup  = "system:serviceaccounts"
	KubeProxy             = "system:kube-proxy"
	KubeControllerManager = "system:kube-controller-manager"
	KubeScheduler         = "system:kube-scheduler"
	// SkiffDNS is the client identity of skiff's node-local cluster DNS server.
	SkiffDNS = "system:skiff:dns"
	// SkiffNetworkPolicy is the client identity of a worker's network policy agent.
	SkiffNetworkPolicy = "system:skiff:network-policy"
	// SkiffIngress is the client identity of a worker's HTTP data plane (internal/ingress).
	SkiffIngress = "system:skiff:ingress"
	// SkiffIngressNodePrefix and SkiffIngressGroup are the identity of a joined worker's data
	// plane: the user system:skiff:ingress:<node> in the group system:skiff:ingresses, from a
	// client certificate its node asks for (the CSR approver approves it for that node alone).
	SkiffIngressNodePrefix = SkiffIngress + ":"
	SkiffIngressGroup      = "system:skiff:ingresses"
	// SkiffIngressStatus is the client identity of the control plane's Ingress status controller.
	SkiffIngressStatus = "system:skiff:ingress-status"

	// AutoUpdateAnnotation set to "false" stops the reconciler from adding rules and subjects.
	AutoUpdateAnnotation = "rbac.authorization.kubernetes.io/autoupdate"
	// AggregateTo* are the labels that fold a ClusterRole's rules into admin, edit and view.
	AggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	AggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	AggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
)

func meta(name string, labels map[string]string) metav1.ObjectMeta {
	l := map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"}
	for k, v := range labels {
		l[k] = v
	}
	return metav1.ObjectMeta{Name: name, Labels: l, Annotations: map[string]string{AutoUpdateAnnotation: "true"}}
}

func nsMeta(namespace, name string) metav1.ObjectMeta {
	m := meta(name, nil)
	m.Namespace = namespace
	return m
}

func aggregated(label string) *rbacv1.AggregationRule {
	return &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{label: "true"}}}}
}

// ClusterRoles are the default cluster roles, controller roles excluded.
func ClusterRoles() []rbacv1.ClusterRole {
	return []rbacv1.ClusterRole{
		{
			// The root role: everything, resources and paths.
			ObjectMeta: meta("cluster-admin", nil),
			Rules:      rules(rule("*").groups("*").resources("*"), rule("*").urls("*")),
		},
		{
			// Just enough to discover the API for negotiation.
			ObjectMeta: meta("system:discovery", nil),
			Rules: rules(rule("get").urls("/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez",
				"/openapi", "/openapi/*", "/readyz", "/version", "/version/")),
		},
		{
			ObjectMeta: meta("system:monitoring", nil),
			Rules: rules(rule("get").urls("/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/metrics/slis",
				"/readyz", "/readyz/*")),
		},
		{
			// What any user may learn about themselves.
			ObjectMeta: meta("system:basic-user", nil),
			Rules: rules(
				rule("create").groups(authorizationGroup).resources("selfsubjectaccessreviews", "selfsubjectrulesreviews"),
				rule("create").groups(authenticationGroup).resources("selfsubjectreviews"),
			),
		},
		{
			// Public information about the cluster, for everyone including anonymous callers.
			ObjectMeta: meta("system:public-info-viewer", nil),
			Rules:      rules(rule("get").urls("/healthz", "/livez", "/readyz", "/version", "/version/")),
		},
		{
			// A namespace admin: edit plus the power to grant permissions; its rules are aggregated.
			ObjectMeta:      meta("admin", nil),
			AggregationRule: aggregated(AggregateToAdmin),
		},
		{
			ObjectMeta:      meta("edit", map[string]string{AggregateToAdmin: "true"}),
			AggregationRule: aggregated(AggregateToEdit),
		},
		{
			ObjectMeta:      meta("view", map[string]string{AggregateToEdit: "true"}),
			AggregationRule: aggregated(AggregateToView),
		},
		{
			ObjectMeta: meta("system:aggregate-to-admin", map[string]string{AggregateToAdmin: "true"}),
			Rules: rules(
				rule("create").groups(authorizationGroup).resources("localsubjectaccessreviews"),
				rule(readWrite...).groups(rbacGroup).resources("rolebindings", "roles"),
			),
		},
		{
			ObjectMeta: meta("system:aggregate-to-edit", map[string]string{AggregateToEdit: "true"}),
			Rules: rules(
				// Reading secrets and exec'ing into pods are edit's, not view's: both can escalate.
				rule(read...).groups(legacyGroup).resources("pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"),
				rule("impersonate").groups(legacyGroup).resources("serviceaccounts"),
				rule(edit...).groups(legacyGroup).resources("pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"),
				rule("create").groups(legacyGroup).resources("pods/eviction"),
				rule(edit...).groups(legacyGroup).resources("configmaps", "events", "persistentvolumeclaims", "replicationcontrollers",
					"replicationcontrollers/scale", "secrets", "serviceaccounts", "services", "services/proxy"),
				rule("create").groups(legacyGroup).resources("serviceaccounts/token"),
				rule(edit...).groups(appsGroup).resources("daemonsets", "deployments", "deployments/rollback", "deployments/scale",
					"replicasets", "replicasets/scale", "statefulsets", "statefulsets/scale"),
				rule(edit...).groups(autoscalingGroup).resources("horizontalpodautoscalers"),
				rule(edit...).groups(batchGroup).resources("cronjobs", "jobs"),
				rule(edit...).groups(extensionsGroup).resources("daemonsets", "deployments", "deployments/rollback", "deployments/scale",
					"ingresses", "networkpolicies", "replicasets", "replicasets/scale", "replicationcontrollers/scale"),
				rule(edit...).groups(policyGroup).resources("poddisruptionbudgets"),
				rule(edit...).groups(networkingGroup).resources("ingresses", "networkpolicies"),
				rule(readWrite...).groups(coordinationGroup).resources("leases"),
			),
		},
		{
			ObjectMeta: meta("system:aggregate-to-view", map[string]string{AggregateToView: "true"}),
			Rules: rules(
				rule(read...).groups(legacyGroup).resources("configmaps", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status",
					"pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts", "services", "services/status"),
				rule(read...).groups(legacyGroup).resources("bindings", "events", "limitranges", "namespaces/status", "pods/log", "pods/status",
					"replicationcontrollers/status", "resourcequotas", "resourcequotas/status"),
				// Read access to namespaces at the namespace scope means reading this namespace.
				rule(read...).groups(legacyGroup).resources("namespaces"),
				rule(read...).groups(discoveryGroup).resources("endpointslices"),
				rule(read...).groups(appsGroup).resources("controllerrevisions", "daemonsets", "daemonsets/status", "deployments",
					"deployments/scale", "deployments/status", "replicasets", "replicasets/scale", "replicasets/status", "statefulsets",
					"statefulsets/scale", "statefulsets/status"),
				rule(read...).groups(autoscalingGroup).resources("horizontalpodautoscalers", "horizontalpodautoscalers/status"),
				rule(read...).groups(batchGroup).resources("cronjobs", "cronjobs/status", "jobs", "jobs/status"),
				rule(read...).groups(extensionsGroup).resources("daemonsets", "daemonsets/status", "deployments", "deployments/scale",
					"deployments/status", "ingresses", "ingresses/status", "networkpolicies", "replicasets", "replicasets/scale",
					"replicasets/status", "replicationcontrollers/scale"),
				rule(read...).groups(policyGroup).resources("poddisruptionbudgets", "poddisruptionbudgets/status"),
				rule(read...).groups(networkingGroup).resources("ingresses", "ingresses/status", "networkpolicies"),
			),
		},
		{
			ObjectMeta: meta("system:heapster", nil),
			Rules: rules(
				rule(read...).groups(legacyGroup).resources("events", "namespaces", "nodes", "pods"),
				rule(read...).groups(extensionsGroup).resources("deployments"),
			),
		},
		{
			// What a kubelet needs; the Node authorizer narrows it to the node's own objects.
			ObjectMeta: meta("system:node", nil),
			Rules: rules(
				rule("create").groups(authenticationGroup).resources("tokenreviews"),
				rule("create").groups(authorizationGroup).resources("subjectaccessreviews", "localsubjectaccessreviews"),
				rule(read...).groups(legacyGroup).resources("services"),
				rule("create", "get", "list", "watch").groups(legacyGroup).resources("nodes"),
				rule("update", "patch").groups(legacyGroup).resources("nodes/status"),
				rule("update", "patch").groups(legacyGroup).resources("nodes"),
				// Events of the core API only (upstream's node rules).
				rule("create", "update", "patch").groups(legacyGroup).resources("events"),
				rule(read...).groups(legacyGroup).resources("pods"),
				rule("create", "delete").groups(legacyGroup).resources("pods"),
				rule("update", "patch").groups(legacyGroup).resources("pods/status"),
				rule("create").groups(legacyGroup).resources("pods/eviction"),
				rule(read...).groups(legacyGroup).resources("secrets", "configmaps"),
				rule("get").groups(legacyGroup).resources("persistentvolumeclaims", "persistentvolumes"),
				rule("get").groups(legacyGroup).resources("endpoints"),
				rule("create", "get", "list", "watch").groups(certificatesGroup).resources("certificatesigningrequests"),
				rule("get", "create", "update", "patch", "delete").groups(coordinationGroup).resources("leases"),
				rule("get").groups(storageGroup).resources("volumeattachments"),
				rule("create").groups(legacyGroup).resources("serviceaccounts/token"),
				rule("get", "update", "patch").groups(legacyGroup).resources("persistentvolumeclaims/status"),
				rule(read...).groups(storageGroup).resources("csidrivers"),
				rule("get", "create", "update", "patch", "delete").groups(storageGroup).resources("csinodes"),
				rule(read...).groups(nodeGroup).resources("runtimeclasses"),
			),
		},
		{
			ObjectMeta: meta("system:node-problem-detector", nil),
			Rules: rules(
				rule("get").groups(legacyGroup).resources("nodes"),
				rule("patch").groups(legacyGroup).resources("nodes/status"),
				eventsRuleBuilder(),
			),
		},
		{
			ObjectMeta: meta("system:kubelet-api-admin", nil),
			Rules: rules(
				// Full access to the kubelet API (the API server's own client to kubelets holds it).
				rule("get", "list", "watch", "proxy").groups(legacyGroup).resources("nodes"),
				rule("*").groups(legacyGroup).resources("nodes/proxy", "nodes/metrics", "nodes/stats", "nodes/log"),
				// The kubelet's fine-grained subresources (/pods, /healthz, /configz).
				rule("*").groups(legacyGroup).resources("nodes/configz", "nodes/healthz", "nodes/pods"),
			),
		},
		{
			ObjectMeta: meta("system:node-bootstrapper", nil),
			Rules:      rules(rule("create", "get", "list", "watch").groups(certificatesGroup).resources("certificatesigningrequests")),
		},
		{
			ObjectMeta: meta("system:auth-delegator", nil),
			Rules: rules(
				rule("create").groups(authenticationGroup).resources("tokenreviews"),
				rule("create").groups(authorizationGroup).resources("subjectaccessreviews"),
			),
		},
		{
			ObjectMeta: meta("system:kube-aggregator", nil),
			Rules:      rules(rule(read...).groups(legacyGroup).resources("services", "endpoints")),
		},
		{
			// The controller manager's own identity; the controllers' rights are in their roles.
			ObjectMeta: meta("system:kube-controller-manager", nil),
			Rules: rules(
				eventsRuleBuilder(),
				rule("create").groups(coordinationGroup).resources("leases"),
				rule("get", "update").groups(coordinationGroup).resources("leases").names("kube-controller-manager"),
				rule("create").groups(legacyGroup).resources("secrets", "serviceaccounts"),
				rule("delete").groups(legacyGroup).resources("secrets"),
				rule("get").groups(legacyGroup).resources("configmaps", "namespaces", "secrets", "serviceaccounts"),
				rule("update").groups(legacyGroup).resources("secrets", "serviceaccounts"),
				rule("create").groups(authenticationGroup).resources("tokenreviews"),
				rule("create").groups(authorizationGroup).resources("subjectaccessreviews"),
				rule("list", "watch").groups("*").resources("*"),
				rule("create").groups(legacyGroup).resources("serviceaccounts/token"),
			),
		},
		{
			ObjectMeta: meta("system:kube-dns", nil),
			Rules:      rules(rule("list", "watch").groups(legacyGroup).resources("endpoints", "services")),
		},
		{
			// skiff's node-local cluster DNS: it reads what it answers from, nothing else.
			ObjectMeta: meta(SkiffDNS, nil),
			Rules: rules(
				rule("list", "watch").groups(legacyGroup).resources("services", "namespaces"),
				rule("list", "watch").groups(discoveryGroup).resources("endpointslices"),
			),
		},
		{
			// The network policy agent reads the policies and what they select, nothing else.
			ObjectMeta: meta(SkiffNetworkPolicy, nil),
			Rules: rules(
				rule("list", "watch").groups(legacyGroup).resources("pods", "namespaces", "nodes"),
				rule("list", "watch").groups(networkingGroup).resources("networkpolicies"),
				rule("list", "watch").groups("policy.networking.k8s.io").resources("clusternetworkpolicies"),
			),
		},
		{
			// The HTTP data plane reads what it routes: the Ingresses of its classes, their
			// Services and endpoints, and the TLS Secrets they name (it lists only those of type
			// kubernetes.io/tls, but RBAC cannot say so).
			ObjectMeta: meta(SkiffIngress, nil),
			Rules: rules(
				rule("list", "watch").groups(networkingGroup).resources("ingresses", "ingressclasses"),
				rule("list", "watch").groups(legacyGroup).resources("services", "secrets", "namespaces"),
				rule("list", "watch").groups(discoveryGroup).resources("endpointslices"),
				// The Gateway API's table, decided on the node as the gateway controller decides.
				rule("list", "watch").groups("gateway.networking.k8s.io").resources("gatewayclasses", "gateways", "httproutes", "grpcroutes", "referencegrants"),
				// Nodes: which of them holds each Gateway's own address (gateway.Holder).
				rule("list", "watch").groups(legacyGroup).resources("nodes"),
			),
		},
		{
			// The Ingress status controller creates the class skiff and writes the Ingresses'
			// status.loadBalancer from the workers' addresses, under its Lease.
			ObjectMeta: meta(SkiffIngressStatus, nil),
			Rules: rules(
				rule("list", "watch", "create").groups(networkingGroup).resources("ingressclasses"),
				rule("list", "watch").groups(networkingGroup).resources("ingresses"),
				rule("update", "patch").groups(networkingGroup).resources("ingresses/status"),
				rule("list", "watch").groups(legacyGroup).resources("nodes"),
				rule("create").groups(coordinationGroup).resources("leases"),
				rule("get", "update").groups(coordinationGroup).resources("leases").names("skiff-ingress-status"),
				eventsRuleBuilder(),
			),
		},
		{
			ObjectMeta: meta("system:persistent-volume-provisioner", nil),
			Rules: rules(
				rule("get", "list", "watch", "create", "delete").groups(legacyGroup).resources("persistentvolumes"),
				rule("get", "list", "watch", "update").groups(legacyGroup).resources("persistentvolumeclaims"),
				rule(read...).groups(storageGroup).resources("storageclasses"),
				rule("watch").groups(legacyGroup).resources("events"),
				eventsRuleBuilder(),
			),
		},
		{
			ObjectMeta: meta("system:certificates.k8s.io:certificatesigningrequests:nodeclient", nil),
			Rules:      rules(rule("create").groups(certificatesGroup).resources("certificatesigningrequests/nodeclient")),
		},
		{
			ObjectMeta: meta("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", nil),
			Rules:      rules(rule("create").groups(certificatesGroup).resources("certificatesigningrequests/selfnodeclient")),
		},
		signerApprover("system:certificates.k8s.io:kube-apiserver-client-approver", "kubernetes.io/kube-apiserver-client"),
		signerApprover("system:certificates.k8s.io:kube-apiserver-client-kubelet-approver", "kubernetes.io/kube-apiserver-client-kubelet"),
		signerApprover("system:certificates.k8s.io:kubelet-serving-approver", "kubernetes.io/kubelet-serving"),
		signerApprover("system:certificates.k8s.io:legacy-unknown-approver", "kubernetes.io/legacy-unknown"),
		{
			ObjectMeta: meta("system:service-account-issuer-discovery", nil),
			Rules: rules(rule("get").urls("/.well-known/openid-configuration", "/.well-known/openid-configuration/",
				"/openid/v1/jwks", "/openid/v1/jwks/")),
		},
		{
			ObjectMeta: meta("system:node-proxier", nil),
			Rules: rules(
				rule("list", "watch").groups(legacyGroup).resources("services", "endpoints"),
				rule(read...).groups(legacyGroup).resources("nodes"),
				eventsRuleBuilder(),
				rule("list", "watch").groups(discoveryGroup).resources("endpointslices"),
				rule("list", "watch").groups(networkingGroup).resources("servicecidrs"),
			),
		},
		{
			ObjectMeta: meta("system:kube-scheduler", nil),
			Rules: rules(
				eventsRuleBuilder(),
				rule("create").groups(coordinationGroup).resources("leases"),
				rule("get", "list", "update", "watch").groups(coordinationGroup).resources("leases").names("kube-scheduler"),
				rule("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch").groups(coordinationGroup).resources("leasecandidates"),
				rule(read...).groups(legacyGroup).resources("nodes"),
				rule("get", "list", "watch", "delete").groups(legacyGroup).resources("pods"),
				rule("create").groups(legacyGroup).resources("bindings", "pods/binding"),
				rule("patch", "update").groups(legacyGroup).resources("pods/status"),
				rule(read...).groups(legacyGroup).resources("replicationcontrollers", "services"),
				rule(read...).groups(appsGroup, extensionsGroup).resources("replicasets"),
				rule(read...).groups(appsGroup).resources("statefulsets"),
				rule(read...).groups(policyGroup).resources("poddisruptionbudgets"),
				rule(read...).groups(legacyGroup).resources("persistentvolumeclaims", "persistentvolumes"),
				rule("create").groups(authenticationGroup).resources("tokenreviews"),
				rule("create").groups(authorizationGroup).resources("subjectaccessreviews"),
				rule(read...).groups(storageGroup).resources("csinodes"),
				rule(read...).groups(storageGroup).resources("volumeattachments"),
				rule(read...).groups(legacyGroup).resources("namespaces"),
				rule(read...).groups(storageGroup).resources("csidrivers"),
				rule(read...).groups(storageGroup).resources("csistoragecapacities"),
			),
		},
		{
			ObjectMeta: meta("system:volume-scheduler", nil),
			Rules: rules(
				rule("get", "list", "watch", "patch", "update").groups(legacyGroup).resources("persistentvolumes"),
				rule(read...).groups(storageGroup).resources("storageclasses"),
				rule("get", "list", "watch", "patch", "update").groups(legacyGroup).resources("persistentvolumeclaims"),
			),
		},
	}
}

func eventsRuleBuilder() *ruleBuilder {
	r := eventsRule()
	return &ruleBuilder{r: r}
}

func signerApprover(name, signer string) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{
		ObjectMeta: meta(name, nil),
		Rules:      rules(rule("approve").groups(certificatesGroup).resources("signers").names(signer)),
	}
}

func subjects(kind string, names ...string) []rbacv1.Subject {
	out := make([]rbacv1.Subject, 0, len(names))
	for _, n := range names {
		out = append(out, rbacv1.Subject{Kind: kind, APIGroup: rbacv1.GroupName, Name: n})
	}
	return out
}

func serviceAccount(namespace, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}
}

func clusterBinding(role string, s ...rbacv1.Subject) rbacv1.ClusterRoleBinding {
	return rbacv1.ClusterRoleBinding{
		ObjectMeta: meta(role, nil),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   s,
	}
}

// ClusterRoleBindings are the default cluster role bindings, controller bindings excluded.
func ClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	return []rbacv1.ClusterRoleBinding{
		clusterBinding("cluster-admin", subjects(rbacv1.GroupKind, SystemPrivilegedGroup)...),
		clusterBinding("system:monitoring", subjects(rbacv1.GroupKind, MonitoringGroup)...),
		clusterBinding("system:discovery", subjects(rbacv1.GroupKind, AllAuthenticated)...),
		clusterBinding("system:basic-user", subjects(rbacv1.GroupKind, AllAuthenticated)...),
		clusterBinding("system:public-info-viewer", subjects(rbacv1.GroupKind, AllAuthenticated, AllUnauthenticated)...),
		clusterBinding("system:node-proxier", subjects(rbacv1.UserKind, KubeProxy)...),
		clusterBinding("system:kube-controller-manager", subjects(rbacv1.UserKind, KubeControllerManager)...),
		clusterBinding("system:kube-dns", serviceAccount("kube-system", "kube-dns")),
		clusterBinding(SkiffDNS, subjects(rbacv1.UserKind, SkiffDNS)...),
		clusterBinding(SkiffNetworkPolicy, subjects(rbacv1.UserKind, SkiffNetworkPolicy)...),
		clusterBinding(SkiffIngress, append(subjects(rbacv1.UserKind, SkiffIngress), subjects(rbacv1.GroupKind, SkiffIngressGroup)...)...),
		clusterBinding(SkiffIngressStatus, subjects(rbacv1.UserKind, SkiffIngressStatus)...),
		clusterBinding("system:kube-scheduler", subjects(rbacv1.UserKind, KubeScheduler)...),
		clusterBinding("system:volume-scheduler", subjects(rbacv1.UserKind, KubeScheduler)...),
		// No subjects: nodes are authorized by the Node authorizer, as upstream since v1.8.
		clusterBinding("system:node"),
		clusterBinding("system:service-account-issuer-discovery", subjects(rbacv1.GroupKind, ServiceAccountsGroup)...),
	}
}

// NamespaceRoles are the default Roles by namespace.
func NamespaceRoles() []rbacv1.Role {
	return []rbacv1.Role{
		{
			ObjectMeta: nsMeta("kube-system", "extension-apiserver-authentication-reader"),
			Rules:      rules(rule(read...).groups(legacyGroup).resources("configmaps").names("extension-apiserver-authentication")),
		},
		{
			ObjectMeta: nsMeta("kube-system", "system::leader-locking-kube-controller-manager"),
			Rules: rules(
				rule("watch").groups(legacyGroup).resources("configmaps"),
				rule("get", "update").groups(legacyGroup).resources("configmaps").names("kube-controller-manager"),
				rule("create", "get", "list", "update", "watch").groups(coordinationGroup).resources("leases"),
				rule("create", "get", "list", "update", "watch").groups(coordinationGroup).resources("leasecandidates"),
			),
		},
		{
			ObjectMeta: nsMeta("kube-system", "system::leader-locking-kube-scheduler"),
			Rules: rules(
				rule("watch").groups(legacyGroup).resources("configmaps"),
				rule("get", "update").groups(legacyGroup).resources("configmaps").names("kube-scheduler"),
				rule("create", "get", "list", "update", "watch").groups(coordinationGroup).resources("leases"),
				rule("create", "get", "list", "update", "watch").groups(coordinationGroup).resources("leasecandidates"),
			),
		},
		{
			ObjectMeta: nsMeta("kube-system", "system:controller:bootstrap-signer"),
			Rules:      rules(rule(read...).groups(legacyGroup).resources("secrets")),
		},
		{
			ObjectMeta: nsMeta("kube-system", "system:controller:cloud-provider"),
			Rules:      rules(rule("create", "get", "list", "watch").groups(legacyGroup).resources("configmaps")),
		},
		{
			ObjectMeta: nsMeta("kube-system", "system:controller:token-cleaner"),
			Rules: rules(
				rule("delete", "get", "list", "watch").groups(legacyGroup).resources("secrets"),
				eventsRuleBuilder(),
			),
		},
		{
			ObjectMeta: nsMeta("kube-public", "system:controller:bootstrap-signer"),
			Rules: rules(
				rule(read...).groups(legacyGroup).resources("configmaps"),
				rule("update").groups(legacyGroup).resources("configmaps").names("cluster-info"),
				eventsRuleBuilder(),
			),
		},
	}
}

func roleBinding(namespace, role string, s ...rbacv1.Subject) rbacv1.RoleBinding {
	return rbacv1.RoleBinding{
		ObjectMeta: nsMeta(namespace, role),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
		Subjects:   s,
	}
}

// NamespaceRoleBindings are the default RoleBindings by namespace.
func NamespaceRoleBindings() []rbacv1.RoleBinding {
	b := roleBinding("kube-system", "extension-apiserver-authentication-reader",
		subjects(rbacv1.UserKind, KubeControllerManager, KubeScheduler)...)
	b.Name = "system::extension-apiserver-authentication-reader"
	return []rbacv1.RoleBinding{
		b,
		roleBinding("kube-system", "system::leader-locking-kube-controller-manager",
			append(subjects(rbacv1.UserKind, KubeControllerManager), serviceAccount("kube-system", "kube-controller-manager"),
				serviceAccount("kube-system", "leader-election-controller"))...),
		roleBinding("kube-system", "system::leader-locking-kube-scheduler",
			append(subjects(rbacv1.UserKind, KubeScheduler), serviceAccount("kube-system", "kube-scheduler"))...),
		roleBinding("kube-system", "system:controller:bootstrap-signer", serviceAccount("kube-system", "bootstrap-signer")),
		roleBinding("kube-system", "system:controller:cloud-provider", serviceAccount("kube-system", "cloud-provider")),
		roleBinding("kube-system", "system:controller:token-cleaner", serviceAccount("kube-system", "token-cleaner")),
		roleBinding("kube-public", "system:controller:bootstrap-signer", serviceAccount("kube-system", "bootstrap-signer")),
	}
}
