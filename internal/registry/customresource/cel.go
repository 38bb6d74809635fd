package customresource

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/interpreter"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kube-openapi/pkg/validation/strfmt"

	crdv1 "github.com/skiff-sh/skiff/internal/apis/apiextensionsv1"
	kcel "github.com/skiff-sh/skiff/internal/cel"
)

// Kubernetes' limits on x-kubernetes-validations. A definition is refused when one expression's
// estimated cost (times how many times it may run in one object) exceeds
// staticEstimatedCostLimit, or all of them together exceed staticEstimatedCRDCostLimit. At run time
// one expression may cost kcel.PerCallLimit and all the rules of one object kcel.RuntimeCostBudget.
const (
	staticEstimatedCostLimit    = 10000000
	staticEstimatedCRDCostLimit = 100000000
)

// compiledRule is one x-kubernetes-validations entry, ready to run.
type compiledRule struct {
	rule    crdv1.ValidationRule
	program cel.Program
	message cel.Program // the messageExpression's, nil without one
	// fieldPath is the rule's fieldPath as steps below the rule's node (nil: the node itself).
	fieldPath []fieldStep
	// usesOldSelf marks a transition rule: it runs on updates only, unless optionalOldSelf (then
	// oldSelf is an optional, none when there is no old value), and its errors are never ratcheted.
	usesOldSelf, optionalOldSelf bool
}

// celRules holds the compiled rules of a schema by the schema node they sit on (childKey).
type celRules struct {
	byNode map[string][]compiledRule
}

// Rules are kept by the schema node they sit on, named by its place: "" the root, then ".p" for
// a property, "[]" for array items, "{}" for additionalProperties (".spec.ports[]").
func childKey(key, property string) string { return key + "." + property }

const (
	itemsKey  = "[]"
	valuesKey = "{}"
)

// ruleCost is what one expression may cost in one object: its estimated cost times how many
// times it may run.
type ruleCost struct {
	path *field.Path
	cost uint64
}

// compiler compiles the rules of a whole schema and keeps the figures kube-apiserver judges a
// definition by.
type compiler struct {
	base  *cel.Env
	rules *celRules
	errs  field.ErrorList
	costs []ruleCost
	total uint64
	// perCallLimit is what one evaluation of a compiled expression may cost.
	perCallLimit uint64
}

// compileCEL compiles every rule and message expression of s, typing self and oldSelf from the
// schema as kube-apiserver does. fld is where s sits in the definition (for the errors); the
// errors are those kube-apiserver answers a definition with (a rule that does not compile, that is
// not boolean, that costs too much, an invalid fieldPath). A rule with an error is not kept.
func compileCEL(s *crdv1.JSONSchemaProps, fld *field.Path) (*celRules, field.ErrorList, error) {
	return compileCELWithLimit(s, fld, kcel.PerCallLimit)
}

// compileCELWithLimit is compileCEL with perCallLimit for what one evaluation of a rule may cost
// (kcel.PerCallLimit in the server; tests scale it down rather than spend a million steps).
func compileCELWithLimit(s *crdv1.JSONSchemaProps, fld *field.Path, perCallLimit uint64) (*celRules, field.ErrorList, error) {
	base, err := cel.NewEnv(kcel.Libraries()...)
	if err != nil {
		return nil, nil, fmt.Errorf("cel environment: %w", err)
	}
	c := &compiler{base: base, rules: &celRules{byNode: map[string][]compiledRule{}}, perCallLimit: perCallLimit}
	one := uint64(1)
	c.walk(s, true, "", fld, &one, nil)
	if c.total > staticEstimatedCRDCostLimit {
		c.errs = append(c.errs, c.totalCostErrors(fld)...)
	}
	return c.rules, c.errs, nil
}

// walk compiles the rules of s and below. cardinality is how many times a rule of s may run in
// one object (the product of the maxItems and maxProperties above it), nil when unbounded.
// uncorrelatable is the first place above s whose children have no counterpart in an old object
// (a list not of type map), where rules may not use oldSelf; nil when none is. Object fields,
// atomic maps' too, always have one.
func (c *compiler) walk(s *crdv1.JSONSchemaProps, root bool, key string, fld *field.Path, cardinality *uint64, uncorrelatable *field.Path) {
	if s == nil {
		return
	}
	if len(s.XValidations) > 0 {
		c.compileNode(s, root || s.XEmbeddedResource, key, fld, cardinality, uncorrelatable)
	}
	itemsUncorrelatable := uncorrelatable
	if itemsUncorrelatable == nil && !mapList(s) {
		itemsUncorrelatable = fld
	}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := s.Properties[name]
		if root && name == "metadata" {
			continue
		}
		c.walk(&p, false, childKey(key, name), fld.Child("properties").Key(name), cardinality, uncorrelatable)
	}
	if s.Items != nil && s.Items.Schema != nil {
		c.walk(s.Items.Schema, false, key+itemsKey, fld.Child("items"), times(cardinality, s.MaxItems), itemsUncorrelatable)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		c.walk(s.AdditionalProperties.Schema, false, key+valuesKey, fld.Child("additionalProperties"), times(cardinality, s.MaxProperties), uncorrelatable)
	}
}

