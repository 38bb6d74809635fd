package flowcontrol

import (
	"fmt"
	"math"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/internal/registry"
	vu "github.com/skiff-sh/skiff/internal/registry/validationutil"
)

const (
	maxQueues = 10 * 1000 * 1000
	// maxHashBits is the entropy a flow's hash offers shuffle sharding.
	maxHashBits = 60
	nsErrIntro  = "each member of this list must be '*' or a DNS-1123 label; "
)

var (
	supportedVerbs              = []string{"create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch"}
	supportedSubjectKinds       = []string{string(flowcontrolv1.SubjectKindGroup), string(flowcontrolv1.SubjectKindServiceAccount), string(flowcontrolv1.SubjectKindUser)}
	supportedDistinguishers     = []string{string(flowcontrolv1.FlowDistinguisherMethodByNamespaceType), string(flowcontrolv1.FlowDistinguisherMethodByUserType)}
	supportedPriorityLevelTypes = []string{string(flowcontrolv1.PriorityLevelEnablementExempt), string(flowcontrolv1.PriorityLevelEnablementLimited)}
	supportedLimitResponseTypes = []string{string(flowcontrolv1.LimitResponseTypeQueue), string(flowcontrolv1.LimitResponseTypeReject)}
)

// mandatoryFlowSchemaSpec is the fixed spec of a mandatory schema (built on demand: two objects).
func mandatoryFlowSchemaSpec(name string) (flowcontrolv1.FlowSchemaSpec, bool) {
	for _, fs := range MandatoryFlowSchemas() {
		if fs.Name == name {
			return fs.Spec, true
		}
	}
	return flowcontrolv1.FlowSchemaSpec{}, false
}

// mandatoryPriorityLevelSpec is the fixed spec of a mandatory level.
func mandatoryPriorityLevelSpec(name string) (flowcontrolv1.PriorityLevelConfigurationSpec, bool) {
	for _, pl := range MandatoryPriorityLevelConfigurations() {
		if pl.Name == name {
			return pl.Spec, true
		}
	}
	return flowcontrolv1.PriorityLevelConfigurationSpec{}, false
}

// Resources returns the flowcontrol.apiserver.k8s.io/v1 resources.
func Resources() []*registry.Resource {
	gv := flowcontrolv1.SchemeGroupVersion
	return []*registry.Resource{
		{
			GroupVersion: gv, Kind: "FlowSchema", ListKind: "FlowSchemaList",
			Plural: "flowschemas", Singular: "flowschema",
			New:     func() runtime.Object { return &flowcontrolv1.FlowSchema{} },
			NewList: func() runtime.Object { return &flowcontrolv1.FlowSchemaList{} },
			Strategy: &vu.Strategy[*flowcontrolv1.FlowSchema]{
				APIVersion:          gv.String(),
				ClearStatus:         func(fs *flowcontrolv1.FlowSchema) { fs.Status = flowcontrolv1.FlowSchemaStatus{} },
				KeepStatus:          func(fs, old *flowcontrolv1.FlowSchema) { fs.Status = old.Status },
				SpecEqual:           func(fs, old *flowcontrolv1.FlowSchema) bool { return apiequality.Semantic.DeepEqual(fs.Spec, old.Spec) },
				ValidateObject:      ValidateFlowSchema,
				UnconditionalUpdate: true,
			},
			Status: &vu.StatusStrategy[*flowcontrolv1.FlowSchema]{
				APIVersion: gv.String(),
				Metadata:   vu.StatusResetsMetadata,
				KeepSpec:   func(fs, old *flowcontrolv1.FlowSchema) { fs.Spec = old.Spec },
				ValidateStatus: func(fs, _ *flowcontrolv1.FlowSchema) field.ErrorList {
					return validateConditionTypes(flowSchemaConditionTypes(fs.Status.Conditions), field.NewPath("status", "conditions"))
				},
			},
		},
		{
			GroupVersion: gv, Kind: "PriorityLevelConfiguration", ListKind: "PriorityLevelConfigurationList",
			Plural: "prioritylevelconfigurations", Singular: "prioritylevelconfiguration",
			New:     func() runtime.Object { return &flowcontrolv1.PriorityLevelConfiguration{} },
			NewList: func() runtime.Object { return &flowcontrolv1.PriorityLevelConfigurationList{} },
			Strategy: &vu.Strategy[*flowcontrolv1.PriorityLevelConfiguration]{
				APIVersion: gv.String(),
				ClearStatus: func(pl *flowcontrolv1.PriorityLevelConfiguration) {
					pl.Status = flowcontrolv1.PriorityLevelConfigurationStatus{}
				},
				KeepStatus: func(pl, old *flowcontrolv1.PriorityLevelConfiguration) { pl.Status = old.Status },
				SpecEqual: func(pl, old *flowcontrolv1.PriorityLevelConfiguration) bool {
					return apiequality.Semantic.DeepEqual(pl.Spec, old.Spec)
				},
				ValidateObject:      ValidatePriorityLevelConfiguration,
				UnconditionalUpdate: true,
			},
			Status: &vu.StatusStrategy[*flowcontrolv1.PriorityLevelConfiguration]{
				APIVersion: gv.String(),
				Metadata:   vu.StatusResetsMetadata,
				KeepSpec:   func(pl, old *flowcontrolv1.PriorityLevelConfiguration) { pl.Spec = old.Spec },
				ValidateStatus: func(pl, _ *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
					return validateConditionTypes(priorityLevelConditionTypes(pl.Status.Conditions), field.NewPath("status", "conditions"))
				},
			},
		},
	}
}

