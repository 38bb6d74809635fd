package rbac

import (
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/skiff-sh/skiff/internal/request"
)

// VerbMatches: the rule names the verb or "*".
func VerbMatches(rule *rbacv1.PolicyRule, verb string) bool {
	for _, v := range rule.Verbs {
		if v == rbacv1.VerbAll || v == verb {
			return true
		}
	}
	return false
}

// APIGroupMatches: the rule names the group or "*".
func APIGroupMatches(rule *rbacv1.PolicyRule, group string) bool {
	for _, g := range rule.APIGroups {
		if g == rbacv1.APIGroupAll || g == group {
			return true
		}
	}
	return false
}

// ResourceMatches: the rule names "resource" (or "*") for a request without subresource, and
// "resource/subresource", "*/subresource" or "*" for one with a subresource. A bare "pods" does not
// grant "pods/log": subresources are separate permissions in Kubernetes.
func ResourceMatches(rule *rbacv1.PolicyRule, resource, subresource string) bool {
	combined := resource
	if subresource != "" {
		combined = resource + "/" + subresource
	}
	for _, r := range rule.Resources {
		switch {
		case r == rbacv1.ResourceAll, r == combined:
			return true
		case subresource != "" && len(r) == len(subresource)+2 && strings.HasPrefix(r, "*/") && strings.HasSuffix(r, subresource):
			return true
		}
	}
	return false
}

// ResourceNameMatches: a rule without resourceNames applies to every name; one with names applies
// only to requests naming one of them (so never to list, watch without a name, or create).
func ResourceNameMatches(rule *rbacv1.PolicyRule, name string) bool {
	if len(rule.ResourceNames) == 0 {
		return true
	}
	for _, n := range rule.ResourceNames {
		if n == name {
			return true
		}
	}
	return false
}

// NonResourceURLMatches: the rule names the path, "*", or a prefix ending in "*".
func NonResourceURLMatches(rule *rbacv1.PolicyRule, path string) bool {
	for _, u := range rule.NonResourceURLs {
		switch {
		case u == rbacv1.NonResourceAll, u == path:
			return true
		case strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimSuffix(u, "*")):
			return true
		}
	}
	return false
}

// RuleAllows decides one rule against one request.
func RuleAllows(info *request.RequestInfo, rule *rbacv1.PolicyRule) bool {
	if info.IsResourceRequest {
		return VerbMatches(rule, info.Verb) &&
			APIGroupMatches(rule, info.APIGroup) &&
			ResourceMatches(rule, info.Resource, info.Subresource) &&
			ResourceNameMatches(rule, info.Name)
	}
	return VerbMatches(rule, info.Verb) && NonResourceURLMatches(rule, info.Path)
}

// RulesAllow reports whether any rule allows the request.
func RulesAllow(info *request.RequestInfo, rules []rbacv1.PolicyRule) bool {
	for i := range rules {
		if RuleAllows(info, &rules[i]) {
			return true
		}
	}
	return false
}

// AppliesTo reports whether a binding's subject names the user. namespace is the binding's own
// namespace: a ServiceAccount subject without a namespace means one in the binding's namespace.
func AppliesTo(user *request.UserInfo, subjects []rbacv1.Subject, namespace string) bool {
	for i := range subjects {
		if subjectMatches(user, &subjects[i], namespace) {
			return true
		}
	}
	return false
}

func subjectMatches(user *request.UserInfo, s *rbacv1.Subject, namespace string) bool {
	switch s.Kind {
	case rbacv1.UserKind:
		return user.Name == s.Name
	case rbacv1.GroupKind:
		for _, g := range user.Groups {
			if g == s.Name {
				return true
			}
		}
		return false
	case rbacv1.ServiceAccountKind:
		ns := s.Namespace
		if ns == "" {
			ns = namespace
		}
		return ns != "" && user.Name == "system:serviceaccount:"+ns+":"+s.Name
	}
	return false
}