// mapList reports a list of x-kubernetes-list-type map: its items are matched with the old
// object's by their keys; the items of other lists have no counterpart.
func mapList(s *crdv1.JSONSchemaProps) bool {
	return s.XListType != nil && *s.XListType == "map" && len(s.XListMapKeys) > 0
}

// times multiplies a cardinality by a limit; either unbounded makes it unbounded.
func times(cardinality *uint64, limit *int64) *uint64 {
	if cardinality == nil || limit == nil {
		return nil
	}
	n := mulGuarded(*cardinality, uint64(max(*limit, 0)))
	return &n
}

// mulGuarded is a*b, or the largest uint64 where that overflows.
func mulGuarded(a, b uint64) uint64 {
	if a == 0 || b == 0 {
		return 0
	}
	if math.MaxUint64/a < b {
		return math.MaxUint64
	}
	return a * b
}

// compileNode compiles the rules on one node, with self typed as the node.
func (c *compiler) compileNode(s *crdv1.JSONSchemaProps, root bool, key string, fld *field.Path, cardinality *uint64, uncorrelatable *field.Path) {
	objects := map[string]*declType{}
	// Object types are named apart from the variables (selfType.spec, not self.spec): the checker
	// would read self.spec.x as the type self.spec otherwise.
	scope := newDeclType(s, root, "selfType", objects)
	if scope == nil {
		c.errs = append(c.errs, field.InternalError(fld.Child("x-kubernetes-validations"), errors.New("internal error: failed to retrieve type information for x-kubernetes-validations")))
		return
	}
	if cardinality == nil {
		// Unbounded: as many nodes as fit in a request, each of its smallest size and a comma.
		n := uint64(maxRequestSizeBytes / (scope.minSize + 1))
		cardinality = &n
	}
	sizes := &sizeEstimator{scope: scope}
	costs := kcel.CallCosts{Size: sizes.EstimateSize}
	sizes.calls = costs
	provider := &typeProvider{Provider: c.base.CELTypeProvider(), objects: objects}
	env, err := c.base.Extend(cel.CustomTypeProvider(provider), cel.Variable("self", scope.cel), cel.Variable("oldSelf", scope.cel))
	if err != nil {
		c.errs = append(c.errs, field.InternalError(fld.Child("x-kubernetes-validations"), fmt.Errorf("cel environment: %w", err)))
		return
	}
	optionalEnv, err := c.base.Extend(cel.CustomTypeProvider(provider), cel.Variable("self", scope.cel), cel.Variable("oldSelf", types.NewOptionalType(scope.cel)))
	if err != nil {
		c.errs = append(c.errs, field.InternalError(fld.Child("x-kubernetes-validations"), fmt.Errorf("cel environment: %w", err)))
		return
	}
	for i, rule := range s.XValidations {
		rf := fld.Child("x-kubernetes-validations").Index(i)
		compiled, ok := compiledRule{rule: rule, optionalOldSelf: rule.OptionalOldSelf != nil && *rule.OptionalOldSelf}, true
		if strings.TrimSpace(rule.Rule) == "" {
			continue // refused as "rule is not specified" by the definition's validation
		}
		ruleEnv := env
		if compiled.optionalOldSelf {
			ruleEnv = optionalEnv
		}
		compiled.program, compiled.usesOldSelf, ok = c.compileExpr(ruleEnv, sizes, costs, rule.Rule, cel.BoolType, rf.Child("rule"), "", cardinality)
		switch {
		case ok && compiled.usesOldSelf && uncorrelatable != nil:
			c.errs = append(c.errs, field.Invalid(rf.Child("rule"), rule.Rule, fmt.Sprintf("oldSelf cannot be used on the uncorrelatable portion of the schema within %v", uncorrelatable)))
			ok = false
		case ok && !compiled.usesOldSelf && compiled.optionalOldSelf:
			c.errs = append(c.errs, field.Invalid(rf.Child("optionalOldSelf"), true, "may not be set if oldSelf is not used in rule"))
			ok = false
		}
		if rule.MessageExpression != "" {
			var msgOK bool
			compiled.message, _, msgOK = c.compileExpr(ruleEnv, sizes, costs, rule.MessageExpression, cel.StringType, rf.Child("messageExpression"), "messageExpression ", cardinality)
			ok = ok && msgOK
		}
		if rule.FieldPath != "" {
			steps, err := parseFieldPath(rule.FieldPath, s)
			if err != nil {
				c.errs = append(c.errs, field.Invalid(rf.Child("fieldPath"), rule.FieldPath, "fieldPath must be a valid path"))
				ok = false
			}
			compiled.fieldPath = steps
		}
		if ok {
			c.rules.byNode[key] = append(c.rules.byNode[key], compiled)
		}
	}
}