// ValidateFlowSchema checks the spec and status, and keeps the mandatory schemas at their fixed spec.
func ValidateFlowSchema(fs *flowcontrolv1.FlowSchema) field.ErrorList {
	specPath := field.NewPath("spec")
	errs := ValidateFlowSchemaSpec(fs.Name, &fs.Spec, specPath)
	if mand, ok := mandatoryFlowSchemaSpec(fs.Name); ok && !apiequality.Semantic.DeepEqual(fs.Spec, mand) {
		errs = append(errs, field.Invalid(specPath, fs.Spec, fmt.Sprintf("spec of '%s' must equal the fixed value", fs.Name)))
	}
	return append(errs, validateConditionTypes(flowSchemaConditionTypes(fs.Status.Conditions), field.NewPath("status", "conditions"))...)
}

// ValidateFlowSchemaSpec checks the precedence (1 to 10000, 1 only for "exempt"), the
// distinguisher, the priority level reference and every rule.
func ValidateFlowSchemaSpec(name string, spec *flowcontrolv1.FlowSchemaSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	precPath := fldPath.Child("matchingPrecedence")
	if spec.MatchingPrecedence <= 0 {
		errs = append(errs, field.Invalid(precPath, spec.MatchingPrecedence, "must be a positive value"))
	}
	if spec.MatchingPrecedence > flowcontrolv1.FlowSchemaMaxMatchingPrecedence {
		errs = append(errs, field.Invalid(precPath, spec.MatchingPrecedence, fmt.Sprintf("must not be greater than %v", flowcontrolv1.FlowSchemaMaxMatchingPrecedence)))
	}
	if spec.MatchingPrecedence == 1 && name != flowcontrolv1.FlowSchemaNameExempt {
		errs = append(errs, field.Invalid(precPath, spec.MatchingPrecedence, "only the schema named 'exempt' may have matchingPrecedence 1"))
	}
	if dm := spec.DistinguisherMethod; dm != nil && !sets.New(supportedDistinguishers...).Has(string(dm.Type)) {
		errs = append(errs, field.NotSupported(fldPath.Child("distinguisherMethod", "type"), dm.Type, supportedDistinguishers))
	}
	plPath := fldPath.Child("priorityLevelConfiguration", "name")
	if spec.PriorityLevelConfiguration.Name == "" {
		errs = append(errs, field.Required(plPath, "must reference a priority level"))
	} else {
		for _, msg := range apivalidation.NameIsDNSSubdomain(spec.PriorityLevelConfiguration.Name, false) {
			errs = append(errs, field.Invalid(plPath, spec.PriorityLevelConfiguration.Name, msg))
		}
	}
	for i := range spec.Rules {
		errs = append(errs, validatePolicyRulesWithSubjects(&spec.Rules[i], fldPath.Child("rules").Index(i))...)
	}
	return errs
}

func validatePolicyRulesWithSubjects(rule *flowcontrolv1.PolicyRulesWithSubjects, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(rule.Subjects) == 0 {
		errs = append(errs, field.Required(fldPath.Child("subjects"), "subjects must contain at least one value"))
	}
	for i := range rule.Subjects {
		errs = append(errs, validateSubject(&rule.Subjects[i], fldPath.Child("subjects").Index(i))...)
	}
	if len(rule.ResourceRules) == 0 && len(rule.NonResourceRules) == 0 {
		errs = append(errs, field.Required(fldPath, "at least one of resourceRules and nonResourceRules has to be non-empty"))
	}
	for i := range rule.ResourceRules {
		errs = append(errs, validateResourceRule(&rule.ResourceRules[i], fldPath.Child("resourceRules").Index(i))...)
	}
	for i := range rule.NonResourceRules {
		errs = append(errs, validateNonResourceRule(&rule.NonResourceRules[i], fldPath.Child("nonResourceRules").Index(i))...)
	}
	return errs
}

