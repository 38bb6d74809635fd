package flowcontrol

import (
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-sh/skiff/internal/request"
)

// schemaBuilder builds FlowSchemas for tests.
type schemaBuilder struct{ fs *flowcontrolv1.FlowSchema }

func makeSchema(name, level string, precedence int32) *schemaBuilder {
	return &schemaBuilder{fs: &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level},
			MatchingPrecedence:         precedence,
		},
	}}
}

func (b *schemaBuilder) by(m flowcontrolv1.FlowDistinguisherMethodType) *schemaBuilder {
	b.fs.Spec.DistinguisherMethod = &flowcontrolv1.FlowDistinguisherMethod{Type: m}
	return b
}

func (b *schemaBuilder) rule(subjects []flowcontrolv1.Subject, res []flowcontrolv1.ResourcePolicyRule, nonRes []flowcontrolv1.NonResourcePolicyRule) *schemaBuilder {
	b.fs.Spec.Rules = append(b.fs.Spec.Rules, flowcontrolv1.PolicyRulesWithSubjects{Subjects: subjects, ResourceRules: res, NonResourceRules: nonRes})
	return b
}

func (b *schemaBuilder) obj() *flowcontrolv1.FlowSchema { return b.fs }

func user(name string) flowcontrolv1.Subject {
	return flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: name}}
}

func group(name string) flowcontrolv1.Subject {
	return flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: name}}
}

func serviceAccount(ns, name string) flowcontrolv1.Subject {
	return flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: ns, Name: name}}
}

func resources(verbs, groups, res []string, clusterScope bool, namespaces ...string) []flowcontrolv1.ResourcePolicyRule {
	return []flowcontrolv1.ResourcePolicyRule{{Verbs: verbs, APIGroups: groups, Resources: res, ClusterScope: clusterScope, Namespaces: namespaces}}
}

var all = []string{"*"}

