package flowcontrol

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Subjects Kubernetes' default configuration names.
const (
	groupMasters         = "system:masters"
	groupNodes           = "system:nodes"
	groupAuthenticated   = "system:authenticated"
	groupUnauthenticated = "system:unauthenticated"
	groupServiceAccounts = "system:serviceaccounts"
	userControllerMgr    = "system:kube-controller-manager"
	userScheduler        = "system:kube-scheduler"
)

// MandatoryPriorityLevelConfigurations are the levels every API server keeps: exempt and catch-all.
// Their specs are fixed (validation refuses changes, but for the exempt level's shares).
func MandatoryPriorityLevelConfigurations() []*flowcontrolv1.PriorityLevelConfiguration {
	return []*flowcontrolv1.PriorityLevelConfiguration{
		priorityLevel(flowcontrolv1.PriorityLevelConfigurationNameExempt, flowcontrolv1.PriorityLevelConfigurationSpec{
			Type:   flowcontrolv1.PriorityLevelEnablementExempt,
			Exempt: &flowcontrolv1.ExemptPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](0), LendablePercent: ptr.To[int32](0)},
		}),
		priorityLevel(flowcontrolv1.PriorityLevelConfigurationNameCatchAll, flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr.To[int32](5), LendablePercent: ptr.To[int32](0),
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
			},
		}),
	}
}

// MandatoryFlowSchemas are the schemas every API server keeps: exempt (system:masters) and
// catch-all (everyone else, last).
func MandatoryFlowSchemas() []*flowcontrolv1.FlowSchema {
	return []*flowcontrolv1.FlowSchema{
		flowSchema("exempt", flowcontrolv1.PriorityLevelConfigurationNameExempt, 1, "", everything(groups(groupMasters))),
		flowSchema(flowcontrolv1.FlowSchemaNameCatchAll, flowcontrolv1.PriorityLevelConfigurationNameCatchAll, 10000, flowcontrolv1.FlowDistinguisherMethodByUserType,
			everything(groups(groupUnauthenticated, groupAuthenticated))),
	}
}

// SuggestedPriorityLevelConfigurations are the levels Kubernetes creates unless an administrator
// removed them: system, node-high, leader-election, workload-high, workload-low, global-default.
func SuggestedPriorityLevelConfigurations() []*flowcontrolv1.PriorityLevelConfiguration {
	return []*flowcontrolv1.PriorityLevelConfiguration{
		limitedLevel("system", 30, 33, 64, 6, 50),
		limitedLevel("node-high", 40, 25, 64, 6, 50),
		limitedLevel("leader-election", 10, 0, 16, 4, 50),
		limitedLevel("workload-high", 40, 50, 128, 6, 50),
		limitedLevel("workload-low", 100, 90, 128, 6, 50),
		limitedLevel("global-default", 20, 50, 128, 6, 50),
	}
}

// SuggestedFlowSchemas route the system's own traffic (nodes, probes, leader election, the
// controller manager and scheduler, kube-system service accounts) to the suggested levels.
func SuggestedFlowSchemas() []*flowcontrolv1.FlowSchema {
	// A function, not a shared slice: each schema gets its own subjects.
	kubeSystemSAs := func() []flowcontrolv1.Subject { return serviceAccounts(flowcontrolv1.NameAll) }
	leaderElectionRules := func(namespaces ...string) []flowcontrolv1.ResourcePolicyRule {
		return []flowcontrolv1.ResourcePolicyRule{
			resourceRule([]string{"get", "create", "update"}, []string{""}, []string{"endpoints", "configmaps"}, namespaces, false),
			resourceRule([]string{"get", "create", "update"}, []string{"coordination.k8s.io"}, []string{"leases"}, []string{flowcontrolv1.NamespaceEvery}, false),
		}
	}
	byUser, byNamespace := flowcontrolv1.FlowDistinguisherMethodByUserType, flowcontrolv1.FlowDistinguisherMethodByNamespaceType
	return []*flowcontrolv1.FlowSchema{
		flowSchema("system-nodes", "system", 500, byUser, everything(groups(groupNodes))),
		flowSchema("system-node-high", "node-high", 400, byUser, flowcontrolv1.PolicyRulesWithSubjects{
			Subjects: groups(groupNodes),
			ResourceRules: []flowcontrolv1.ResourcePolicyRule{
				resourceRule([]string{flowcontrolv1.VerbAll}, []string{""}, []string{"nodes", "nodes/status"}, []string{flowcontrolv1.NamespaceEvery}, true),
				resourceRule([]string{flowcontrolv1.VerbAll}, []string{"coordination.k8s.io"}, []string{"leases"}, []string{flowcontrolv1.NamespaceEvery}, false),
			},
		}),
		flowSchema("probes", flowcontrolv1.PriorityLevelConfigurationNameExempt, 2, "", flowcontrolv1.PolicyRulesWithSubjects{
			Subjects:         groups(groupUnauthenticated, groupAuthenticated),
			NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/readyz", "/livez"}}},
		}),
		flowSchema("system-leader-election", "leader-election", 100, byUser, flowcontrolv1.PolicyRulesWithSubjects{
			Subjects:      append(users(userControllerMgr, userScheduler), kubeSystemSAs()...),
			ResourceRules: leaderElectionRules("kube-system"),
		}),
		flowSchema("workload-leader-election", "leader-election", 200, byUser, flowcontrolv1.PolicyRulesWithSubjects{
			Subjects:      kubeSystemSAs(),
			ResourceRules: leaderElectionRules(flowcontrolv1.NamespaceEvery),
		}),
		flowSchema("endpoint-controller", "workload-high", 150, byUser, flowcontrolv1.PolicyRulesWithSubjects{
			Subjects: append(users(userControllerMgr), serviceAccounts("endpoint-controller", "endpointslicemirroring-controller")...),
			ResourceRules: []flowcontrolv1.ResourcePolicyRule{
				resourceRule([]string{"get", "create", "update"}, []string{""}, []string{"endpoints"}, []string{flowcontrolv1.NamespaceEvery}, false),
			},
		}),
		flowSchema("kube-controller-manager", "workload-high", 800, byNamespace, everything(users(userControllerMgr))),
		flowSchema("kube-scheduler", "workload-high", 800, byNamespace, everything(users(userScheduler))),
		flowSchema("kube-system-service-accounts", "workload-high", 900, byNamespace, everything(kubeSystemSAs())),
		flowSchema("service-accounts", "workload-low", 9000, byUser, everything(groups(groupServiceAccounts))),
		flowSchema("global-default", "global-default", 9900, byUser, everything(groups(groupUnauthenticated, groupAuthenticated))),
	}
}