// compileExpr compiles one expression that must give want, estimates its cost and records the
// errors kube-apiserver gives (prefix "messageExpression " for a message expression's). usesOldSelf
// reports whether the expression reads oldSelf.
func (c *compiler) compileExpr(env *cel.Env, sizes *sizeEstimator, costs kcel.CallCosts, expr string, want *cel.Type, fld *field.Path, prefix string, cardinality *uint64) (prg cel.Program, usesOldSelf, ok bool) {
	ast, iss := env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		c.errs = append(c.errs, field.Invalid(fld, expr, prefix+"compilation failed: "+iss.String()))
		return nil, false, false
	}
	for _, ref := range ast.NativeRep().ReferenceMap() {
		if ref.Name == "oldSelf" {
			usesOldSelf = true
		}
	}
	if !ast.OutputType().IsExactType(want) {
		what := "cel expression must evaluate to a bool"
		if prefix != "" {
			what = "messageExpression must evaluate to a string"
		}
		c.errs = append(c.errs, field.Invalid(fld, expr, what))
		return nil, false, false
	}
	prg, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize), cel.CostLimit(c.perCallLimit), cel.CostTracking(costs),
		cel.CostTrackerOptions(interpreter.PresenceTestHasCost(false)), cel.InterruptCheckFrequency(100))
	if err != nil {
		c.errs = append(c.errs, field.Invalid(fld, expr, prefix+"program instantiation failed: "+err.Error()))
		return nil, false, false
	}
	est, err := env.EstimateCost(ast, sizes)
	if err != nil {
		c.errs = append(c.errs, field.InternalError(fld, fmt.Errorf("%scost estimation failed: %w", prefix, err)))
		return nil, false, false
	}
	cost := mulGuarded(est.Max, *cardinality)
	if cost > staticEstimatedCostLimit {
		name := "estimated rule cost"
		if prefix != "" {
			name = "estimated messageExpression cost"
		}
		c.errs = append(c.errs, field.Forbidden(fld, costErrorMessage(name, cost, staticEstimatedCostLimit)))
	}
	c.costs = append(c.costs, ruleCost{path: fld, cost: cost})
	c.total = addGuarded(c.total, cost)
	return prg, usesOldSelf, cost <= staticEstimatedCostLimit
}

func addGuarded(a, b uint64) uint64 {
	if math.MaxUint64-a < b {
		return math.MaxUint64
	}
	return a + b
}

// totalCostErrors name the schema's total as too costly, and the expressions that made most of
// it (at most four, each at least 1% of the limit), as kube-apiserver does.
func (c *compiler) totalCostErrors(fld *field.Path) field.ErrorList {
	sorted := append([]ruleCost{}, c.costs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].cost > sorted[j].cost })
	var errs field.ErrorList
	for i, rc := range sorted {
		if i == 4 || rc.cost < staticEstimatedCRDCostLimit/100 {
			break
		}
		errs = append(errs, field.Forbidden(rc.path, "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"))
	}
	return append(errs, field.Forbidden(fld, costErrorMessage("x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema", c.total, staticEstimatedCRDCostLimit)))
}

// costErrorMessage words a cost over its limit as kube-apiserver does.
func costErrorMessage(name string, cost, limit uint64) string {
	factor := float64(cost) / float64(limit)
	var by string
	switch {
	case factor > 100:
		by = "more than 100x"
	case factor < 1.5:
		by = fmt.Sprintf("%fx", factor)
	default:
		by = fmt.Sprintf("%.1fx", factor)
	}
	return fmt.Sprintf("%s exceeds budget by factor of %s (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)", name, by)
}

