package admissionregistration

import (
	"fmt"
	"net/url"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// acceptedAdmissionReviewVersions are the AdmissionReview versions a webhook may ask for, in
// Kubernetes' order (the API server sends the first one it supports: v1).
var acceptedAdmissionReviewVersions = []string{"v1", "v1beta1"}

// maxMatchConditions is Kubernetes' limit on a webhook's or policy's match conditions.
const maxMatchConditions = 64

var (
	supportedFailurePolicies   = sets.New(string(admissionregistrationv1.Ignore), string(admissionregistrationv1.Fail))
	supportedMatchPolicies     = sets.New(string(admissionregistrationv1.Exact), string(admissionregistrationv1.Equivalent))
	supportedSideEffects       = sets.New(string(admissionregistrationv1.SideEffectClassNone), string(admissionregistrationv1.SideEffectClassNoneOnDryRun))
	supportedReinvocation      = sets.New(string(admissionregistrationv1.NeverReinvocationPolicy), string(admissionregistrationv1.IfNeededReinvocationPolicy))
	supportedScopes            = sets.New(string(admissionregistrationv1.ClusterScope), string(admissionregistrationv1.NamespacedScope), string(admissionregistrationv1.AllScopes))
	supportedOperations        = sets.New(string(admissionregistrationv1.OperationAll), string(admissionregistrationv1.Create), string(admissionregistrationv1.Update), string(admissionregistrationv1.Delete), string(admissionregistrationv1.Connect))
	supportedValidationActions = sets.New(string(admissionregistrationv1.Deny), string(admissionregistrationv1.Warn), string(admissionregistrationv1.Audit))
	supportedPolicyReasons     = sets.New("Unauthorized", "Forbidden", "Invalid", "RequestEntityTooLarge")
	supportedParamNotFound     = sets.New(string(admissionregistrationv1.AllowAction), string(admissionregistrationv1.DenyAction))
)

// webhookFields are the fields both webhook kinds share, so one function validates them.
type webhookFields struct {
	name                    string
	clientConfig            admissionregistrationv1.WebhookClientConfig
	rules                   []admissionregistrationv1.RuleWithOperations
	failurePolicy           *admissionregistrationv1.FailurePolicyType
	matchPolicy             *admissionregistrationv1.MatchPolicyType
	namespaceSelector       *metav1.LabelSelector
	objectSelector          *metav1.LabelSelector
	sideEffects             *admissionregistrationv1.SideEffectClass
	timeoutSeconds          *int32
	admissionReviewVersions []string
	matchConditions         []admissionregistrationv1.MatchCondition
}

// ValidateMutatingWebhookConfiguration checks a configuration's webhooks with Kubernetes' rules.
func ValidateMutatingWebhookConfiguration(c *admissionregistrationv1.MutatingWebhookConfiguration) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, w := range c.Webhooks {
		p := field.NewPath("webhooks").Index(i)
		errs = append(errs, validateWebhook(webhookFields{
			name: w.Name, clientConfig: w.ClientConfig, rules: w.Rules, failurePolicy: w.FailurePolicy, matchPolicy: w.MatchPolicy,
			namespaceSelector: w.NamespaceSelector, objectSelector: w.ObjectSelector, sideEffects: w.SideEffects,
			timeoutSeconds: w.TimeoutSeconds, admissionReviewVersions: w.AdmissionReviewVersions, matchConditions: w.MatchConditions,
		}, seen, p)...)
		if w.ReinvocationPolicy != nil && !supportedReinvocation.Has(string(*w.ReinvocationPolicy)) {
			errs = append(errs, field.NotSupported(p.Child("reinvocationPolicy"), *w.ReinvocationPolicy, sets.List(supportedReinvocation)))
		}
	}
	return errs
}

