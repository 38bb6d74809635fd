package flowcontrol

import (
	"context"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/registry/validationutil/errtest"
)

func resourceNamed(t *testing.T, plural string) *registry.Resource {
	t.Helper()
	for _, r := range Resources() {
		if r.Plural == plural {
			return r
		}
	}
	t.Fatalf("no resource %q", plural)
	return nil
}

func TestBootstrapObjectsAreValidAndDefaulted(t *testing.T) {
	s := runtime.NewScheme()
	if err := RegisterDefaults(s); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	fsRes, plRes := resourceNamed(t, "flowschemas"), resourceNamed(t, "prioritylevelconfigurations")
	levels := map[string]bool{}
	for _, pl := range append(MandatoryPriorityLevelConfigurations(), SuggestedPriorityLevelConfigurations()...) {
		defaulted := pl.DeepCopy()
		s.Default(defaulted)
		if !apiequality.Semantic.DeepEqual(defaulted, pl) {
			t.Errorf("defaulting changes %s: %+v", pl.Name, defaulted.Spec)
		}
		errtest.Check(t, plRes.Strategy.Validate(ctx, pl), nil)
		if pl.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "true" {
			t.Errorf("%s lacks the auto-update annotation", pl.Name)
		}
		levels[pl.Name] = true
	}
	schemas := append(MandatoryFlowSchemas(), SuggestedFlowSchemas()...)
	if len(levels) != 8 || len(schemas) != 13 {
		t.Fatalf("%d levels and %d schemas, want 8 and 13", len(levels), len(schemas))
	}
	for _, fs := range schemas {
		defaulted := fs.DeepCopy()
		s.Default(defaulted)
		if !apiequality.Semantic.DeepEqual(defaulted, fs) {
			t.Errorf("defaulting changes %s", fs.Name)
		}
		errtest.Check(t, fsRes.Strategy.Validate(ctx, fs), nil)
		if !levels[fs.Spec.PriorityLevelConfiguration.Name] {
			t.Errorf("%s references missing level %q", fs.Name, fs.Spec.PriorityLevelConfiguration.Name)
		}
	}
}

func TestDefaults(t *testing.T) {
	s := runtime.NewScheme()
	if err := RegisterDefaults(s); err != nil {
		t.Fatal(err)
	}
	fs := &flowcontrolv1.FlowSchema{}
	s.Default(fs)
	if fs.Spec.MatchingPrecedence != 1000 {
		t.Fatalf("matchingPrecedence = %d", fs.Spec.MatchingPrecedence)
	}
	pl := &flowcontrolv1.PriorityLevelConfiguration{Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
		Type: flowcontrolv1.PriorityLevelEnablementLimited,
		Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{LimitResponse: flowcontrolv1.LimitResponse{
			Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{},
		}},
	}}
	s.Default(pl)
	l := pl.Spec.Limited
	if *l.NominalConcurrencyShares != 30 || *l.LendablePercent != 0 || *l.LimitResponse.Queuing != (flowcontrolv1.QueuingConfiguration{Queues: 64, HandSize: 8, QueueLengthLimit: 50}) {
		t.Fatalf("limited defaults = %+v %+v", l, l.LimitResponse.Queuing)
	}
}

func flowSchemaFor(mods ...func(*flowcontrolv1.FlowSchema)) *flowcontrolv1.FlowSchema {
	fs := flowSchema("team-a", "workload-low", 5000, flowcontrolv1.FlowDistinguisherMethodByUserType, flowcontrolv1.PolicyRulesWithSubjects{
		Subjects:      users("alice"),
		ResourceRules: []flowcontrolv1.ResourcePolicyRule{resourceRule([]string{"get", "list"}, []string{"apps"}, []string{"deployments"}, []string{"team-a"}, false)},
	})
	fs.Annotations = nil
	for _, m := range mods {
		m(fs)
	}
	return fs
}

func rule0(fs *flowcontrolv1.FlowSchema) *flowcontrolv1.PolicyRulesWithSubjects {
	return &fs.Spec.Rules[0]
}