// ValidateRuleDefinitions checks the x-kubernetes-validations of a definition's schema as
// kube-apiserver does when the definition is written: each rule compiles against the schema's
// types to a boolean (its message expression to a string), costs at most the per-expression
// limit, has a valid fieldPath, and all of them together cost at most the per-definition limit.
func ValidateRuleDefinitions(s *crdv1.JSONSchemaProps, fld *field.Path) field.ErrorList {
	_, errs, err := compileCEL(s, fld)
	if err != nil {
		return field.ErrorList{field.InternalError(fld, err)}
	}
	return errs
}

// evaluation is one object's run of the rules: what is left of its cost budget.
type evaluation struct {
	rules     *celRules
	remaining int64
	// exhausted is set once the budget ran out or a rule went over its own limit: kube-apiserver
	// runs no further rule then.
	exhausted bool
}

// validate evaluates the rules of s (at schema place key) and below against v. old is the value
// at the same place in the stored object when hasOld (an update, and the place is correlatable:
// properties, map keys, the items of map lists by their keys); transition rules run only then,
// and the errors of other rules are ratcheted (dropped) where v is unchanged from old.
func (e *evaluation) validate(path *field.Path, key string, s *crdv1.JSONSchemaProps, v, old interface{}, hasOld bool) field.ErrorList {
	if s == nil || v == nil || e.exhausted {
		return nil
	}
	var errs field.ErrorList
	unchanged := hasOld && reflect.DeepEqual(v, old)
	for _, rule := range e.rules.byNode[key] {
		if e.exhausted {
			return errs
		}
		if rule.usesOldSelf && !hasOld && !rule.optionalOldSelf {
			continue
		}
		ruleErrs := e.evalRule(path, s, rule, v, old, hasOld)
		if unchanged && !rule.usesOldSelf && !e.exhausted {
			continue // ratcheted: the update did not touch what the rule refuses
		}
		errs = append(errs, ruleErrs...)
	}
	switch val := v.(type) {
	case map[string]interface{}:
		oldMap, _ := old.(map[string]interface{})
		keys := make([]string, 0, len(val))
		for k := range val {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ov, ok := oldMap[k]
			if p, declared := s.Properties[k]; declared {
				errs = append(errs, e.validate(path.Child(k), childKey(key, k), &p, val[k], ov, ok && hasOld)...)
			} else if s.AdditionalProperties != nil {
				errs = append(errs, e.validate(path.Key(k), key+valuesKey, s.AdditionalProperties.Schema, val[k], ov, ok && hasOld)...)
			}
		}
	case []interface{}:
		if s.Items != nil && s.Items.Schema != nil {
			for i, item := range val {
				ov, ok := correlatedItem(s, item, old)
				errs = append(errs, e.validate(path.Index(i), key+itemsKey, s.Items.Schema, item, ov, ok && hasOld)...)
			}
		}
	}
	return errs
}

// evalRule runs one rule and words its failure as kube-apiserver does.
func (e *evaluation) evalRule(path *field.Path, s *crdv1.JSONSchemaProps, rule compiledRule, v, old interface{}, hasOld bool) field.ErrorList {
	// The rule reads properties by their escaped names (escapeProperty).
	activation := map[string]interface{}{"self": escapedValue(v, s)}
	switch {
	case rule.optionalOldSelf && hasOld:
		activation["oldSelf"] = types.OptionalOf(types.DefaultTypeAdapter.NativeToValue(escapedValue(old, s)))
	case rule.optionalOldSelf:
		activation["oldSelf"] = types.OptionalNone
	case hasOld:
		activation["oldSelf"] = escapedValue(old, s)
	}
	out, details, err := rule.program.Eval(activation)
	if !e.charge(details) {
		return field.ErrorList{field.Invalid(path, schemaType(s), "validation failed due to running out of cost budget, no further validation rules will be run")}
	}
	if err != nil {
		switch {
		case strings.HasPrefix(err.Error(), "no such overload"):
			return field.ErrorList{field.Invalid(path, schemaType(s), fmt.Sprintf("'%v': call arguments did not match a supported operator, function or macro signature for rule: %v", err, ruleErrorString(rule.rule)))}
		case strings.HasPrefix(err.Error(), "operation cancelled: actual cost limit exceeded"):
			e.exhausted = true
			return field.ErrorList{field.Invalid(path, schemaType(s), fmt.Sprintf("'%v': no further validation rules will be run due to call cost exceeds limit for rule: %v", err, ruleErrorString(rule.rule)))}
		}
		return field.ErrorList{field.Invalid(path, schemaType(s), fmt.Sprintf("%v evaluating rule: %v", err, ruleErrorString(rule.rule)))}
	}
	if out == types.True {
		return nil
	}
	msg := ruleMessageOrDefault(rule.rule)
	if rule.message != nil {
		mout, mdetails, err := rule.message.Eval(activation)
		if !e.charge(mdetails) {
			return field.ErrorList{field.Invalid(path, schemaType(s), "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run")}
		}
		if str, isString := mout.(types.String); err == nil && isString && strings.TrimSpace(string(str)) != "" && !strings.ContainsAny(string(str), "\r\n") {
			msg = string(str)
		}
	}
	return field.ErrorList{ruleError(fieldPathOf(path, rule.fieldPath), schemaType(s), msg, rule.rule.Reason)}
}

