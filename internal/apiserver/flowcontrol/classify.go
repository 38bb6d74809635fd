package flowcontrol

import (
	"sort"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/skiff-sh/skiff/internal/request"
)

// Digest is what classification looks at: who asks and what for.
type Digest struct {
	User *request.UserInfo
	Info *request.RequestInfo
}

// sortSchemas orders schemas as Kubernetes matches them: lowest matchingPrecedence first, then
// by name. It sorts in place.
func sortSchemas(schemas []*flowcontrolv1.FlowSchema) {
	sort.SliceStable(schemas, func(i, j int) bool {
		a, b := schemas[i], schemas[j]
		if a.Spec.MatchingPrecedence != b.Spec.MatchingPrecedence {
			return a.Spec.MatchingPrecedence < b.Spec.MatchingPrecedence
		}
		return a.Name < b.Name
	})
}

// Classify returns the first schema of sorted (already in match order, see sortSchemas) that
// matches d, and the request's flow distinguisher under that schema; nil when none matches.
func Classify(sorted []*flowcontrolv1.FlowSchema, d Digest) (*flowcontrolv1.FlowSchema, string) {
	for _, fs := range sorted {
		if matchesSchema(fs, d) {
			return fs, distinguisher(fs, d)
		}
	}
	return nil, ""
}

// distinguisher is the part of the flow identity the schema's distinguisherMethod picks.
func distinguisher(fs *flowcontrolv1.FlowSchema, d Digest) string {
	if fs.Spec.DistinguisherMethod == nil {
		return ""
	}
	switch fs.Spec.DistinguisherMethod.Type {
	case flowcontrolv1.FlowDistinguisherMethodByUserType:
		if d.User != nil {
			return d.User.Name
		}
	case flowcontrolv1.FlowDistinguisherMethodByNamespaceType:
		if d.Info != nil {
			return d.Info.Namespace
		}
	}
	return ""
}

func matchesSchema(fs *flowcontrolv1.FlowSchema, d Digest) bool {
	for i := range fs.Spec.Rules {
		if matchesRule(&fs.Spec.Rules[i], d) {
			return true
		}
	}
	return false
}

// matchesRule: a rule matches when one of its subjects is the caller and one of its resource or
// non-resource rules is the request.
func matchesRule(r *flowcontrolv1.PolicyRulesWithSubjects, d Digest) bool {
	if !matchesSubjects(r.Subjects, d.User) {
		return false
	}
	info := d.Info
	if info == nil {
		return false
	}
	if info.IsResourceRequest {
		for i := range r.ResourceRules {
			if matchesResourceRule(&r.ResourceRules[i], info) {
				return true
			}
		}
		return false
	}
	for i := range r.NonResourceRules {
		if matchesNonResourceRule(&r.NonResourceRules[i], info) {
			return true
		}
	}
	return false
}

func matchesSubjects(subjects []flowcontrolv1.Subject, u *request.UserInfo) bool {
	if u == nil {
		return false
	}
	for _, s := range subjects {
		switch s.Kind {
		case flowcontrolv1.SubjectKindUser:
			if s.User != nil && (s.User.Name == flowcontrolv1.NameAll || s.User.Name == u.Name) {
				return true
			}
		case flowcontrolv1.SubjectKindGroup:
			if s.Group == nil {
				continue
			}
			for _, g := range u.Groups {
				if s.Group.Name == flowcontrolv1.NameAll || s.Group.Name == g {
					return true
				}
			}
		case flowcontrolv1.SubjectKindServiceAccount:
			if s.ServiceAccount == nil {
				continue
			}
			ns, name, ok := serviceAccountOf(u.Name)
			if ok && ns == s.ServiceAccount.Namespace && (s.ServiceAccount.Name == flowcontrolv1.NameAll || s.ServiceAccount.Name == name) {
				return true
			}
		}
	}
	return false
}

// serviceAccountOf splits a service account's user name, system:serviceaccount:NS:NAME.
func serviceAccountOf(user string) (ns, name string, ok bool) {
	rest, ok := strings.CutPrefix(user, "system:serviceaccount:")
	if !ok {
		return "", "", false
	}
	ns, name, ok = strings.Cut(rest, ":")
	return ns, name, ok && ns != "" && name != "" && !strings.Contains(name, ":")
}

func matchesResourceRule(rule *flowcontrolv1.ResourcePolicyRule, info *request.RequestInfo) bool {
	if !containsOrAll(rule.Verbs, info.Verb) || !containsOrAll(rule.APIGroups, info.APIGroup) {
		return false
	}
	resource := info.Resource
	if info.Subresource != "" {
		resource += "/" + info.Subresource
	}
	if !containsOrAll(rule.Resources, resource) {
		return false
	}
	if info.Namespace == "" {
		return rule.ClusterScope
	}
	return containsOrAll(rule.Namespaces, info.Namespace)
}

func matchesNonResourceRule(rule *flowcontrolv1.NonResourcePolicyRule, info *request.RequestInfo) bool {
	if !containsOrAll(rule.Verbs, info.Verb) {
		return false
	}
	for _, u := range rule.NonResourceURLs {
		if u == flowcontrolv1.NonResourceAll || u == info.Path {
			return true
		}
		// "/healthz/*" matches "/healthz" and everything under "/healthz/".
		if prefix, ok := strings.CutSuffix(u, "*"); ok && strings.HasSuffix(prefix, "/") {
			if strings.HasPrefix(info.Path, prefix) || info.Path == strings.TrimSuffix(prefix, "/") {
				return true
			}
		}
	}
	return false
}

func containsOrAll(list []string, v string) bool {
	for _, s := range list {
		if s == "*" || s == v {
			return true
		}
	}
	return false
}