func TestValidateFlowSchema(t *testing.T) {
	tests := []struct {
		name string
		obj  *flowcontrolv1.FlowSchema
		want *errtest.Want
	}{
		{"valid", flowSchemaFor(), nil},
		{"non-resource rule", flowSchemaFor(func(fs *flowcontrolv1.FlowSchema) {
			rule0(fs).NonResourceRules = []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics", "/debug/*"}}}
		}), nil},
		{"zero precedence", flowSchemaFor(func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = 0 }), &errtest.Want{Field: "spec.matchingPrecedence", Type: field.ErrorTypeInvalid, Detail: "must be a positive value"}},
		{"precedence too large", flowSchemaFor(func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = 10001 }), &errtest.Want{Field: "spec.matchingPrecedence", Type: field.ErrorTypeInvalid, Detail: "must not be greater than 10000"}},
		{"precedence 1", flowSchemaFor(func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = 1 }), &errtest.Want{Field: "spec.matchingPrecedence", Type: field.ErrorTypeInvalid, Detail: "only the schema named 'exempt' may have matchingPrecedence 1"}},
		{"bad distinguisher", flowSchemaFor(func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.DistinguisherMethod = &flowcontrolv1.FlowDistinguisherMethod{Type: "ByVerb"}
		}), &errtest.Want{Field: "spec.distinguisherMethod.type", Type: field.ErrorTypeNotSupported}},
		{"no level", flowSchemaFor(func(fs *flowcontrolv1.FlowSchema) { fs.Spec.PriorityLevelConfiguration.Name = "" }), &errtest.Want{Field: "spec.priorityLevelConfiguration.name", Type: field.ErrorTypeRequired, Detail: "must reference a priority level"}},
		{"no subjects", flowSchemaFor(func(fs *flowcontrolv1.FlowSchema) { rule0(fs).Subjects = nil }), &errtest.Want{Field: "spec.rules[0].subjects", Type: field.ErrorTypeRequired, Detail: "subjects must contain at least one value"}},
		{"no rules", flowSchemaFor(func(fs *flowcontrolv1.FlowSchema) { rule0(fs).ResourceRules = nil }), &errtest.Want{Field: "spec.rules[0]", Type: field.ErrorTypeRequired, Detail: "at least one of resourceRules and nonResourceRules has to be non-empty"}},
		{"user kind with group", flowSchemaFor(func(fs *flowcontrolv1.FlowSchema) {
			rule0(fs).Subjects[0].Group = &flowcontrolv1.GroupSubject{Name: "g"}
		}), &errtest.Want{Field: "spec.rules[0].subjects[0].group", Type: field.ErrorTypeForbidden, Detail: "group is forbidden when subject kind is not 'Group'"}},
		{"service account without namespace", flowSchemaFor(func(fs *flowcontrolv1.FlowSchema) {
			rule0(fs).Subjects = []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Name: "builder"}}}
		}), &errtest.Want{Field: "spec.rules[0].subjects[0].serviceAccount.namespace", Type: field.ErrorTypeRequired, Detail: "must specify namespace for service account"}},
		{"unknown kind", flowSchemaFor(func(fs *flowcontrolv1.FlowSchema) { rule0(fs).Subjects[0].Kind = "Robot" }), &errtest.Want{Field: "spec.rules[0].subjects[0].kind", Type: field.ErrorTypeNotSupported}},
		{"wildcard with verbs", flowSchemaFor(func(fs *flowcontrolv1.FlowSchema) { rule0(fs).ResourceRules[0].Verbs = []string{"*", "get"} }), &errtest.Want{Field: "spec.rules[0].resourceRules[0].verbs", Type: field.ErrorTypeInvalid, Detail: "if '*' is present, must not specify other verbs"}},
		{"unknown verb", flowSchemaFor(func(fs *flowcontrolv1.FlowSchema) { rule0(fs).ResourceRules[0].Verbs = []string{"escalate"} }), &errtest.Want{Field: "spec.rules[0].resourceRules[0].verbs", Type: field.ErrorTypeNotSupported}},
		{"no namespaces", flowSchemaFor(func(fs *flowcontrolv1.FlowSchema) { rule0(fs).ResourceRules[0].Namespaces = nil }), &errtest.Want{Field: "spec.rules[0].resourceRules[0].namespaces", Type: field.ErrorTypeRequired, Detail: "resource rules that are not cluster scoped must supply at least one namespace"}},
		{"bad namespace", flowSchemaFor(func(fs *flowcontrolv1.FlowSchema) { rule0(fs).ResourceRules[0].Namespaces = []string{"Team_A"} }), &errtest.Want{Field: "spec.rules[0].resourceRules[0].namespaces[0]", Type: field.ErrorTypeInvalid, Detail: "each member of this list must be '*' or a DNS-1123 label; "}},
		{"url wildcard in the middle", flowSchemaFor(func(fs *flowcontrolv1.FlowSchema) {
			rule0(fs).NonResourceRules = []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/api/*/x"}}}
		}), &errtest.Want{Field: "spec.rules[0].nonResourceRules[0].nonResourceURLs[0]", Type: field.ErrorTypeInvalid, Detail: "wildcard can only do suffix matching"}},
		{"relative url", flowSchemaFor(func(fs *flowcontrolv1.FlowSchema) {
			rule0(fs).NonResourceRules = []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"healthz"}}}
		}), &errtest.Want{Field: "spec.rules[0].nonResourceRules[0].nonResourceURLs[0]", Type: field.ErrorTypeInvalid, Detail: "must start with slash"}},
		{"mandatory changed", func() *flowcontrolv1.FlowSchema {
			fs := MandatoryFlowSchemas()[1]
			fs.Spec.MatchingPrecedence = 9999
			return fs
		}(), &errtest.Want{Field: "spec", Type: field.ErrorTypeInvalid, Detail: "spec of 'catch-all' must equal the fixed value"}},
	}
	r := resourceNamed(t, "flowschemas")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errtest.Check(t, r.Strategy.Validate(context.Background(), tt.obj), tt.want)
		})
	}
}

