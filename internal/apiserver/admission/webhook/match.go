package webhook

import (
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Request is what rule matching looks at in a request.
type Request struct {
	Operation   admissionregistrationv1.OperationType
	Resource    schema.GroupVersionResource
	Subresource string
	// Namespaced is the resource's scope. A Namespace object itself counts as cluster-scoped.
	Namespaced bool
}

// MatchesRules reports whether any rule selects the request.
func MatchesRules(rules []admissionregistrationv1.RuleWithOperations, req Request) bool {
	for i := range rules {
		if MatchesRule(&rules[i], req) {
			return true
		}
	}
	return false
}

// MatchesRule applies Kubernetes' rule semantics: "*" in operations, groups and versions matches
// anything; in resources "*" is every resource without its subresources, "*/*" everything,
// "pods/*" every subresource of pods, "*/status" the status of everything; scope "*" (the default)
// matches both scopes.
func MatchesRule(r *admissionregistrationv1.RuleWithOperations, req Request) bool {
	return matchOperation(r.Operations, req.Operation) &&
		matchString(r.APIGroups, req.Resource.Group) &&
		matchString(r.APIVersions, req.Resource.Version) &&
		matchResource(r.Resources, req.Resource.Resource, req.Subresource) &&
		matchScope(r.Scope, req.Namespaced)
}

func matchOperation(ops []admissionregistrationv1.OperationType, op admissionregistrationv1.OperationType) bool {
	for _, o := range ops {
		if o == admissionregistrationv1.OperationAll || o == op {
			return true
		}
	}
	return false
}

func matchString(items []string, s string) bool {
	for _, i := range items {
		if i == "*" || i == s {
			return true
		}
	}
	return false
}

func matchResource(items []string, resource, subresource string) bool {
	for _, item := range items {
		res, sub, hasSub := strings.Cut(item, "/")
		switch {
		case item == "*/*":
			return true
		case !hasSub:
			if subresource == "" && (res == "*" || res == resource) {
				return true
			}
		default:
			if (res == "*" || res == resource) && (sub == "*" || sub == subresource) && subresource != "" {
				return true
			}
		}
	}
	return false
}

func matchScope(scope *admissionregistrationv1.ScopeType, namespaced bool) bool {
	if scope == nil {
		return true
	}
	switch *scope {
	case admissionregistrationv1.ClusterScope:
		return !namespaced
	case admissionregistrationv1.NamespacedScope:
		return namespaced
	}
	return true
}

// MatchesSelector reports whether a label selector (nil or empty: everything) selects any of the
// label sets: the object selector is tried on the new and the old object (the caller passes the
// labels of those that exist), as Kubernetes does.
func MatchesSelector(sel *metav1.LabelSelector, sets ...map[string]string) (bool, error) {
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		return true, nil
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false, err
	}
	for _, l := range sets {
		if s.Matches(labels.Set(l)) {
			return true, nil
		}
	}
	return false, nil
}

// IsExempt reports whether webhooks may never see the resource: Kubernetes never sends webhook
// configurations or admission policies to webhooks, so a broken webhook cannot lock itself in.
func IsExempt(gr schema.GroupResource) bool {
	return gr.Group == admissionregistrationv1.GroupName
}
