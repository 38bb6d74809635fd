package bootstrappolicy

import (
	"reflect"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// autoUpdate: the reconciler leaves objects annotated autoupdate=false alone, as upstream.
func autoUpdate(m *metav1.ObjectMeta) bool { return m.Annotations[AutoUpdateAnnotation] != "false" }

func mergeMeta(existing *metav1.ObjectMeta, desired *metav1.ObjectMeta) bool {
	changed := false
	for _, pair := range []struct {
		dst *map[string]string
		src map[string]string
	}{
		{&existing.Labels, desired.Labels}, {&existing.Annotations, desired.Annotations},
	} {
		for k, v := range pair.src {
			if _, ok := (*pair.dst)[k]; ok {
				continue
			}
			if *pair.dst == nil {
				*pair.dst = map[string]string{}
			}
			(*pair.dst)[k] = v
			changed = true
		}
	}
	return changed
}

func addMissingRules(existing, desired []rbacv1.PolicyRule) ([]rbacv1.PolicyRule, bool) {
	changed := false
	for _, d := range desired {
		found := false
		for _, e := range existing {
			if reflect.DeepEqual(normal(e), normal(d)) {
				found = true
				break
			}
		}
		if !found {
			existing = append(existing, d)
			changed = true
		}
	}
	return existing, changed
}

// normal treats nil and empty slices alike.
func normal(r rbacv1.PolicyRule) rbacv1.PolicyRule {
	fix := func(s []string) []string {
		if len(s) == 0 {
			return nil
		}
		return s
	}
	return rbacv1.PolicyRule{Verbs: fix(r.Verbs), APIGroups: fix(r.APIGroups), Resources: fix(r.Resources),
		ResourceNames: fix(r.ResourceNames), NonResourceURLs: fix(r.NonResourceURLs)}
}

// ReconcileClusterRole returns existing with desired's missing labels, annotations and rules (or
// aggregation selectors) added, and whether anything changed. Rules of aggregated roles are the
// aggregation controller's to write.
func ReconcileClusterRole(existing, desired *rbacv1.ClusterRole) (*rbacv1.ClusterRole, bool) {
	if !autoUpdate(&existing.ObjectMeta) {
		return existing, false
	}
	out := existing.DeepCopy()
	changed := mergeMeta(&out.ObjectMeta, &desired.ObjectMeta)
	if desired.AggregationRule != nil {
		if out.AggregationRule == nil {
			out.AggregationRule = &rbacv1.AggregationRule{}
		}
		for _, sel := range desired.AggregationRule.ClusterRoleSelectors {
			found := false
			for _, have := range out.AggregationRule.ClusterRoleSelectors {
				if reflect.DeepEqual(have, sel) {
					found = true
				}
			}
			if !found {
				out.AggregationRule.ClusterRoleSelectors = append(out.AggregationRule.ClusterRoleSelectors, sel)
				changed = true
			}
		}
		return out, changed
	}
	var added bool
	out.Rules, added = addMissingRules(out.Rules, desired.Rules)
	return out, changed || added
}

// ReconcileRole is ReconcileClusterRole for namespaced Roles.
func ReconcileRole(existing, desired *rbacv1.Role) (*rbacv1.Role, bool) {
	if !autoUpdate(&existing.ObjectMeta) {
		return existing, false
	}
	out := existing.DeepCopy()
	changed := mergeMeta(&out.ObjectMeta, &desired.ObjectMeta)
	var added bool
	out.Rules, added = addMissingRules(out.Rules, desired.Rules)
	return out, changed || added
}

// ReconcileSubjects adds desired's missing subjects to existing.
func ReconcileSubjects(existing, desired []rbacv1.Subject) ([]rbacv1.Subject, bool) {
	changed := false
	for _, d := range desired {
		found := false
		for _, e := range existing {
			if e.Kind == d.Kind && e.Name == d.Name && e.Namespace == d.Namespace {
				found = true
			}
		}
		if !found {
			existing = append(existing, d)
			changed = true
		}
	}
	return existing, changed
}
