package admissionregistration

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// DefaultTimeoutSeconds is a webhook's timeout when the configuration gives none (v1).
const DefaultTimeoutSeconds int32 = 10

// RegisterDefaults registers the admissionregistration.k8s.io/v1 defaulting functions on s, for the
// objects and their lists.
func RegisterDefaults(s *runtime.Scheme) error {
	if s == nil {
		return fmt.Errorf("register admissionregistration.k8s.io/v1 defaults: nil scheme")
	}
	s.AddTypeDefaultingFunc(&admissionregistrationv1.MutatingWebhookConfiguration{}, func(o any) {
		DefaultMutatingWebhookConfiguration(o.(*admissionregistrationv1.MutatingWebhookConfiguration))
	})
	s.AddTypeDefaultingFunc(&admissionregistrationv1.MutatingWebhookConfigurationList{}, func(o any) {
		l := o.(*admissionregistrationv1.MutatingWebhookConfigurationList)
		for i := range l.Items {
			DefaultMutatingWebhookConfiguration(&l.Items[i])
		}
	})
	s.AddTypeDefaultingFunc(&admissionregistrationv1.ValidatingWebhookConfiguration{}, func(o any) {
		DefaultValidatingWebhookConfiguration(o.(*admissionregistrationv1.ValidatingWebhookConfiguration))
	})
	s.AddTypeDefaultingFunc(&admissionregistrationv1.ValidatingWebhookConfigurationList{}, func(o any) {
		l := o.(*admissionregistrationv1.ValidatingWebhookConfigurationList)
		for i := range l.Items {
			DefaultValidatingWebhookConfiguration(&l.Items[i])
		}
	})
	s.AddTypeDefaultingFunc(&admissionregistrationv1.ValidatingAdmissionPolicy{}, func(o any) {
		DefaultValidatingAdmissionPolicy(o.(*admissionregistrationv1.ValidatingAdmissionPolicy))
	})
	s.AddTypeDefaultingFunc(&admissionregistrationv1.ValidatingAdmissionPolicyList{}, func(o any) {
		l := o.(*admissionregistrationv1.ValidatingAdmissionPolicyList)
		for i := range l.Items {
			DefaultValidatingAdmissionPolicy(&l.Items[i])
		}
	})
	s.AddTypeDefaultingFunc(&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, func(o any) {
		DefaultValidatingAdmissionPolicyBinding(o.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding))
	})
	s.AddTypeDefaultingFunc(&admissionregistrationv1.ValidatingAdmissionPolicyBindingList{}, func(o any) {
		l := o.(*admissionregistrationv1.ValidatingAdmissionPolicyBindingList)
		for i := range l.Items {
			DefaultValidatingAdmissionPolicyBinding(&l.Items[i])
		}
	})
	return nil
}

// DefaultMutatingWebhookConfiguration applies v1's webhook defaults and reinvocationPolicy Never.
func DefaultMutatingWebhookConfiguration(c *admissionregistrationv1.MutatingWebhookConfiguration) {
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		defaultWebhook(&w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector, &w.TimeoutSeconds, w.Rules, &w.ClientConfig)
		if w.ReinvocationPolicy == nil {
			w.ReinvocationPolicy = ptr.To(admissionregistrationv1.NeverReinvocationPolicy)
		}
	}
}

// DefaultValidatingWebhookConfiguration applies v1's webhook defaults.
func DefaultValidatingWebhookConfiguration(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		defaultWebhook(&w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector, &w.TimeoutSeconds, w.Rules, &w.ClientConfig)
	}
}

// defaultWebhook is what the two webhook kinds share: failurePolicy Fail, matchPolicy Equivalent,
// empty (match-all) selectors, a 10 second timeout, rules of any scope and service port 443.
// sideEffects and admissionReviewVersions have no default in v1: they are required.
func defaultWebhook(failure **admissionregistrationv1.FailurePolicyType, match **admissionregistrationv1.MatchPolicyType,
	nsSel, objSel **metav1.LabelSelector, timeout **int32, rules []admissionregistrationv1.RuleWithOperations,
	cc *admissionregistrationv1.WebhookClientConfig) {
	if *failure == nil {
		*failure = ptr.To(admissionregistrationv1.Fail)
	}
	if *match == nil {
		*match = ptr.To(admissionregistrationv1.Equivalent)
	}
	if *nsSel == nil {
		*nsSel = &metav1.LabelSelector{}
	}
	if *objSel == nil {
		*objSel = &metav1.LabelSelector{}
	}
	if *timeout == nil {
		*timeout = ptr.To(DefaultTimeoutSeconds)
	}
	for i := range rules {
		defaultRule(&rules[i].Rule)
	}
	if cc.Service != nil && cc.Service.Port == nil {
		cc.Service.Port = ptr.To(int32(443))
	}
}

func defaultRule(r *admissionregistrationv1.Rule) {
	if r.Scope == nil {
		r.Scope = ptr.To(admissionregistrationv1.AllScopes)
	}
}

// defaultMatchResources gives match constraints Equivalent matching and match-all selectors.
func defaultMatchResources(m *admissionregistrationv1.MatchResources) {
	if m == nil {
		return
	}
	if m.MatchPolicy == nil {
		m.MatchPolicy = ptr.To(admissionregistrationv1.Equivalent)
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	for i := range m.ResourceRules {
		defaultRule(&m.ResourceRules[i].Rule)
	}
	for i := range m.ExcludeResourceRules {
		defaultRule(&m.ExcludeResourceRules[i].Rule)
	}
}

// DefaultValidatingAdmissionPolicy sets failurePolicy Fail and the match constraints' defaults.
func DefaultValidatingAdmissionPolicy(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
	if p.Spec.FailurePolicy == nil {
		p.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Fail)
	}
	defaultMatchResources(p.Spec.MatchConstraints)
}

// DefaultValidatingAdmissionPolicyBinding sets the match resources' defaults.
func DefaultValidatingAdmissionPolicyBinding(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	defaultMatchResources(b.Spec.MatchResources)
}
