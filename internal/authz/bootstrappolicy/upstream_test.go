package bootstrappolicy

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// upstreamDir holds upstream's golden files of its default policy (see its README.md).
const upstreamDir = "testdata/upstream-v1.33.13"

// loadList reads one of upstream's v1 List files into items of T.
func loadList[T any](t *testing.T, file string) []T {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(upstreamDir, file))
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Items []T `json:"items"`
	}
	if err := yaml.Unmarshal(data, &list); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if len(list.Items) == 0 {
		t.Fatalf("%s: no items", file)
	}
	return list.Items
}

// atoms expands rules into the single permissions they grant ("verb group/resource name" or
// "verb url"), so that two policies compare equal however their rules are grouped.
func atoms(rules []rbacv1.PolicyRule) []string {
	set := map[string]bool{}
	for _, r := range rules {
		for _, v := range r.Verbs {
			for _, u := range r.NonResourceURLs {
				set[v+" url:"+u] = true
			}
			names := r.ResourceNames
			if len(names) == 0 {
				names = []string{""}
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, n := range names {
						set[fmt.Sprintf("%s %s/%s %s", v, g, res, n)] = true
					}
				}
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// diff lists what one sorted set has that the other lacks.
func diff(want, got []string) (missing, extra []string) {
	for _, w := range want {
		if !slices.Contains(got, w) {
			missing = append(missing, w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			extra = append(extra, g)
		}
	}
	return missing, extra
}

func subjectStrings(ss []rbacv1.Subject) []string {
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		out = append(out, s.Kind+":"+s.Namespace+"/"+s.Name)
	}
	sort.Strings(out)
	return out
}

func bootstrapLabels(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}

// intendedDifference is a role's deliberate departure from upstream: the permissions it adds
// (extra) or leaves out (missing), and why.
type intendedDifference struct {
	extra, missing []string
	why            string
}

// intendedRoleDifferences are the roles skiff deliberately holds differently from upstream.
// Anything else that differs fails the test.
var intendedRoleDifferences = map[string]intendedDifference{
	"system:controller:certificate-controller": {
		extra: []string{"approve certificates.k8s.io/signers kubernetes.io/kubelet-serving"},
		why: "skiff's csrapproving controller approves a kubelet's serving-certificate request when it " +
			"names only its own node's names and addresses (upstream leaves them to an external approver, " +
			"so kubelets there serve self-signed certificates)",
	},
}

// skiffOnly are objects skiff adds that upstream does not have, by kind/name, with the reason.
var skiffOnly = map[string]string{
	"ClusterRole/system:skiff:dns":                                                     "the identity of skiff's cluster DNS server (upstream runs CoreDNS with its own manifest's role)",
	"ClusterRoleBinding/system:skiff:dns":                                              "binds system:skiff:dns to its role",
	"ClusterRole/system:skiff:network-policy":                                          "the identity of skiff's network policy agent (upstream leaves NetworkPolicy to a network plugin with its own manifest's role)",
	"ClusterRoleBinding/system:skiff:network-policy":                                   "binds system:skiff:network-policy to its role",
	"ClusterRole/system:skiff:ingress":                                                 "the identity of skiff's built-in HTTP data plane (upstream runs an ingress controller with its own manifest's role)",
	"ClusterRoleBinding/system:skiff:ingress":                                          "binds system:skiff:ingress to its role",
	"ClusterRole/system:skiff:ingress-status":                                          "the identity of skiff's Ingress status controller (creates the class skiff, writes status.loadBalancer)",
	"ClusterRoleBinding/system:skiff:ingress-status":                                   "binds system:skiff:ingress-status to its role",
	"ClusterRole/system:controller:gateway-controller":                                 "skiff's Gateway API controller: status of the GatewayClasses, Gateways and HTTPRoutes of skiff's classes (upstream has no Gateway API controller)",
	"ClusterRoleBinding/system:controller:gateway-controller":                          "binds it to its kube-system service account, as every controller role",
	"ClusterRole/system:controller:dns-endpoints-controller":                           "skiff's controller that publishes the node-local DNS servers as the kube-dns Service's endpoints",
	"ClusterRoleBinding/system:controller:dns-endpoints-controller":                    "binds it to its kube-system service account, as every controller role",
	"ClusterRole/system:controller:volumeattributesclass-protection-controller":        "upstream's with the VolumeAttributesClass gate on, which skiff serves by default (the dump is of default gates)",
	"ClusterRoleBinding/system:controller:volumeattributesclass-protection-controller": "binds it to its kube-system service account, as every controller role",
}

// TestClusterRolesMatchUpstream compares every default ClusterRole (controllers' included) with
// upstream's: the permissions granted, the aggregation rule and the labels.
func TestClusterRolesMatchUpstream(t *testing.T) {
	upstream := append(loadList[rbacv1.ClusterRole](t, "cluster-roles.yaml"), loadList[rbacv1.ClusterRole](t, "controller-roles.yaml")...)
	ours := map[string]rbacv1.ClusterRole{}
	for _, r := range append(ClusterRoles(), ControllerRoles()...) {
		if _, dup := ours[r.Name]; dup {
			t.Errorf("ClusterRole %s defined twice", r.Name)
		}
		ours[r.Name] = r
	}
	seen := map[string]bool{}
	for _, want := range upstream {
		seen[want.Name] = true
		got, ok := ours[want.Name]
		if !ok {
			t.Errorf("ClusterRole %s: missing", want.Name)
			continue
		}
		missing, extra := diff(atoms(want.Rules), atoms(got.Rules))
		if d, ok := intendedRoleDifferences[want.Name]; ok {
			if !slices.Equal(missing, d.missing) || !slices.Equal(extra, d.extra) {
				t.Errorf("ClusterRole %s: intended difference changed: missing %q, extra %q; listed %q, %q (%s)", want.Name, missing, extra, d.missing, d.extra, d.why)
			}
			missing, extra = nil, nil
		}
		if len(missing) > 0 || len(extra) > 0 {
			t.Errorf("ClusterRole %s: missing %q, extra %q", want.Name, missing, extra)
		}
		if bootstrapLabels(want.Labels) != bootstrapLabels(got.Labels) {
			t.Errorf("ClusterRole %s: labels %s, upstream %s", want.Name, bootstrapLabels(got.Labels), bootstrapLabels(want.Labels))
		}
		if (want.AggregationRule == nil) != (got.AggregationRule == nil) {
			t.Errorf("ClusterRole %s: aggregation rule %v, upstream %v", want.Name, got.AggregationRule, want.AggregationRule)
		} else if want.AggregationRule != nil && fmt.Sprint(want.AggregationRule.ClusterRoleSelectors) != fmt.Sprint(got.AggregationRule.ClusterRoleSelectors) {
			t.Errorf("ClusterRole %s: aggregation %v, upstream %v", want.Name, got.AggregationRule.ClusterRoleSelectors, want.AggregationRule.ClusterRoleSelectors)
		}
	}
	for name := range ours {
		if !seen[name] {
			if _, ok := skiffOnly["ClusterRole/"+name]; !ok {
				t.Errorf("ClusterRole %s: not upstream's (list it in skiffOnly with a reason, or remove it)", name)
			}
		}
	}
}

// TestClusterRoleBindingsMatchUpstream compares every default ClusterRoleBinding (controllers'
// included): role and subjects.
func TestClusterRoleBindingsMatchUpstream(t *testing.T) {
	upstream := append(loadList[rbacv1.ClusterRoleBinding](t, "cluster-role-bindings.yaml"), loadList[rbacv1.ClusterRoleBinding](t, "controller-role-bindings.yaml")...)
	ours := map[string]rbacv1.ClusterRoleBinding{}
	for _, b := range append(ClusterRoleBindings(), ControllerRoleBindings()...) {
		ours[b.Name] = b
	}
	seen := map[string]bool{}
	for _, want := range upstream {
		seen[want.Name] = true
		got, ok := ours[want.Name]
		if !ok {
			t.Errorf("ClusterRoleBinding %s: missing", want.Name)
			continue
		}
		if got.RoleRef != want.RoleRef {
			t.Errorf("ClusterRoleBinding %s: role %+v, upstream %+v", want.Name, got.RoleRef, want.RoleRef)
		}
		if missing, extra := diff(subjectStrings(want.Subjects), subjectStrings(got.Subjects)); len(missing) > 0 || len(extra) > 0 {
			t.Errorf("ClusterRoleBinding %s: missing subjects %q, extra %q", want.Name, missing, extra)
		}
	}
	for name := range ours {
		if !seen[name] {
			if _, ok := skiffOnly["ClusterRoleBinding/"+name]; !ok {
				t.Errorf("ClusterRoleBinding %s: not upstream's (list it in skiffOnly with a reason, or remove it)", name)
			}
		}
	}
}

// TestNamespaceRolesMatchUpstream compares the kube-system and kube-public Roles and RoleBindings.
func TestNamespaceRolesMatchUpstream(t *testing.T) {
	ours := map[string]rbacv1.Role{}
	for _, r := range NamespaceRoles() {
		ours[r.Namespace+"/"+r.Name] = r
	}
	seen := map[string]bool{}
	for _, want := range loadList[rbacv1.Role](t, "namespace-roles.yaml") {
		key := want.Namespace + "/" + want.Name
		seen[key] = true
		got, ok := ours[key]
		if !ok {
			t.Errorf("Role %s: missing", key)
			continue
		}
		if missing, extra := diff(atoms(want.Rules), atoms(got.Rules)); len(missing) > 0 || len(extra) > 0 {
			t.Errorf("Role %s: missing %q, extra %q", key, missing, extra)
		}
	}
	for key := range ours {
		if !seen[key] {
			if _, ok := skiffOnly["Role/"+key]; !ok {
				t.Errorf("Role %s: not upstream's", key)
			}
		}
	}
	bindings := map[string]rbacv1.RoleBinding{}
	for _, b := range NamespaceRoleBindings() {
		bindings[b.Namespace+"/"+b.Name] = b
	}
	seen = map[string]bool{}
	for _, want := range loadList[rbacv1.RoleBinding](t, "namespace-role-bindings.yaml") {
		key := want.Namespace + "/" + want.Name
		seen[key] = true
		got, ok := bindings[key]
		if !ok {
			t.Errorf("RoleBinding %s: missing", key)
			continue
		}
		if got.RoleRef != want.RoleRef {
			t.Errorf("RoleBinding %s: role %+v, upstream %+v", key, got.RoleRef, want.RoleRef)
		}
		if missing, extra := diff(subjectStrings(want.Subjects), subjectStrings(got.Subjects)); len(missing) > 0 || len(extra) > 0 {
			t.Errorf("RoleBinding %s: missing subjects %q, extra %q", key, missing, extra)
		}
	}
	for key := range bindings {
		if !seen[key] {
			if _, ok := skiffOnly["RoleBinding/"+key]; !ok {
				t.Errorf("RoleBinding %s: not upstream's", key)
			}
		}
	}
}
