package bootstrappolicy

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/skiff-sh/skiff/internal/authz/rbac"
	"github.com/skiff-sh/skiff/internal/controller/clusterroleaggregation"
	"github.com/skiff-sh/skiff/internal/request"
)

// rolesByName resolves the aggregated roles (admin, edit, view) as the controller would.
func rolesByName(t *testing.T) map[string][]rbacv1.PolicyRule {
	t.Helper()
	all := append(ClusterRoles(), ControllerRoles()...)
	ptrs := make([]*rbacv1.ClusterRole, len(all))
	for i := range all {
		ptrs[i] = &all[i]
	}
	out := map[string][]rbacv1.PolicyRule{}
	for _, r := range ptrs {
		if r.AggregationRule == nil {
			out[r.Name] = r.Rules
			continue
		}
		rules, err := clusterroleaggregation.AggregatedRules(r, ptrs)
		if err != nil {
			t.Fatal(err)
		}
		out[r.Name] = rules
	}
	return out
}

// TestDefaultRoleNames: every role and binding upstream v1.32 creates exists under its name.
func TestDefaultRoleNames(t *testing.T) {
	roles := rolesByName(t)
	for _, name := range []string{
		"cluster-admin", "admin", "edit", "view", "system:aggregate-to-admin", "system:aggregate-to-edit", "system:aggregate-to-view",
		"system:basic-user", "system:discovery", "system:public-info-viewer", "system:monitoring", "system:node", "system:node-proxier",
		"system:node-bootstrapper", "system:node-problem-detector", "system:kubelet-api-admin", "system:auth-delegator",
		"system:heapster", "system:kube-aggregator", "system:kube-dns", "system:kube-scheduler", "system:kube-controller-manager",
		"system:volume-scheduler", "system:persistent-volume-provisioner", "system:service-account-issuer-discovery",
		"system:certificates.k8s.io:certificatesigningrequests:nodeclient",
		"system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
		"system:certificates.k8s.io:kube-apiserver-client-approver",
		"system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
		"system:certificates.k8s.io:kubelet-serving-approver", "system:certificates.k8s.io:legacy-unknown-approver",
		"system:controller:attachdetach-controller", "system:controller:clusterrole-aggregation-controller",
		"system:controller:cronjob-controller", "system:controller:daemon-set-controller", "system:controller:deployment-controller",
		"system:controller:disruption-controller", "system:controller:endpoint-controller", "system:controller:endpointslice-controller",
		"system:controller:endpointslicemirroring-controller", "system:controller:generic-garbage-collector",
		"system:controller:horizontal-pod-autoscaler", "system:controller:job-controller", "system:controller:namespace-controller",
		"system:controller:node-controller", "system:controller:persistent-volume-binder", "system:controller:pod-garbage-collector",
		"system:controller:pv-protection-controller", "system:controller:pvc-protection-controller",
		"system:controller:replicaset-controller", "system:controller:replication-controller",
		"system:controller:resourcequota-controller", "system:controller:root-ca-cert-publisher", "system:controller:route-controller",
		"system:controller:service-account-controller", "system:controller:service-controller",
		"system:controller:statefulset-controller", "system:controller:ttl-controller", "system:controller:certificate-controller",
		"system:controller:ttl-after-finished-controller", "system:controller:ephemeral-volume-controller",
		"system:controller:expand-controller", "system:controller:legacy-service-account-token-cleaner",
		"system:controller:validatingadmissionpolicy-status-controller",
	} {
		if _, ok := roles[name]; !ok {
			t.Errorf("default clusterrole %q is missing", name)
		}
	}
	for _, r := range append(ClusterRoles(), ControllerRoles()...) {
		if r.Labels["kubernetes.io/bootstrapping"] != "rbac-defaults" || r.Annotations[AutoUpdateAnnotation] != "true" {
			t.Errorf("%s lacks the bootstrapping label or the autoupdate annotation", r.Name)
		}
	}
	bindings := map[string][]rbacv1.Subject{}
	for _, b := range append(ClusterRoleBindings(), ControllerRoleBindings()...) {
		if b.RoleRef.Kind != "ClusterRole" {
			t.Errorf("binding %s refers to a %s", b.Name, b.RoleRef.Kind)
		}
		if _, ok := roles[b.RoleRef.Name]; !ok {
			t.Errorf("binding %s refers to the missing role %s", b.Name, b.RoleRef.Name)
		}
		bindings[b.Name] = b.Subjects
	}
	wantSubjects := map[string]string{
		"cluster-admin":                           "Group:system:masters",
		"system:discovery":                        "Group:system:authenticated",
		"system:basic-user":                       "Group:system:authenticated",
		"system:public-info-viewer":               "Group:system:authenticated,Group:system:unauthenticated",
		"system:monitoring":                       "Group:system:monitoring",
		"system:node":                             "",
		"system:node-proxier":                     "User:system:kube-proxy",
		"system:kube-scheduler":                   "User:system:kube-scheduler",
		"system:volume-scheduler":                 "User:system:kube-scheduler",
		"system:kube-controller-manager":          "User:system:kube-controller-manager",
		"system:kube-dns":                         "ServiceAccount:kube-system/kube-dns",
		"system:service-account-issuer-discovery": "Group:system:serviceaccounts",
		"system:controller:job-controller":        "ServiceAccount:kube-system/job-controller",
	}
	for name, want := range wantSubjects {
		var got []string
		for _, s := range bindings[name] {
			id := s.Kind + ":" + s.Name
			if s.Namespace != "" {
				id = s.Kind + ":" + s.Namespace + "/" + s.Name
			}
			got = append(got, id)
		}
		if strings.Join(got, ",") != want {
			t.Errorf("binding %s subjects = %v, want %s", name, got, want)
		}
	}
}

