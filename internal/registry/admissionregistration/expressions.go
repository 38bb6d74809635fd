package admissionregistration

import (
	"fmt"

	celgo "github.com/google/cel-go/cel"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	admissioncel "github.com/skiff-sh/skiff/internal/cel"
)

// Compiler type-checks admission CEL expressions for validation; Kubernetes refuses a policy or
// webhook whose expressions do not compile, with the compiler's message.
type Compiler struct{ env *celgo.Env }

// NewCompiler builds the admission CEL environment once for the resources' strategies.
func NewCompiler() (*Compiler, error) {
	env, err := admissioncel.NewEnv()
	if err != nil {
		return nil, err
	}
	return &Compiler{env: env}, nil
}

func (c *Compiler) check(p *field.Path, expr string, want *celgo.Type) field.ErrorList {
	if c == nil || expr == "" {
		return nil
	}
	if _, err := admissioncel.Compile(c.env, expr, want); err != nil {
		return field.ErrorList{field.Invalid(p, expr, err.Error())}
	}
	return nil
}

// MatchConditions compiles match conditions (boolean expressions).
func (c *Compiler) MatchConditions(conds []admissionregistrationv1.MatchCondition, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, mc := range conds {
		errs = append(errs, c.check(p.Index(i).Child("expression"), mc.Expression, celgo.BoolType)...)
	}
	return errs
}

// Policy compiles a policy's match conditions, variables, validations, message expressions and
// audit annotations.
func (c *Compiler) Policy(pol *admissionregistrationv1.ValidatingAdmissionPolicy) field.ErrorList {
	p := field.NewPath("spec")
	errs := c.MatchConditions(pol.Spec.MatchConditions, p.Child("matchConditions"))
	for i, v := range pol.Spec.Variables {
		errs = append(errs, c.check(p.Child("variables").Index(i).Child("expression"), v.Expression, nil)...)
	}
	for i, v := range pol.Spec.Validations {
		vp := p.Child("validations").Index(i)
		errs = append(errs, c.check(vp.Child("expression"), v.Expression, celgo.BoolType)...)
		errs = append(errs, c.check(vp.Child("messageExpression"), v.MessageExpression, celgo.StringType)...)
	}
	for i, a := range pol.Spec.AuditAnnotations {
		errs = append(errs, c.check(p.Child("auditAnnotations").Index(i).Child("valueExpression"), a.ValueExpression, nil)...)
	}
	return errs
}

// mustCompiler is the compiler of Resources; the environment is built from fixed declarations, so
// failing to build it is a programming error caught by every test.
func mustCompiler() *Compiler {
	c, err := NewCompiler()
	if err != nil {
		panic(fmt.Sprintf("admission CEL environment: %v", err))
	}
	return c
}