// validateSubject requires the member matching the kind and forbids the others.
func validateSubject(s *flowcontrolv1.Subject, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	forbidUser := func() {
		if s.User != nil {
			errs = append(errs, field.Forbidden(fldPath.Child("user"), "user is forbidden when subject kind is not 'User'"))
		}
	}
	forbidGroup := func() {
		if s.Group != nil {
			errs = append(errs, field.Forbidden(fldPath.Child("group"), "group is forbidden when subject kind is not 'Group'"))
		}
	}
	forbidSA := func() {
		if s.ServiceAccount != nil {
			errs = append(errs, field.Forbidden(fldPath.Child("serviceAccount"), "serviceAccount is forbidden when subject kind is not 'ServiceAccount'"))
		}
	}
	switch s.Kind {
	case flowcontrolv1.SubjectKindServiceAccount:
		p := fldPath.Child("serviceAccount")
		switch sa := s.ServiceAccount; {
		case sa == nil:
			errs = append(errs, field.Required(p, "serviceAccount is required when subject kind is 'ServiceAccount'"))
		default:
			if sa.Name == "" {
				errs = append(errs, field.Required(p.Child("name"), ""))
			} else if sa.Name != flowcontrolv1.NameAll {
				for _, msg := range apivalidation.ValidateServiceAccountName(sa.Name, false) {
					errs = append(errs, field.Invalid(p.Child("name"), sa.Name, msg))
				}
			}
			if sa.Namespace == "" {
				errs = append(errs, field.Required(p.Child("namespace"), "must specify namespace for service account"))
			} else {
				for _, msg := range apivalidation.ValidateNamespaceName(sa.Namespace, false) {
					errs = append(errs, field.Invalid(p.Child("namespace"), sa.Namespace, msg))
				}
			}
		}
		forbidUser()
		forbidGroup()
	case flowcontrolv1.SubjectKindUser:
		if s.User == nil {
			errs = append(errs, field.Required(fldPath.Child("user"), "user is required when subject kind is 'User'"))
		} else if s.User.Name == "" {
			errs = append(errs, field.Required(fldPath.Child("user", "name"), ""))
		}
		forbidSA()
		forbidGroup()
	case flowcontrolv1.SubjectKindGroup:
		if s.Group == nil {
			errs = append(errs, field.Required(fldPath.Child("group"), "group is required when subject kind is 'Group'"))
		} else if s.Group.Name == "" {
			errs = append(errs, field.Required(fldPath.Child("group", "name"), ""))
		}
		forbidSA()
		forbidUser()
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("kind"), s.Kind, supportedSubjectKinds))
	}
	return errs
}

// validateVerbs requires verbs: "*" alone, or supported verbs.
func validateVerbs(verbs []string, fldPath *field.Path) field.ErrorList {
	switch {
	case len(verbs) == 0:
		return field.ErrorList{field.Required(fldPath, "verbs must contain at least one value")}
	case hasWildcard(verbs):
		if len(verbs) > 1 {
			return field.ErrorList{field.Invalid(fldPath, verbs, "if '*' is present, must not specify other verbs")}
		}
	case !sets.New(supportedVerbs...).IsSuperset(sets.New(verbs...)):
		return field.ErrorList{field.NotSupported(fldPath, verbs, supportedVerbs)}
	}
	return nil
}

func validateResourceRule(r *flowcontrolv1.ResourcePolicyRule, fldPath *field.Path) field.ErrorList {
	errs := validateVerbs(r.Verbs, fldPath.Child("verbs"))
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(fldPath.Child("apiGroups"), "resource rules must supply at least one api group"))
	} else if len(r.APIGroups) > 1 && hasWildcard(r.APIGroups) {
		errs = append(errs, field.Invalid(fldPath.Child("apiGroups"), r.APIGroups, "if '*' is present, must not specify other api groups"))
	}
	if len(r.Resources) == 0 {
		errs = append(errs, field.Required(fldPath.Child("resources"), "resource rules must supply at least one resource"))
	} else if len(r.Resources) > 1 && hasWildcard(r.Resources) {
		errs = append(errs, field.Invalid(fldPath.Child("resources"), r.Resources, "if '*' is present, must not specify other resources"))
	}
	nsPath := fldPath.Child("namespaces")
	switch {
	case len(r.Namespaces) == 0 && !r.ClusterScope:
		errs = append(errs, field.Required(nsPath, "resource rules that are not cluster scoped must supply at least one namespace"))
	case hasWildcard(r.Namespaces):
		if len(r.Namespaces) > 1 {
			errs = append(errs, field.Invalid(nsPath, r.Namespaces, "if '*' is present, must not specify other namespaces"))
		}
	default:
		for i, ns := range r.Namespaces {
			for _, msg := range apivalidation.ValidateNamespaceName(ns, false) {
				errs = append(errs, field.Invalid(nsPath.Index(i), ns, nsErrIntro+msg))
			}
		}
	}
	return errs
}