// charge takes an evaluation's cost off the budget; false (and no further rules) once it is spent.
func (e *evaluation) charge(details *cel.EvalDetails) bool {
	if details == nil || details.ActualCost() == nil {
		return true
	}
	cost := *details.ActualCost()
	if cost > math.MaxInt64 || int64(cost) > e.remaining {
		e.exhausted = true
		return false
	}
	e.remaining -= int64(cost)
	return true
}

// ruleError is a failed rule's error, of the type its reason asks for.
func ruleError(path *field.Path, value interface{}, msg string, reason *string) *field.Error {
	if reason != nil {
		switch *reason {
		case "FieldValueForbidden":
			return field.Forbidden(path, msg)
		case "FieldValueRequired":
			return field.Required(path, msg)
		case "FieldValueDuplicate":
			return field.Duplicate(path, msg)
		}
	}
	return field.Invalid(path, value, msg)
}

func ruleMessageOrDefault(rule crdv1.ValidationRule) string {
	if rule.Message == "" {
		return "failed rule: " + ruleErrorString(rule)
	}
	return strings.TrimSpace(rule.Message)
}

func ruleErrorString(rule crdv1.ValidationRule) string {
	if rule.Message != "" {
		return strings.TrimSpace(rule.Message)
	}
	return strings.TrimSpace(rule.Rule)
}

// schemaType is what kube-apiserver shows as the "value" of a failed rule: the schema's type.
func schemaType(s *crdv1.JSONSchemaProps) string {
	if s.Type != "" {
		return s.Type
	}
	return "object"
}

// celValues is v as rules see it, converted as kube-apiserver converts it: an integer in a
// number field is a double (2 is 2.0, so arithmetic with doubles works on it), a string of format
// date or date-time a timestamp, duration a duration, byte the bytes it encodes (a string that
// does not parse stays a string: the rule then fails on it). v is not changed; parts without
// such a field are shared, not copied. changed reports whether anything was converted.
func celValues(s *crdv1.JSONSchemaProps, v interface{}) (out interface{}, changed bool) {
	if s == nil {
		return v, false
	}
	switch val := v.(type) {
	case int64:
		if s.Type == "number" {
			return float64(val), true
		}
	case string:
		if conv, ok := formatted(s.Format, val); ok {
			return conv, true
		}
	case map[string]interface{}:
		var copied map[string]interface{}
		for k, e := range val {
			var child *crdv1.JSONSchemaProps
			if p, ok := s.Properties[k]; ok {
				child = &p
			} else if s.AdditionalProperties != nil {
				child = s.AdditionalProperties.Schema
			}
			conv, ok := celValues(child, e)
			if !ok {
				continue
			}
			if copied == nil {
				copied = make(map[string]interface{}, len(val))
				for k2, e2 := range val {
					copied[k2] = e2
				}
			}
			copied[k] = conv
		}
		if copied != nil {
			return copied, true
		}
	case []interface{}:
		if s.Items == nil {
			return v, false
		}
		var copied []interface{}
		for i, e := range val {
			conv, ok := celValues(s.Items.Schema, e)
			if !ok {
				continue
			}
			if copied == nil {
				copied = append([]interface{}{}, val...)
			}
			copied[i] = conv
		}
		if copied != nil {
			return copied, true
		}
	}
	return v, false
}

// formatted parses a string of a format CEL has a type for.
func formatted(format, str string) (interface{}, bool) {
	switch format {
	case "date-time":
		if t, err := strfmt.ParseDateTime(str); err == nil {
			return types.Timestamp{Time: time.Time(t)}, true
		}
	case "date":
		if t, err := time.Parse(strfmt.RFC3339FullDate, str); err == nil {
			return types.Timestamp{Time: t}, true
		}
	case "duration":
		if d, err := strfmt.ParseDuration(str); err == nil {
			return types.Duration{Duration: d}, true
		}
	case "byte":
		var b strfmt.Base64
		if err := b.UnmarshalText([]byte(str)); err == nil {
			return types.Bytes(b), true
		}
	}
	return nil, false
}