func limited(mods ...func(*flowcontrolv1.PriorityLevelConfiguration)) *flowcontrolv1.PriorityLevelConfiguration {
	pl := limitedLevel("team-a", 10, 20, 32, 4, 20)
	pl.Annotations = nil
	for _, m := range mods {
		m(pl)
	}
	return pl
}

func TestValidatePriorityLevelConfiguration(t *testing.T) {
	queuing := func(pl *flowcontrolv1.PriorityLevelConfiguration) *flowcontrolv1.QueuingConfiguration {
		return pl.Spec.Limited.LimitResponse.Queuing
	}
	tests := []struct {
		name string
		obj  *flowcontrolv1.PriorityLevelConfiguration
		want *errtest.Want
	}{
		{"valid", limited(), nil},
		{"zero shares", limited(func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.NominalConcurrencyShares = ptr.To[int32](0)
		}), nil},
		{"reject", limited(func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.LimitResponse = flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}
		}), nil},
		{"exempt by another name", limited(func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec = flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementExempt}
		}), &errtest.Want{Field: "spec.type", Type: field.ErrorTypeInvalid, Detail: "type must be 'Exempt' if and only if name is 'exempt'"}},
		{"unknown type", limited(func(pl *flowcontrolv1.PriorityLevelConfiguration) { pl.Spec.Type = "Throttled" }), &errtest.Want{Field: "spec.type", Type: field.ErrorTypeNotSupported}},
		{"limited without settings", limited(func(pl *flowcontrolv1.PriorityLevelConfiguration) { pl.Spec.Limited = nil }), &errtest.Want{Field: "spec.limited", Type: field.ErrorTypeRequired, Detail: "must not be empty when type is Limited"}},
		{"limited with exempt", limited(func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Exempt = &flowcontrolv1.ExemptPriorityLevelConfiguration{}
		}), &errtest.Want{Field: "spec.exempt", Type: field.ErrorTypeForbidden, Detail: "must be nil if the type is Limited"}},
		{"negative shares", limited(func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.NominalConcurrencyShares = ptr.To[int32](-1)
		}), &errtest.Want{Field: "spec.limited.nominalConcurrencyShares", Type: field.ErrorTypeInvalid, Detail: "must be a non-negative integer"}},
		{"lendable over 100", limited(func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.LendablePercent = ptr.To[int32](101)
		}), &errtest.Want{Field: "spec.limited.lendablePercent", Type: field.ErrorTypeInvalid, Detail: "must be between 0 and 100, inclusive"}},
		{"negative borrowing", limited(func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.BorrowingLimitPercent = ptr.To[int32](-1)
		}), &errtest.Want{Field: "spec.limited.borrowingLimitPercent", Type: field.ErrorTypeInvalid, Detail: "if specified, must be a non-negative integer"}},
		{"queue without queuing", limited(func(pl *flowcontrolv1.PriorityLevelConfiguration) { pl.Spec.Limited.LimitResponse.Queuing = nil }), &errtest.Want{Field: "spec.limited.limitResponse.queuing", Type: field.ErrorTypeRequired, Detail: "must not be empty if limited.limitResponse.type is Limited"}},
		{"reject with queuing", limited(func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Spec.Limited.LimitResponse.Type = flowcontrolv1.LimitResponseTypeReject
		}), &errtest.Want{Field: "spec.limited.limitResponse.queuing", Type: field.ErrorTypeForbidden, Detail: "must be nil if limited.limitResponse.type is not Limited"}},
		{"zero queue length", limited(func(pl *flowcontrolv1.PriorityLevelConfiguration) { queuing(pl).QueueLengthLimit = 0 }), &errtest.Want{Field: "spec.limited.limitResponse.queuing.queueLengthLimit", Type: field.ErrorTypeInvalid, Detail: "must be positive"}},
		{"hand bigger than deck", limited(func(pl *flowcontrolv1.PriorityLevelConfiguration) { queuing(pl).HandSize = 33 }), &errtest.Want{Field: "spec.limited.limitResponse.queuing.handSize", Type: field.ErrorTypeInvalid, Detail: "should not be greater than queues (32)"}},
		{"too much entropy", limited(func(pl *flowcontrolv1.PriorityLevelConfiguration) {
			queuing(pl).Queues, queuing(pl).HandSize = 10000, 7
		}), &errtest.Want{Field: "spec.limited.limitResponse.queuing.handSize", Type: field.ErrorTypeInvalid, Detail: "required entropy bits of deckSize 10000 and handSize 7 should not be greater than 60"}},
		{"too many queues", limited(func(pl *flowcontrolv1.PriorityLevelConfiguration) { queuing(pl).Queues = 10000001 }), &errtest.Want{Field: "spec.limited.limitResponse.queuing.queues", Type: field.ErrorTypeInvalid, Detail: "must not be greater than 10000000"}},
		{"catch-all changed", func() *flowcontrolv1.PriorityLevelConfiguration {
			pl := MandatoryPriorityLevelConfigurations()[1]
			pl.Spec.Limited.NominalConcurrencyShares = ptr.To[int32](50)
			return pl
		}(), &errtest.Want{Field: "spec", Type: field.ErrorTypeInvalid, Detail: "spec of 'catch-all' must equal the fixed value"}},
		{"exempt shares tuned", func() *flowcontrolv1.PriorityLevelConfiguration {
			pl := MandatoryPriorityLevelConfigurations()[0]
			pl.Spec.Exempt.NominalConcurrencyShares = ptr.To[int32](10)
			return pl
		}(), nil},
	}
	r := resourceNamed(t, "prioritylevelconfigurations")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errtest.Check(t, r.Strategy.Validate(context.Background(), tt.obj), tt.want)
		})
	}
}