func TestClassify(t *testing.T) {
	schemas := []*flowcontrolv1.FlowSchema{
		makeSchema("catch-all", "catch-all", 10000).by(flowcontrolv1.FlowDistinguisherMethodByUserType).
			rule([]flowcontrolv1.Subject{group("system:unauthenticated"), group("system:authenticated")},
				resources(all, all, all, true, "*"), []flowcontrolv1.NonResourcePolicyRule{{Verbs: all, NonResourceURLs: all}}).obj(),
		makeSchema("exempt", "exempt", 1).
			rule([]flowcontrolv1.Subject{group("system:masters")}, resources(all, all, all, true, "*"), []flowcontrolv1.NonResourcePolicyRule{{Verbs: all, NonResourceURLs: all}}).obj(),
		makeSchema("probes", "exempt", 2).
			rule([]flowcontrolv1.Subject{group("system:unauthenticated"), group("system:authenticated")}, nil,
				[]flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/readyz/*"}}}).obj(),
		makeSchema("system-nodes", "system", 500).by(flowcontrolv1.FlowDistinguisherMethodByUserType).
			rule([]flowcontrolv1.Subject{group("system:nodes")}, resources(all, all, all, true, "*"), nil).obj(),
		makeSchema("kube-controller-manager", "workload-high", 800).by(flowcontrolv1.FlowDistinguisherMethodByNamespaceType).
			rule([]flowcontrolv1.Subject{user("system:kube-controller-manager")}, resources(all, all, all, true, "*"), nil).obj(),
		// Same precedence as kube-controller-manager: the name decides ("a-" sorts first).
		makeSchema("a-pods-in-web", "workload-low", 800).by(flowcontrolv1.FlowDistinguisherMethodByNamespaceType).
			rule([]flowcontrolv1.Subject{user("*")}, resources([]string{"list", "get"}, []string{""}, []string{"pods", "pods/log"}, false, "web"), nil).obj(),
		makeSchema("sa-in-ops", "workload-low", 900).
			rule([]flowcontrolv1.Subject{serviceAccount("ops", "*")}, resources(all, []string{"apps"}, all, false, "*"), nil).obj(),
	}
	sortSchemas(schemas)

	alice := &request.UserInfo{Name: "alice", Groups: []string{"system:authenticated"}}
	admin := &request.UserInfo{Name: "admin", Groups: []string{"system:masters", "system:authenticated"}}
	node := &request.UserInfo{Name: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"}}
	kcm := &request.UserInfo{Name: "system:kube-controller-manager", Groups: []string{"system:authenticated"}}
	opsSA := &request.UserInfo{Name: "system:serviceaccount:ops:deployer", Groups: []string{"system:serviceaccounts", "system:authenticated"}}
	res := func(verb, group, resource, sub, ns string) *request.RequestInfo {
		return &request.RequestInfo{IsResourceRequest: true, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns}
	}
	nonRes := func(verb, path string) *request.RequestInfo { return &request.RequestInfo{Verb: verb, Path: path} }

	for _, tc := range []struct {
		name       string
		user       *request.UserInfo
		info       *request.RequestInfo
		wantSchema string
		wantDist   string
	}{
		{"masters are exempt", admin, res("list", "", "pods", "", ""), "exempt", ""},
		{"a user falls to catch-all, flow by user", alice, res("list", "", "configmaps", "", "default"), "catch-all", "alice"},
		{"nodes' group", node, res("get", "", "nodes", "", ""), "system-nodes", "system:node:n1"},
		{"kcm by namespace", kcm, res("update", "apps", "deployments", "status", "kube-system"), "kube-controller-manager", "kube-system"},
		{"equal precedence: name order wins", kcm, res("list", "", "pods", "", "web"), "a-pods-in-web", "web"},
		{"subresource named as resource/sub", alice, res("get", "", "pods", "log", "web"), "a-pods-in-web", "web"},
		{"subresource not listed", alice, res("get", "", "pods", "exec", "web"), "catch-all", "alice"},
		{"namespaced rule does not match cluster scope", alice, res("list", "", "pods", "", ""), "catch-all", "alice"},
		{"verb not listed", alice, res("delete", "", "pods", "", "web"), "catch-all", "alice"},
		{"service account wildcard in its namespace", opsSA, res("create", "apps", "deployments", "", "prod"), "sa-in-ops", ""},
		{"service account rule needs its api group", opsSA, res("create", "", "configmaps", "", "prod"), "catch-all", "system:serviceaccount:ops:deployer"},
		{"non-resource exact", alice, nonRes("get", "/healthz"), "probes", ""},
		{"non-resource prefix", alice, nonRes("get", "/readyz/etcd"), "probes", ""},
		{"non-resource prefix's own path", alice, nonRes("get", "/readyz"), "probes", ""},
		{"non-resource other path", alice, nonRes("get", "/readyzz"), "catch-all", "alice"},
		{"non-resource verb", alice, nonRes("post", "/healthz"), "catch-all", "alice"},
		{"no group matches nothing", &request.UserInfo{Name: "x"}, res("get", "", "pods", "", "a"), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, dist := Classify(schemas, Digest{User: tc.user, Info: tc.info})
			got := ""
			if fs != nil {
				got = fs.Name
			}
			if got != tc.wantSchema || dist != tc.wantDist {
				t.Fatalf("Classify = %q, %q; want %q, %q", got, dist, tc.wantSchema, tc.wantDist)
			}
		})
	}
}

func TestServiceAccountOf(t *testing.T) {
	for _, tc := range []struct {
		user     string
		ns, name string
		ok       bool
	}{
		{"system:serviceaccount:kube-system:default", "kube-system", "default", true},
		{"system:serviceaccount:a", "", "", false},
		{"system:serviceaccount:a:b:c", "a", "b:c", false},
		{"alice", "", "", false},
	} {
		ns, name, ok := serviceAccountOf(tc.user)
		if ok != tc.ok || (ok && (ns != tc.ns || name != tc.name)) {
			t.Errorf("serviceAccountOf(%q) = %q, %q, %v", tc.user, ns, name, ok)
		}
	}
}