// ValidateValidatingWebhookConfiguration checks a configuration's webhooks with Kubernetes' rules.
func ValidateValidatingWebhookConfiguration(c *admissionregistrationv1.ValidatingWebhookConfiguration) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, w := range c.Webhooks {
		errs = append(errs, validateWebhook(webhookFields{
			name: w.Name, clientConfig: w.ClientConfig, rules: w.Rules, failurePolicy: w.FailurePolicy, matchPolicy: w.MatchPolicy,
			namespaceSelector: w.NamespaceSelector, objectSelector: w.ObjectSelector, sideEffects: w.SideEffects,
			timeoutSeconds: w.TimeoutSeconds, admissionReviewVersions: w.AdmissionReviewVersions, matchConditions: w.MatchConditions,
		}, seen, field.NewPath("webhooks").Index(i))...)
	}
	return errs
}

func validateWebhook(w webhookFields, seen sets.Set[string], p *field.Path) field.ErrorList {
	errs := utilvalidation.IsFullyQualifiedName(p.Child("name"), w.name)
	if seen.Has(w.name) {
		errs = append(errs, field.Duplicate(p.Child("name"), w.name))
	}
	seen.Insert(w.name)
	for i, r := range w.rules {
		errs = append(errs, validateRuleWithOperations(&r, p.Child("rules").Index(i))...)
	}
	if w.failurePolicy != nil && !supportedFailurePolicies.Has(string(*w.failurePolicy)) {
		errs = append(errs, field.NotSupported(p.Child("failurePolicy"), *w.failurePolicy, sets.List(supportedFailurePolicies)))
	}
	if w.matchPolicy != nil && !supportedMatchPolicies.Has(string(*w.matchPolicy)) {
		errs = append(errs, field.NotSupported(p.Child("matchPolicy"), *w.matchPolicy, sets.List(supportedMatchPolicies)))
	}
	switch {
	case w.sideEffects == nil:
		errs = append(errs, field.Required(p.Child("sideEffects"), fmt.Sprintf("must specify one of %v", strings.Join(sets.List(supportedSideEffects), ", "))))
	case !supportedSideEffects.Has(string(*w.sideEffects)):
		errs = append(errs, field.NotSupported(p.Child("sideEffects"), *w.sideEffects, sets.List(supportedSideEffects)))
	}
	if w.timeoutSeconds != nil && (*w.timeoutSeconds > 30 || *w.timeoutSeconds < 1) {
		errs = append(errs, field.Invalid(p.Child("timeoutSeconds"), *w.timeoutSeconds, "the timeout value must be between 1 and 30 seconds"))
	}
	if w.namespaceSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(w.namespaceSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("namespaceSelector"))...)
	}
	if w.objectSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(w.objectSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("objectSelector"))...)
	}
	errs = append(errs, validateAdmissionReviewVersions(w.admissionReviewVersions, p.Child("admissionReviewVersions"))...)
	errs = append(errs, validateClientConfig(&w.clientConfig, p.Child("clientConfig"))...)
	errs = append(errs, validateMatchConditions(w.matchConditions, p.Child("matchConditions"))...)
	return errs
}

func validateAdmissionReviewVersions(versions []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(versions) == 0 {
		return field.ErrorList{field.Required(p, fmt.Sprintf("must specify one of %v", strings.Join(acceptedAdmissionReviewVersions, ", ")))}
	}
	seen := sets.New[string]()
	accepted := false
	for i, v := range versions {
		if seen.Has(v) {
			errs = append(errs, field.Invalid(p.Index(i), v, "duplicate version"))
			continue
		}
		seen.Insert(v)
		for _, msg := range utilvalidation.IsDNS1035Label(v) {
			errs = append(errs, field.Invalid(p.Index(i), v, msg))
		}
		accepted = accepted || v == "v1" || v == "v1beta1"
	}
	if !accepted {
		errs = append(errs, field.Invalid(p, versions, fmt.Sprintf("must include at least one of %v", strings.Join(acceptedAdmissionReviewVersions, ", "))))
	}
	return errs
}

