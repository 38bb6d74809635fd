package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/skiff-sh/skiff/internal/request"
)

// Covers reports whether the owner's rules grant everything the requested rules grant, and the
// requested rules that are not covered. Each requested rule is broken into its smallest pieces (one
// verb, group, resource and name, or one verb and URL); a piece holding "*" is covered only by a
// rule that holds "*" there too, as Kubernetes' escalation check requires.
func Covers(owner, requested []rbacv1.PolicyRule) (bool, []rbacv1.PolicyRule) {
	var missing []rbacv1.PolicyRule
	for _, req := range requested {
		for _, piece := range breakdown(req) {
			if !coveredBy(owner, &piece) {
				missing = append(missing, piece)
			}
		}
	}
	return len(missing) == 0, missing
}

func breakdown(r rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, verb := range r.Verbs {
		for _, url := range r.NonResourceURLs {
			out = append(out, rbacv1.PolicyRule{Verbs: []string{verb}, NonResourceURLs: []string{url}})
		}
		for _, group := range r.APIGroups {
			for _, res := range r.Resources {
				if len(r.ResourceNames) == 0 {
					out = append(out, rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{group}, Resources: []string{res}})
					continue
				}
				for _, name := range r.ResourceNames {
					out = append(out, rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{group}, Resources: []string{res}, ResourceNames: []string{name}})
				}
			}
		}
	}
	return out
}

func coveredBy(owner []rbacv1.PolicyRule, piece *rbacv1.PolicyRule) bool {
	for i := range owner {
		o := &owner[i]
		if !VerbMatches(o, piece.Verbs[0]) {
			continue
		}
		if len(piece.NonResourceURLs) == 1 {
			if NonResourceURLMatches(o, piece.NonResourceURLs[0]) {
				return true
			}
			continue
		}
		res, sub := piece.Resources[0], ""
		for j := 0; j < len(res); j++ {
			if res[j] == '/' {
				res, sub = res[:j], res[j+1:]
				break
			}
		}
		if !APIGroupMatches(o, piece.APIGroups[0]) || !ResourceMatches(o, res, sub) {
			continue
		}
		if len(piece.ResourceNames) == 0 {
			if len(o.ResourceNames) == 0 {
				return true
			}
			continue
		}
		if ResourceNameMatches(o, piece.ResourceNames[0]) {
			return true
		}
	}
	return false
}

// Allows is the authorizer's decision for one request, for callers that hold only rules.
func Allows(rules []rbacv1.PolicyRule, info *request.RequestInfo) bool {
	return RulesAllow(info, rules)
}