func TestStatusSubresources(t *testing.T) {
	ctx := context.Background()
	r := resourceNamed(t, "flowschemas")
	old := flowSchemaFor(func(fs *flowcontrolv1.FlowSchema) { fs.ResourceVersion, fs.Generation = "1", 1 })
	st := old.DeepCopy()
	st.Spec.MatchingPrecedence = 1
	st.Status.Conditions = []flowcontrolv1.FlowSchemaCondition{{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionFalse, LastTransitionTime: metav1.Now()}}
	r.Status.PrepareForUpdate(ctx, st, old)
	if st.Spec.MatchingPrecedence != 5000 || len(st.Status.Conditions) != 1 {
		t.Fatalf("status update = %+v", st)
	}
	errtest.Check(t, r.Status.ValidateUpdate(ctx, st, old), nil)
	st.Status.Conditions = append(st.Status.Conditions, st.Status.Conditions[0])
	errtest.Check(t, r.Status.ValidateUpdate(ctx, st, old), &errtest.Want{Field: "status.conditions[1].type", Type: field.ErrorTypeDuplicate})

	upd := old.DeepCopy()
	upd.Spec.MatchingPrecedence = 6000
	r.Strategy.PrepareForUpdate(ctx, upd, old)
	if upd.Generation != 2 {
		t.Fatalf("generation = %d", upd.Generation)
	}
}