func validateNonResourceRule(r *flowcontrolv1.NonResourcePolicyRule, fldPath *field.Path) field.ErrorList {
	errs := validateVerbs(r.Verbs, fldPath.Child("verbs"))
	urlPath := fldPath.Child("nonResourceURLs")
	switch {
	case len(r.NonResourceURLs) == 0:
		errs = append(errs, field.Required(urlPath, "nonResourceURLs must contain at least one value"))
	case hasWildcard(r.NonResourceURLs):
		if len(r.NonResourceURLs) > 1 {
			errs = append(errs, field.Invalid(urlPath, r.NonResourceURLs, "if '*' is present, must not specify other non-resource URLs"))
		}
	default:
		for i, u := range r.NonResourceURLs {
			if msg := nonResourceURLProblem(u); msg != "" {
				errs = append(errs, field.Invalid(urlPath.Index(i), u, msg))
			}
		}
	}
	return errs
}

// nonResourceURLProblem: a URL path starts with a slash, has no white space or double slash, and
// uses "*" only as a final "/*" segment.
func nonResourceURLProblem(path string) string {
	switch {
	case path == "":
		return "must not be empty"
	case path == "/":
		return ""
	case !strings.HasPrefix(path, "/"):
		return "must start with slash"
	case strings.Contains(path, " "):
		return "must not contain white-space"
	case strings.Contains(path, "//"):
		return "must not contain double slash"
	}
	if n := strings.Count(path, "*"); n > 1 || (n == 1 && !strings.HasSuffix(path, "/*")) {
		return "wildcard can only do suffix matching"
	}
	return ""
}

func hasWildcard(list []string) bool {
	for _, s := range list {
		if s == "*" {
			return true
		}
	}
	return false
}

// ValidatePriorityLevelConfiguration checks the spec and status and keeps the mandatory levels at
// their fixed spec (the exempt level's shares and lendable percent may be tuned).
func ValidatePriorityLevelConfiguration(pl *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
	specPath := field.NewPath("spec")
	errs := ValidatePriorityLevelConfigurationSpec(pl.Name, &pl.Spec, specPath)
	if mand, ok := mandatoryPriorityLevelSpec(pl.Name); ok {
		got := pl.Spec
		if pl.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt {
			got.Exempt, mand.Exempt = nil, nil
		}
		if !apiequality.Semantic.DeepEqual(got, mand) {
			errs = append(errs, field.Invalid(specPath, pl.Spec, fmt.Sprintf("spec of '%s' must equal the fixed value", pl.Name)))
		}
	}
	return append(errs, validateConditionTypes(priorityLevelConditionTypes(pl.Status.Conditions), field.NewPath("status", "conditions"))...)
}

// ValidatePriorityLevelConfigurationSpec checks that only "exempt" is Exempt, and the limited or
// exempt settings that match the type.
func ValidatePriorityLevelConfigurationSpec(name string, spec *flowcontrolv1.PriorityLevelConfigurationSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if (name == flowcontrolv1.PriorityLevelConfigurationNameExempt) != (spec.Type == flowcontrolv1.PriorityLevelEnablementExempt) {
		errs = append(errs, field.Invalid(fldPath.Child("type"), spec.Type, "type must be 'Exempt' if and only if name is 'exempt'"))
	}
	switch spec.Type {
	case flowcontrolv1.PriorityLevelEnablementExempt:
		if spec.Limited != nil {
			errs = append(errs, field.Forbidden(fldPath.Child("limited"), "must be nil if the type is not Limited"))
		}
		if e := spec.Exempt; e != nil {
			p := fldPath.Child("exempt")
			if e.NominalConcurrencyShares != nil && *e.NominalConcurrencyShares < 0 {
				errs = append(errs, field.Invalid(p.Child("nominalConcurrencyShares"), *e.NominalConcurrencyShares, "must be a non-negative integer"))
			}
			errs = append(errs, validatePercent(e.LendablePercent, p.Child("lendablePercent"))...)
		}
	case flowcontrolv1.PriorityLevelEnablementLimited:
		if spec.Exempt != nil {
			errs = append(errs, field.Forbidden(fldPath.Child("exempt"), "must be nil if the type is Limited"))
		}
		if spec.Limited == nil {
			errs = append(errs, field.Required(fldPath.Child("limited"), "must not be empty when type is Limited"))
		} else {
			errs = append(errs, validateLimited(spec.Limited, fldPath.Child("limited"))...)
		}
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("type"), spec.Type, supportedPriorityLevelTypes))
	}
	return errs
}