// validateClientConfig: exactly one of url and service; an https URL without user, query or
// fragment; a service with name, namespace, a path starting with "/" and a valid port.
func validateClientConfig(cc *admissionregistrationv1.WebhookClientConfig, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case (cc.URL == nil) == (cc.Service == nil):
		errs = append(errs, field.Required(p, "exactly one of url or service is required"))
	case cc.URL != nil:
		errs = append(errs, validateWebhookURL(p.Child("url"), *cc.URL)...)
	default:
		s := cc.Service
		sp := p.Child("service")
		if s.Name == "" {
			errs = append(errs, field.Required(sp.Child("name"), "service name is required"))
		}
		if s.Namespace == "" {
			errs = append(errs, field.Required(sp.Child("namespace"), "service namespace is required"))
		}
		if s.Path != nil {
			errs = append(errs, validateServicePath(sp.Child("path"), *s.Path)...)
		}
		if s.Port != nil {
			for _, msg := range utilvalidation.IsValidPortNum(int(*s.Port)) {
				errs = append(errs, field.Invalid(sp.Child("port"), *s.Port, "port is not valid: "+msg))
			}
		}
	}
	return errs
}

func validateWebhookURL(p *field.Path, raw string) field.ErrorList {
	var errs field.ErrorList
	u, err := url.Parse(raw)
	if err != nil {
		return field.ErrorList{field.Invalid(p, raw, "url must be a valid URL: "+err.Error())}
	}
	if u.Scheme != "https" {
		errs = append(errs, field.Invalid(p, u.Scheme, "'https' is the only allowed URL scheme"))
	}
	if u.Host == "" {
		errs = append(errs, field.Invalid(p, u.Host, "host must be specified"))
	}
	if u.User != nil {
		errs = append(errs, field.Invalid(p, u.User.String(), "user information is not permitted in the URL"))
	}
	if u.Fragment != "" {
		errs = append(errs, field.Invalid(p, u.Fragment, "fragments are not permitted in the URL"))
	}
	if u.RawQuery != "" {
		errs = append(errs, field.Invalid(p, u.RawQuery, "query parameters are not permitted in the URL"))
	}
	return errs
}

func validateServicePath(p *field.Path, path string) field.ErrorList {
	// An empty path is allowed, as upstream (the webhook is called at "/"); conformance's
	// "should not be able to mutate or prevent deletion of webhook configuration objects" sets it.
	if path == "/" || path == "" {
		return nil
	}
	if !strings.HasPrefix(path, "/") {
		return field.ErrorList{field.Invalid(p, path, "must start with a '/'")}
	}
	var errs field.ErrorList
	for i, step := range strings.Split(path[1:], "/") {
		if step == "" {
			errs = append(errs, field.Invalid(p, path, fmt.Sprintf("segment[%d] may not be empty", i)))
			continue
		}
		for _, msg := range utilvalidation.IsDNS1123Subdomain(step) {
			errs = append(errs, field.Invalid(p, path, fmt.Sprintf("segment[%d]: %v", i, msg)))
		}
	}
	return errs
}

func validateRuleWithOperations(r *admissionregistrationv1.RuleWithOperations, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(r.Operations) == 0 {
		errs = append(errs, field.Required(p.Child("operations"), ""))
	}
	if len(r.Operations) > 1 && hasWildcard(opStrings(r.Operations)) {
		errs = append(errs, field.Invalid(p.Child("operations"), r.Operations, "if '*' is present, must not specify other operations"))
	}
	for i, op := range r.Operations {
		if !supportedOperations.Has(string(op)) {
			errs = append(errs, field.NotSupported(p.Child("operations").Index(i), op, sets.List(supportedOperations)))
		}
	}
	return append(errs, validateRule(&r.Rule, p)...)
}

func opStrings(ops []admissionregistrationv1.OperationType) []string {
	out := make([]string, len(ops))
	for i, o := range ops {
		out[i] = string(o)
	}
	return out
}

func hasWildcard(items []string) bool {
	for _, s := range items {
		if s == "*" {
			return true
		}
	}
	return false
}