// autoUpdate marks an object the API server keeps at its built-in spec, as Kubernetes' ensurer does.
func autoUpdate() metav1.ObjectMeta {
	return metav1.ObjectMeta{Annotations: map[string]string{flowcontrolv1.AutoUpdateAnnotationKey: "true"}}
}

func priorityLevel(name string, spec flowcontrolv1.PriorityLevelConfigurationSpec) *flowcontrolv1.PriorityLevelConfiguration {
	pl := &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: autoUpdate(), Spec: spec}
	pl.Name = name
	return pl
}

func limitedLevel(name string, shares, lendable, queues, handSize, queueLength int32) *flowcontrolv1.PriorityLevelConfiguration {
	return priorityLevel(name, flowcontrolv1.PriorityLevelConfigurationSpec{
		Type: flowcontrolv1.PriorityLevelEnablementLimited,
		Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
			NominalConcurrencyShares: ptr.To(shares), LendablePercent: ptr.To(lendable),
			LimitResponse: flowcontrolv1.LimitResponse{
				Type:    flowcontrolv1.LimitResponseTypeQueue,
				Queuing: &flowcontrolv1.QueuingConfiguration{Queues: queues, HandSize: handSize, QueueLengthLimit: queueLength},
			},
		},
	})
}

func flowSchema(name, level string, precedence int32, method flowcontrolv1.FlowDistinguisherMethodType, rules ...flowcontrolv1.PolicyRulesWithSubjects) *flowcontrolv1.FlowSchema {
	fs := &flowcontrolv1.FlowSchema{ObjectMeta: autoUpdate(), Spec: flowcontrolv1.FlowSchemaSpec{
		PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level},
		MatchingPrecedence:         precedence,
		Rules:                      rules,
	}}
	fs.Name = name
	if method != "" {
		fs.Spec.DistinguisherMethod = &flowcontrolv1.FlowDistinguisherMethod{Type: method}
	}
	return fs
}

// everything matches every request of the subjects: all resources in every namespace and at
// cluster scope, and every non-resource URL.
func everything(subjects []flowcontrolv1.Subject) flowcontrolv1.PolicyRulesWithSubjects {
	return flowcontrolv1.PolicyRulesWithSubjects{
		Subjects: subjects,
		ResourceRules: []flowcontrolv1.ResourcePolicyRule{resourceRule(
			[]string{flowcontrolv1.VerbAll}, []string{flowcontrolv1.APIGroupAll}, []string{flowcontrolv1.ResourceAll}, []string{flowcontrolv1.NamespaceEvery}, true)},
		NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{flowcontrolv1.VerbAll}, NonResourceURLs: []string{flowcontrolv1.NonResourceAll}}},
	}
}

func resourceRule(verbs, apiGroups, resources, namespaces []string, clusterScope bool) flowcontrolv1.ResourcePolicyRule {
	return flowcontrolv1.ResourcePolicyRule{Verbs: verbs, APIGroups: apiGroups, Resources: resources, Namespaces: namespaces, ClusterScope: clusterScope}
}

func groups(names ...string) []flowcontrolv1.Subject {
	out := make([]flowcontrolv1.Subject, 0, len(names))
	for _, n := range names {
		out = append(out, flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: n}})
	}
	return out
}

func users(names ...string) []flowcontrolv1.Subject {
	out := make([]flowcontrolv1.Subject, 0, len(names))
	for _, n := range names {
		out = append(out, flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: n}})
	}
	return out
}

// serviceAccounts are kube-system service accounts ("*" for all of them).
func serviceAccounts(names ...string) []flowcontrolv1.Subject {
	out := make([]flowcontrolv1.Subject, 0, len(names))
	for _, n := range names {
		out = append(out, flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: "kube-system", Name: n}})
	}
	return out
}