func validatePercent(v *int32, fldPath *field.Path) field.ErrorList {
	if v != nil && (*v < 0 || *v > 100) {
		return field.ErrorList{field.Invalid(fldPath, *v, "must be between 0 and 100, inclusive")}
	}
	return nil
}

func validateLimited(l *flowcontrolv1.LimitedPriorityLevelConfiguration, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	// v1 allows zero shares (a level that only borrows).
	if l.NominalConcurrencyShares != nil && *l.NominalConcurrencyShares < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("nominalConcurrencyShares"), *l.NominalConcurrencyShares, "must be a non-negative integer"))
	}
	lr, lrPath := l.LimitResponse, fldPath.Child("limitResponse")
	switch lr.Type {
	case flowcontrolv1.LimitResponseTypeReject:
		if lr.Queuing != nil {
			errs = append(errs, field.Forbidden(lrPath.Child("queuing"), "must be nil if limited.limitResponse.type is not Limited"))
		}
	case flowcontrolv1.LimitResponseTypeQueue:
		if lr.Queuing == nil {
			errs = append(errs, field.Required(lrPath.Child("queuing"), "must not be empty if limited.limitResponse.type is Limited"))
		} else {
			errs = append(errs, validateQueuing(lr.Queuing, lrPath.Child("queuing"))...)
		}
	default:
		errs = append(errs, field.NotSupported(lrPath.Child("type"), lr.Type, supportedLimitResponseTypes))
	}
	errs = append(errs, validatePercent(l.LendablePercent, fldPath.Child("lendablePercent"))...)
	if b := l.BorrowingLimitPercent; b != nil && *b < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("borrowingLimitPercent"), *b, "if specified, must be a non-negative integer"))
	}
	return errs
}

// validateQueuing checks the queue length and the shuffle-sharding deck (queues) and hand.
func validateQueuing(q *flowcontrolv1.QueuingConfiguration, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if q.QueueLengthLimit <= 0 {
		errs = append(errs, field.Invalid(fldPath.Child("queueLengthLimit"), q.QueueLengthLimit, "must be positive"))
	}
	if q.Queues <= 0 {
		errs = append(errs, field.Invalid(fldPath.Child("queues"), q.Queues, "must be positive"))
	} else if q.Queues > maxQueues {
		errs = append(errs, field.Invalid(fldPath.Child("queues"), q.Queues, fmt.Sprintf("must not be greater than %d", maxQueues)))
	}
	handPath := fldPath.Child("handSize")
	switch {
	case q.HandSize <= 0:
		errs = append(errs, field.Invalid(handPath, q.HandSize, "must be positive"))
	case q.HandSize > q.Queues:
		errs = append(errs, field.Invalid(handPath, q.HandSize, fmt.Sprintf("should not be greater than queues (%d)", q.Queues)))
	case requiredEntropyBits(q.Queues, q.HandSize) > maxHashBits:
		errs = append(errs, field.Invalid(handPath, q.HandSize,
			fmt.Sprintf("required entropy bits of deckSize %d and handSize %d should not be greater than %d", q.Queues, q.HandSize, maxHashBits)))
	}
	return errs
}

// requiredEntropyBits is the hash bits dealing a hand of handSize from deckSize cards consumes.
func requiredEntropyBits(deckSize, handSize int32) int {
	return int(math.Ceil(math.Log2(float64(deckSize)) * float64(handSize)))
}

func flowSchemaConditionTypes(conds []flowcontrolv1.FlowSchemaCondition) []string {
	out := make([]string, len(conds))
	for i, c := range conds {
		out[i] = string(c.Type)
	}
	return out
}

func priorityLevelConditionTypes(conds []flowcontrolv1.PriorityLevelConfigurationCondition) []string {
	out := make([]string, len(conds))
	for i, c := range conds {
		out[i] = string(c.Type)
	}
	return out
}

// validateConditionTypes requires each condition's type, once.
func validateConditionTypes(types []string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, t := range types {
		p := fldPath.Index(i).Child("type")
		if seen.Has(t) {
			errs = append(errs, field.Duplicate(p, t))
		}
		seen.Insert(t)
		if t == "" {
			errs = append(errs, field.Required(p, "must not be empty"))
		}
	}
	return errs
}