func validateRule(r *admissionregistrationv1.Rule, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), ""))
	}
	if len(r.APIGroups) > 1 && hasWildcard(r.APIGroups) {
		errs = append(errs, field.Invalid(p.Child("apiGroups"), r.APIGroups, "if '*' is present, must not specify other API groups"))
	}
	if len(r.APIVersions) == 0 {
		errs = append(errs, field.Required(p.Child("apiVersions"), ""))
	}
	if len(r.APIVersions) > 1 && hasWildcard(r.APIVersions) {
		errs = append(errs, field.Invalid(p.Child("apiVersions"), r.APIVersions, "if '*' is present, must not specify other API versions"))
	}
	for i, v := range r.APIVersions {
		if v == "" {
			errs = append(errs, field.Required(p.Child("apiVersions").Index(i), ""))
		}
	}
	errs = append(errs, validateResources(r.Resources, p.Child("resources"))...)
	if r.Scope != nil && !supportedScopes.Has(string(*r.Scope)) {
		errs = append(errs, field.NotSupported(p.Child("scope"), *r.Scope, sets.List(supportedScopes)))
	}
	return errs
}

// validateResources enforces Kubernetes' wildcard rules: "*/*" alone, "*" not beside plain
// resources, and no "x/y" already covered by "x/*" or "*/y".
func validateResources(resources []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(resources) == 0 {
		errs = append(errs, field.Required(p, ""))
	}
	wildSub := sets.New[string]()
	wildRes := sets.New[string]()
	var doubleWild, singleWild, plain bool
	for i, rs := range resources {
		if rs == "" {
			errs = append(errs, field.Required(p.Index(i), ""))
			continue
		}
		doubleWild = doubleWild || rs == "*/*"
		singleWild = singleWild || rs == "*"
		res, sub, hasSub := strings.Cut(rs, "/")
		if !hasSub {
			plain = plain || rs != "*"
			continue
		}
		if wildSub.Has(res) {
			errs = append(errs, field.Invalid(p.Index(i), rs, fmt.Sprintf("if '%s/*' is present, must not specify %s", res, rs)))
		}
		if wildRes.Has(sub) {
			errs = append(errs, field.Invalid(p.Index(i), rs, fmt.Sprintf("if '*/%s' is present, must not specify %s", sub, rs)))
		}
		if sub == "*" {
			wildSub.Insert(res)
		}
		if res == "*" {
			wildRes.Insert(sub)
		}
	}
	if len(resources) > 1 && doubleWild {
		errs = append(errs, field.Invalid(p, resources, "if '*/*' is present, must not specify other resources"))
	}
	if singleWild && plain {
		errs = append(errs, field.Invalid(p, resources, "if '*' is present, must not specify other resources without subresources"))
	}
	return errs
}

func validateMatchConditions(conds []admissionregistrationv1.MatchCondition, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(conds) > maxMatchConditions {
		errs = append(errs, field.TooMany(p, len(conds), maxMatchConditions))
	}
	seen := sets.New[string]()
	for i, c := range conds {
		cp := p.Index(i)
		if c.Name == "" {
			errs = append(errs, field.Required(cp.Child("name"), ""))
		} else {
			for _, msg := range utilvalidation.IsQualifiedName(c.Name) {
				errs = append(errs, field.Invalid(cp.Child("name"), c.Name, msg))
			}
			if seen.Has(c.Name) {
				errs = append(errs, field.Duplicate(cp.Child("name"), c.Name))
			}
			seen.Insert(c.Name)
		}
		if c.Expression == "" {
			errs = append(errs, field.Required(cp.Child("expression"), ""))
		}
	}
	return errs
}

