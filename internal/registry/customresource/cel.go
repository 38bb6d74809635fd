package customresource

import (
	"fmt"
	"sort"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
	"k8s.io/apimachinery/pkg/util/validation/field"

	crdv1 "github.com/skiff-sh/skiff/internal/apis/apiextensionsv1"
)

// celRules holds the compiled x-kubernetes-validations of a schema, by rule text (the same text
// compiles to the same program wherever it appears).
type celRules struct {
	programs map[string]cel.Program
	// errors are the rules that do not compile, with the compiler's message.
	errors map[string]string
}

func newCELEnv() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("self", cel.DynType),
		cel.Variable("oldSelf", cel.DynType),
		ext.Strings(),
		cel.HomogeneousAggregateLiterals(),
		cel.DefaultUTCTimeZone(true),
	)
}

// compileCEL compiles every rule and message expression of s. It fails only when the environment
// cannot be built; a rule that does not compile is recorded in errors.
func compileCEL(s *crdv1.JSONSchemaProps) (*celRules, error) {
	env, err := newCELEnv()
	if err != nil {
		return nil, fmt.Errorf("cel environment: %w", err)
	}
	rules := &celRules{programs: map[string]cel.Program{}, errors: map[string]string{}}
	var walk func(s *crdv1.JSONSchemaProps)
	walk = func(s *crdv1.JSONSchemaProps) {
		if s == nil {
			return
		}
		for _, r := range s.XValidations {
			for _, expr := range []string{r.Rule, r.MessageExpression} {
				if expr == "" {
					continue
				}
				if _, done := rules.programs[expr]; done {
					continue
				}
				ast, iss := env.Compile(expr)
				if iss != nil && iss.Err() != nil {
					rules.errors[expr] = iss.Err().Error()
					continue
				}
				prg, err := env.Program(ast, cel.CostLimit(1000000))
				if err != nil {
					rules.errors[expr] = err.Error()
					continue
				}
				rules.programs[expr] = prg
			}
		}
		for _, p := range s.Properties {
			walk(&p)
		}
		if s.Items != nil {
			walk(s.Items.Schema)
		}
		if s.AdditionalProperties != nil {
			walk(s.AdditionalProperties.Schema)
		}
	}
	walk(s)
	return rules, nil
}

func isTransitionRule(rule string) bool { return strings.Contains(rule, "oldSelf") }

// validate evaluates the rules of s and below against v (old is the stored value at the same place,
// for transition rules, when there is one), as kube-apiserver evaluates x-kubernetes-validations.
func (r *celRules) validate(path *field.Path, s *crdv1.JSONSchemaProps, v, old interface{}, hasOld bool) field.ErrorList {
	if s == nil || v == nil {
		return nil
	}
	var errs field.ErrorList
	for _, rule := range s.XValidations {
		if isTransitionRule(rule.Rule) && !hasOld {
			continue
		}
		prg, ok := r.programs[rule.Rule]
		if !ok {
			continue // refused when the definition was written
		}
		activation := map[string]interface{}{"self": v}
		if hasOld {
			activation["oldSelf"] = old
		}
		out, _, err := prg.Eval(activation)
		if err != nil {
			errs = append(errs, field.Invalid(path, schemaType(s), fmt.Sprintf("%s: %v", rule.Rule, err)))
			continue
		}
		if b, isBool := out.Value().(bool); isBool && b {
			continue
		}
		msg := rule.Message
		if msg == "" {
			msg = "failed rule: " + rule.Rule
		}
		if rule.MessageExpression != "" {
			if mp, ok := r.programs[rule.MessageExpression]; ok {
				if mout, _, err := mp.Eval(activation); err == nil {
					if s, isString := mout.Value().(string); isString && strings.TrimSpace(s) != "" && !strings.Contains(s, "\n") {
						msg = s
					}
				}
			}
		}
		errPath := path
		if rule.FieldPath != "" {
			for _, f := range strings.Split(strings.TrimPrefix(rule.FieldPath, "."), ".") {
				errPath = errPath.Child(f)
			}
		}
		reason := ""
		if rule.Reason != nil {
			reason = *rule.Reason
		}
		switch reason {
		case "FieldValueForbidden":
			errs = append(errs, field.Forbidden(errPath, msg))
		case "FieldValueRequired":
			errs = append(errs, field.Required(errPath, msg))
		case "FieldValueDuplicate":
			errs = append(errs, field.Duplicate(errPath, msg))
		default:
			errs = append(errs, field.Invalid(errPath, schemaType(s), msg))
		}
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
			var ps *crdv1.JSONSchemaProps
			if p, ok := s.Properties[k]; ok {
				ps = &p
			} else if s.AdditionalProperties != nil {
				ps = s.AdditionalProperties.Schema
			}
			if ps == nil {
				continue
			}
			ov, ok := oldMap[k]
			errs = append(errs, r.validate(path.Child(k), ps, val[k], ov, ok && hasOld)...)
		}
	case []interface{}:
		if s.Items != nil && s.Items.Schema != nil {
			for i, item := range val {
				errs = append(errs, r.validate(path.Index(i), s.Items.Schema, item, nil, false)...)
			}
		}
	}
	return errs
}

// schemaType is what kube-apiserver shows as the "value" of a failed rule: the schema's type.
func schemaType(s *crdv1.JSONSchemaProps) string {
	if s.Type != "" {
		return s.Type
	}
	return "object"
}

// CompileRule reports why a rule (or message expression) does not compile, "" when it does.
func CompileRule(expr string) string {
	env, err := newCELEnv()
	if err != nil {
		return err.Error()
	}
	if _, iss := env.Compile(expr); iss != nil && iss.Err() != nil {
		return iss.Err().Error()
	}
	return ""
}
