package bootstrappolicy

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

var (
	readWrite = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	read      = []string{"get", "list", "watch"}
	edit      = []string{"create", "delete", "deletecollection", "patch", "update"}
)

const (
	legacyGroup         = ""
	appsGroup           = "apps"
	authenticationGroup = "authentication.k8s.io"
	authorizationGroup  = "authorization.k8s.io"
	autoscalingGroup    = "autoscaling"
	batchGroup          = "batch"
	certificatesGroup   = "certificates.k8s.io"
	coordinationGroup   = "coordination.k8s.io"
	discoveryGroup      = "discovery.k8s.io"
	eventsGroup         = "events.k8s.io"
	extensionsGroup     = "extensions"
	networkingGroup     = "networking.k8s.io"
	nodeGroup           = "node.k8s.io"
	policyGroup         = "policy"
	rbacGroup           = "rbac.authorization.k8s.io"
	storageGroup        = "storage.k8s.io"
)

// ruleBuilder writes a PolicyRule the way upstream's policy reads: verbs, then groups, resources,
// names or URLs.
type ruleBuilder struct{ r rbacv1.PolicyRule }

func rule(verbs ...string) *ruleBuilder {
	return &ruleBuilder{r: rbacv1.PolicyRule{Verbs: verbs}}
}

func (b *ruleBuilder) groups(g ...string) *ruleBuilder    { b.r.APIGroups = g; return b }
func (b *ruleBuilder) resources(r ...string) *ruleBuilder { b.r.Resources = r; return b }
func (b *ruleBuilder) names(n ...string) *ruleBuilder     { b.r.ResourceNames = n; return b }
func (b *ruleBuilder) urls(u ...string) *ruleBuilder      { b.r.NonResourceURLs = u; return b }
func (b *ruleBuilder) rule() rbacv1.PolicyRule            { return b.r }

// eventsRule lets a component record events in either events API.
func eventsRule() rbacv1.PolicyRule {
	return rule("create", "update", "patch").groups(legacyGroup, eventsGroup).resources("events").rule()
}

func rules(rs ...*ruleBuilder) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.r)
	}
	return out
}