// ValidateValidatingAdmissionPolicy checks a policy's spec with Kubernetes' rules; Compiler.Policy
// compiles its expressions.
func ValidateValidatingAdmissionPolicy(pol *admissionregistrationv1.ValidatingAdmissionPolicy) field.ErrorList {
	var errs field.ErrorList
	s := &pol.Spec
	p := field.NewPath("spec")
	if s.FailurePolicy == nil {
		errs = append(errs, field.Required(p.Child("failurePolicy"), ""))
	} else if !supportedFailurePolicies.Has(string(*s.FailurePolicy)) {
		errs = append(errs, field.NotSupported(p.Child("failurePolicy"), *s.FailurePolicy, sets.List(supportedFailurePolicies)))
	}
	if s.ParamKind != nil {
		pk := p.Child("paramKind")
		if s.ParamKind.Kind == "" {
			errs = append(errs, field.Required(pk.Child("kind"), ""))
		}
		if s.ParamKind.APIVersion == "" {
			errs = append(errs, field.Required(pk.Child("apiVersion"), ""))
		} else if gv := strings.Split(s.ParamKind.APIVersion, "/"); len(gv) > 2 {
			errs = append(errs, field.Invalid(pk.Child("apiVersion"), s.ParamKind.APIVersion, "apiVersion must be a valid group version"))
		}
	}
	if s.MatchConstraints == nil {
		errs = append(errs, field.Required(p.Child("matchConstraints"), ""))
	} else {
		errs = append(errs, validateMatchResources(s.MatchConstraints, p.Child("matchConstraints"))...)
		if len(s.MatchConstraints.ResourceRules) == 0 {
			errs = append(errs, field.Required(p.Child("matchConstraints", "resourceRules"), ""))
		}
	}
	if len(s.Validations) == 0 && len(s.AuditAnnotations) == 0 {
		errs = append(errs, field.Required(p.Child("validations"), "validations or auditAnnotations must contain at least one item"))
	}
	for i, v := range s.Validations {
		vp := p.Child("validations").Index(i)
		if strings.TrimSpace(v.Expression) == "" {
			errs = append(errs, field.Required(vp.Child("expression"), "expression is not specified"))
		}
		if strings.Contains(v.Message, "\n") {
			errs = append(errs, field.Invalid(vp.Child("message"), v.Message, "message must not contain line breaks"))
		} else if len(v.Message) > 0 && strings.TrimSpace(v.Message) == "" {
			errs = append(errs, field.Invalid(vp.Child("message"), v.Message, "message must be non-empty if specified"))
		}
		if v.Reason != nil && !supportedPolicyReasons.Has(string(*v.Reason)) {
			errs = append(errs, field.NotSupported(vp.Child("reason"), *v.Reason, sets.List(supportedPolicyReasons)))
		}
	}
	seenKeys := sets.New[string]()
	for i, a := range s.AuditAnnotations {
		ap := p.Child("auditAnnotations").Index(i)
		if a.Key == "" {
			errs = append(errs, field.Required(ap.Child("key"), ""))
		} else {
			// The key becomes "<policy name>/<key>", which must be a qualified name.
			for _, msg := range utilvalidation.IsQualifiedName(pol.Name + "/" + a.Key) {
				errs = append(errs, field.Invalid(ap.Child("key"), a.Key, msg))
			}
			if seenKeys.Has(a.Key) {
				errs = append(errs, field.Duplicate(ap.Child("key"), a.Key))
			}
			seenKeys.Insert(a.Key)
		}
		if strings.TrimSpace(a.ValueExpression) == "" {
			errs = append(errs, field.Required(ap.Child("valueExpression"), "valueExpression is not specified"))
		}
	}
	errs = append(errs, validateMatchConditions(s.MatchConditions, p.Child("matchConditions"))...)
	seenVars := sets.New[string]()
	for i, v := range s.Variables {
		vp := p.Child("variables").Index(i)
		if v.Name == "" {
			errs = append(errs, field.Required(vp.Child("name"), "name is not specified"))
		} else {
			if !isCELIdentifier(v.Name) {
				errs = append(errs, field.Invalid(vp.Child("name"), v.Name, "name is not a valid CEL identifier"))
			}
			if seenVars.Has(v.Name) {
				errs = append(errs, field.Duplicate(vp.Child("name"), v.Name))
			}
			seenVars.Insert(v.Name)
		}
		if strings.TrimSpace(v.Expression) == "" {
			errs = append(errs, field.Required(vp.Child("expression"), "expression is not specified"))
		}
	}
	return errs
}