func r(verb, group, resource, sub, ns, name string) *request.RequestInfo {
	return &request.RequestInfo{IsResourceRequest: true, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name}
}

// TestDefaultRoleRules checks each default role against what upstream's rules allow and deny.
func TestDefaultRoleRules(t *testing.T) {
	roles := rolesByName(t)
	tests := []struct {
		role  string
		req   *request.RequestInfo
		allow bool
	}{
		{"cluster-admin", r("escalate", "rbac.authorization.k8s.io", "clusterroles", "", "", "x"), true},
		{"cluster-admin", &request.RequestInfo{Verb: "get", Path: "/metrics"}, true},
		{"view", r("get", "", "pods", "", "ns", "p"), true},
		{"view", r("list", "apps", "deployments", "", "ns", ""), true},
		{"view", r("get", "", "pods", "log", "ns", "p"), true},
		{"view", r("get", "", "secrets", "", "ns", "s"), false},
		{"view", r("create", "", "pods", "", "ns", ""), false},
		{"view", r("get", "", "pods", "exec", "ns", "p"), false},
		{"view", r("list", "rbac.authorization.k8s.io", "roles", "", "ns", ""), false},
		{"view", r("list", "discovery.k8s.io", "endpointslices", "", "ns", ""), true},
		{"edit", r("create", "", "pods", "", "ns", ""), true},
		{"edit", r("get", "", "secrets", "", "ns", "s"), true},
		{"edit", r("create", "", "pods", "exec", "ns", "p"), true},
		{"edit", r("impersonate", "", "serviceaccounts", "", "ns", "sa"), true},
		{"edit", r("create", "rbac.authorization.k8s.io", "rolebindings", "", "ns", ""), false},
		{"edit", r("update", "", "resourcequotas", "", "ns", "q"), false},
		{"admin", r("create", "rbac.authorization.k8s.io", "rolebindings", "", "ns", ""), true},
		{"admin", r("create", "authorization.k8s.io", "localsubjectaccessreviews", "", "ns", ""), true},
		{"admin", r("update", "", "resourcequotas", "", "ns", "q"), false},
		{"system:basic-user", r("create", "authorization.k8s.io", "selfsubjectaccessreviews", "", "", ""), true},
		{"system:basic-user", r("create", "authorization.k8s.io", "selfsubjectrulesreviews", "", "", ""), true},
		{"system:basic-user", r("create", "authentication.k8s.io", "selfsubjectreviews", "", "", ""), true},
		{"system:basic-user", r("create", "authorization.k8s.io", "subjectaccessreviews", "", "", ""), false},
		{"system:discovery", &request.RequestInfo{Verb: "get", Path: "/apis/apps/v1"}, true},
		{"system:discovery", &request.RequestInfo{Verb: "get", Path: "/metrics"}, false},
		{"system:public-info-viewer", &request.RequestInfo{Verb: "get", Path: "/version"}, true},
		{"system:public-info-viewer", &request.RequestInfo{Verb: "get", Path: "/api"}, false},
		{"system:node", r("update", "", "nodes", "status", "", "n"), true},
		{"system:node", r("update", "", "pods", "status", "ns", "p"), true},
		{"system:node", r("create", "", "serviceaccounts", "token", "ns", "sa"), true},
		{"system:node", r("create", "", "events", "", "ns", ""), true},
		{"system:node", r("delete", "", "secrets", "", "ns", "s"), false},
		{"system:kube-scheduler", r("create", "", "pods", "binding", "ns", "p"), true},
		{"system:kube-scheduler", r("update", "coordination.k8s.io", "leases", "", "kube-system", "kube-scheduler"), true},
		{"system:kube-scheduler", r("update", "coordination.k8s.io", "leases", "", "kube-system", "other"), false},
		{"system:kube-scheduler", r("create", "", "pods", "", "ns", ""), false},
		{"system:volume-scheduler", r("patch", "", "persistentvolumes", "", "", "pv"), true},
		{"system:kube-controller-manager", r("watch", "apps", "deployments", "", "", ""), true},
		{"system:kube-controller-manager", r("get", "coordination.k8s.io", "leases", "", "kube-system", "kube-controller-manager"), true},
		{"system:kube-controller-manager", r("delete", "", "pods", "", "ns", "p"), false},
		{"system:controller:generic-garbage-collector", r("delete", "apps", "replicasets", "", "ns", "rs"), true},
		{"system:controller:namespace-controller", r("deletecollection", "", "configmaps", "", "ns", ""), true},
		{"system:controller:replicaset-controller", r("create", "", "pods", "", "ns", ""), true},
		{"system:controller:replicaset-controller", r("get", "", "secrets", "", "ns", "s"), false},
		{"system:controller:clusterrole-aggregation-controller", r("escalate", "rbac.authorization.k8s.io", "clusterroles", "", "", "admin"), true},
		{"system:controller:certificate-controller", r("sign", "certificates.k8s.io", "signers", "", "", "kubernetes.io/kube-apiserver-client"), true},
		{"system:certificates.k8s.io:kube-apiserver-client-approver", r("approve", "certificates.k8s.io", "signers", "", "", "kubernetes.io/kube-apiserver-client"), true},
		{"system:certificates.k8s.io:kube-apiserver-client-approver", r("approve", "certificates.k8s.io", "signers", "", "", "kubernetes.io/kubelet-serving"), false},
		{"system:kubelet-api-admin", r("get", "", "nodes", "proxy", "", "n"), true},
	}
	for _, tt := range tests {
		name := tt.role + " " + tt.req.Verb + " " + tt.req.Resource + "/" + tt.req.Subresource + tt.req.Path
		t.Run(name, func(t *testing.T) {
			rules, ok := roles[tt.role]
			if !ok {
				t.Fatalf("no role %s", tt.role)
			}
			if got := rbac.RulesAllow(tt.req, rules); got != tt.allow {
				t.Errorf("allowed = %v, want %v", got, tt.allow)
			}
		})
	}
}

func TestReconcileClusterRole(t *testing.T) {
	desired := ClusterRoles()[0] // cluster-admin
	existing := desired.DeepCopy()
	existing.Rules = existing.Rules[:1]
	existing.Labels = nil
	got, changed := ReconcileClusterRole(existing, &desired)
	if !changed || len(got.Rules) != 2 || got.Labels["kubernetes.io/bootstrapping"] != "rbac-defaults" {
		t.Errorf("reconcile = %v %+v", changed, got)
	}
	if _, changed := ReconcileClusterRole(got, &desired); changed {
		t.Error("a second reconcile changed the role")
	}
	existing.Annotations = map[string]string{AutoUpdateAnnotation: "false"}
	if _, changed := ReconcileClusterRole(existing, &desired); changed {
		t.Error("autoupdate=false was reconciled")
	}
	extra := desired.DeepCopy()
	extra.Rules = append(extra.Rules, rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/x"}})
	if got, changed := ReconcileClusterRole(extra, &desired); changed || len(got.Rules) != 3 {
		t.Error("reconcile removed or changed a rule the admin added")
	}
}
