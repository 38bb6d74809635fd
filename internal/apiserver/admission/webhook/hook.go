package webhook

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// hook is one webhook of either kind, as the dispatcher needs it.
type hook struct {
	configName        string
	name              string
	clientConfig      admissionregistrationv1.WebhookClientConfig
	rules             []admissionregistrationv1.RuleWithOperations
	failurePolicy     admissionregistrationv1.FailurePolicyType
	namespaceSelector *metav1.LabelSelector
	objectSelector    *metav1.LabelSelector
	sideEffects       admissionregistrationv1.SideEffectClass
	timeoutSeconds    int32
	matchConditions   []admissionregistrationv1.MatchCondition
	reinvoke          bool // reinvocationPolicy IfNeeded
}

func mutatingHooks(c *admissionregistrationv1.MutatingWebhookConfiguration) []hook {
	out := make([]hook, 0, len(c.Webhooks))
	for _, w := range c.Webhooks {
		out = append(out, hook{
			configName: c.Name, name: w.Name, clientConfig: w.ClientConfig, rules: w.Rules,
			failurePolicy: deref(w.FailurePolicy, admissionregistrationv1.Fail), namespaceSelector: w.NamespaceSelector,
			objectSelector: w.ObjectSelector, sideEffects: deref(w.SideEffects, admissionregistrationv1.SideEffectClassUnknown),
			timeoutSeconds: deref(w.TimeoutSeconds, 10), matchConditions: w.MatchConditions,
			reinvoke: deref(w.ReinvocationPolicy, admissionregistrationv1.NeverReinvocationPolicy) == admissionregistrationv1.IfNeededReinvocationPolicy,
		})
	}
	return out
}

func validatingHooks(c *admissionregistrationv1.ValidatingWebhookConfiguration) []hook {
	out := make([]hook, 0, len(c.Webhooks))
	for _, w := range c.Webhooks {
		out = append(out, hook{
			configName: c.Name, name: w.Name, clientConfig: w.ClientConfig, rules: w.Rules,
			failurePolicy: deref(w.FailurePolicy, admissionregistrationv1.Fail), namespaceSelector: w.NamespaceSelector,
			objectSelector: w.ObjectSelector, sideEffects: deref(w.SideEffects, admissionregistrationv1.SideEffectClassUnknown),
			timeoutSeconds: deref(w.TimeoutSeconds, 10), matchConditions: w.MatchConditions,
		})
	}
	return out
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// noSideEffectsOnDryRun reports whether a webhook may be called for a dry-run request.
func noSideEffectsOnDryRun(s admissionregistrationv1.SideEffectClass) bool {
	return s == admissionregistrationv1.SideEffectClassNone || s == admissionregistrationv1.SideEffectClassNoneOnDryRun
}