func isCELIdentifier(s string) bool {
	for i, r := range s {
		if r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9') {
			continue
		}
		return false
	}
	return s != ""
}

func validateMatchResources(m *admissionregistrationv1.MatchResources, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if m.MatchPolicy != nil && !supportedMatchPolicies.Has(string(*m.MatchPolicy)) {
		errs = append(errs, field.NotSupported(p.Child("matchPolicy"), *m.MatchPolicy, sets.List(supportedMatchPolicies)))
	}
	if m.NamespaceSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(m.NamespaceSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("namespaceSelector"))...)
	}
	if m.ObjectSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(m.ObjectSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("objectSelector"))...)
	}
	for i, r := range m.ResourceRules {
		errs = append(errs, validateNamedRule(&r, p.Child("resourceRules").Index(i))...)
	}
	for i, r := range m.ExcludeResourceRules {
		errs = append(errs, validateNamedRule(&r, p.Child("excludeResourceRules").Index(i))...)
	}
	return errs
}

func validateNamedRule(r *admissionregistrationv1.NamedRuleWithOperations, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, n := range r.ResourceNames {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(n) {
			errs = append(errs, field.Invalid(p.Child("resourceNames").Index(i), n, msg))
		}
	}
	return append(errs, validateRuleWithOperations(&r.RuleWithOperations, p)...)
}

// ValidateValidatingAdmissionPolicyBinding checks a binding with Kubernetes' rules.
func ValidateValidatingAdmissionPolicyBinding(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) field.ErrorList {
	var errs field.ErrorList
	s := &b.Spec
	p := field.NewPath("spec")
	if s.PolicyName == "" {
		errs = append(errs, field.Required(p.Child("policyName"), ""))
	} else {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(s.PolicyName) {
			errs = append(errs, field.Invalid(p.Child("policyName"), s.PolicyName, msg))
		}
	}
	if r := s.ParamRef; r != nil {
		rp := p.Child("paramRef")
		switch {
		case r.Name != "" && r.Selector != nil:
			errs = append(errs, field.Forbidden(rp.Child("name"), "name and selector are mutually exclusive"))
		case r.Name == "" && r.Selector == nil:
			errs = append(errs, field.Required(rp, "one of name or selector must be set"))
		}
		if r.Name != "" {
			for _, msg := range utilvalidation.IsDNS1123Subdomain(r.Name) {
				errs = append(errs, field.Invalid(rp.Child("name"), r.Name, msg))
			}
		}
		if r.Selector != nil {
			errs = append(errs, metav1validation.ValidateLabelSelector(r.Selector, metav1validation.LabelSelectorValidationOptions{}, rp.Child("selector"))...)
		}
		if r.ParameterNotFoundAction == nil {
			errs = append(errs, field.Required(rp.Child("parameterNotFoundAction"), ""))
		} else if !supportedParamNotFound.Has(string(*r.ParameterNotFoundAction)) {
			errs = append(errs, field.NotSupported(rp.Child("parameterNotFoundAction"), *r.ParameterNotFoundAction, sets.List(supportedParamNotFound)))
		}
	}
	if s.MatchResources != nil {
		errs = append(errs, validateMatchResources(s.MatchResources, p.Child("matchResouces"))...) // sic: Kubernetes reports this path
	}
	ap := p.Child("validationActions")
	if len(s.ValidationActions) == 0 {
		errs = append(errs, field.Required(ap, "at least one validation action is required"))
	}
	seen := sets.New[string]()
	for i, a := range s.ValidationActions {
		if !supportedValidationActions.Has(string(a)) {
			errs = append(errs, field.NotSupported(ap.Index(i), a, sets.List(supportedValidationActions)))
		}
		if seen.Has(string(a)) {
			errs = append(errs, field.Duplicate(ap.Index(i), a))
		}
		seen.Insert(string(a))
	}
	if seen.Has(string(admissionregistrationv1.Deny)) && seen.Has(string(admissionregistrationv1.Warn)) {
		errs = append(errs, field.Invalid(ap, s.ValidationActions, "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))
	}
	return errs
}
