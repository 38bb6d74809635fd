package policy

import (
	"fmt"
	"net/http"
	"strings"

	celgo "github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	admissioncel "github.com/skiff-sh/skiff/internal/cel"
)

// Compiled is a policy with its expressions compiled once per generation.
type Compiled struct {
	Policy          *admissionregistrationv1.ValidatingAdmissionPolicy
	matchConditions []compiledExpr
	variables       []compiledExpr
	validations     []compiledValidation
	audit           []compiledExpr
}

type compiledExpr struct {
	name string
	prg  *admissioncel.Program
	err  error
}

type compiledValidation struct {
	v       admissionregistrationv1.Validation
	prg     *admissioncel.Program
	err     error
	message *admissioncel.Program
}

// Compile compiles a policy's match conditions, variables, validations and message expressions.
func Compile(env *celgo.Env, p *admissionregistrationv1.ValidatingAdmissionPolicy) *Compiled {
	c := &Compiled{Policy: p}
	for _, mc := range p.Spec.MatchConditions {
		prg, err := admissioncel.Compile(env, mc.Expression, celgo.BoolType)
		c.matchConditions = append(c.matchConditions, compiledExpr{name: mc.Name, prg: prg, err: err})
	}
	for _, v := range p.Spec.Variables {
		prg, err := admissioncel.Compile(env, v.Expression, nil)
		c.variables = append(c.variables, compiledExpr{name: v.Name, prg: prg, err: err})
	}
	for _, v := range p.Spec.Validations {
		prg, err := admissioncel.Compile(env, v.Expression, celgo.BoolType)
		cv := compiledValidation{v: v, prg: prg, err: err}
		if v.MessageExpression != "" {
			// A broken messageExpression falls back to the message, as in Kubernetes.
			cv.message, _ = admissioncel.Compile(env, v.MessageExpression, celgo.StringType)
		}
		c.validations = append(c.validations, cv)
	}
	for _, a := range p.Spec.AuditAnnotations {
		prg, err := admissioncel.Compile(env, a.ValueExpression, nil)
		c.audit = append(c.audit, compiledExpr{name: a.Key, prg: prg, err: err})
	}
	return c
}

// Decision is what one policy and binding decided about a request.
type Decision struct {
	// Matched is false when a match condition excluded the request.
	Matched bool
	// Failures are the failed validations (or evaluation errors under failurePolicy Fail).
	Failures []Failure
	// AuditAnnotations are the values of the policy's audit annotations, keyed
	// "<policy name>/<key>"; a null value leaves the key out, as in Kubernetes.
	AuditAnnotations map[string]string
}

// Failure is one failed validation.
type Failure struct {
	Message string
	Reason  metav1.StatusReason
}

// Decide evaluates a compiled policy on vars (object, oldObject, request, params,
// namespaceObject), with Kubernetes' semantics: match conditions first (false: not matched; an
// error: failurePolicy), then variables, then every validation within one cost budget.
func Decide(c *Compiled, vars map[string]any) Decision {
	failClosed := c.Policy.Spec.FailurePolicy == nil || *c.Policy.Spec.FailurePolicy == admissionregistrationv1.Fail
	budget := int64(admissioncel.RuntimeCostBudget)
	fail := func(msg string) Decision {
		if !failClosed {
			return Decision{Matched: true}
		}
		return Decision{Matched: true, Failures: []Failure{{Message: msg, Reason: metav1.StatusReasonInvalid}}}
	}
	var matchErr error
	for _, mc := range c.matchConditions {
		if mc.err != nil {
			matchErr = fmt.Errorf("matchCondition %q: %w", mc.name, mc.err)
			continue
		}
		ok, err := mc.prg.EvalBool(vars, &budget)
		if err != nil {
			matchErr = fmt.Errorf("failed to evaluate matchCondition %q: %w", mc.name, err)
			continue
		}
		if !ok {
			return Decision{}
		}
	}
	if matchErr != nil {
		return fail(matchErr.Error())
	}
	// Variables are evaluated in order, each seeing the earlier ones; one that fails is left out,
	// so only the expressions that use it fail.
	variables := map[string]any{}
	vars[admissioncel.VarVariables] = variables
	for _, v := range c.variables {
		if v.err != nil {
			continue
		}
		out, err := v.prg.Eval(vars, &budget)
		if err != nil {
			continue
		}
		variables[v.name] = out
	}
	d := Decision{Matched: true}
	for _, cv := range c.validations {
		if cv.err != nil {
			if failClosed {
				d.Failures = append(d.Failures, Failure{Message: cv.err.Error(), Reason: metav1.StatusReasonInvalid})
			}
			continue
		}
		ok, err := cv.prg.EvalBool(vars, &budget)
		if err != nil {
			if err == admissioncel.ErrCostBudget {
				return fail(err.Error())
			}
			if failClosed {
				d.Failures = append(d.Failures, Failure{Message: fmt.Sprintf("expression '%s' resulted in error: %v", cv.v.Expression, err), Reason: metav1.StatusReasonInvalid})
			}
			continue
		}
		if ok {
			continue
		}
		d.Failures = append(d.Failures, Failure{Message: message(cv, vars, &budget), Reason: reason(cv.v.Reason)})
	}
	for _, a := range c.audit {
		if a.err != nil {
			continue
		}
		out, err := a.prg.Eval(vars, &budget)
		if err != nil {
			if failClosed {
				d.Failures = append(d.Failures, Failure{Message: fmt.Sprintf("expression '%s' resulted in error: %v", a.prg.Expression, err), Reason: metav1.StatusReasonInvalid})
			}
			continue
		}
		if s, ok := out.(types.String); ok {
			if d.AuditAnnotations == nil {
				d.AuditAnnotations = map[string]string{}
			}
			d.AuditAnnotations[c.Policy.Name+"/"+a.name] = string(s)
		}
	}
	return d
}

// message is the failure's message: the messageExpression's result when it yields a non-empty
// single-line string, else the message, else "failed expression: <expression>".
func message(cv compiledValidation, vars map[string]any, budget *int64) string {
	if cv.message != nil {
		if out, err := cv.message.Eval(vars, budget); err == nil {
			if s, ok := out.(types.String); ok && strings.TrimSpace(string(s)) != "" && !strings.Contains(string(s), "\n") {
				return string(s)
			}
		}
	}
	if cv.v.Message != "" {
		return cv.v.Message
	}
	return "failed expression: " + strings.TrimSpace(cv.v.Expression)
}

func reason(r *metav1.StatusReason) metav1.StatusReason {
	if r == nil || *r == "" {
		return metav1.StatusReasonInvalid
	}
	return *r
}

// ReasonCode is the HTTP status of a denial's reason.
func ReasonCode(r metav1.StatusReason) int32 {
	switch r {
	case metav1.StatusReasonUnauthorized:
		return http.StatusUnauthorized
	case metav1.StatusReasonForbidden:
		return http.StatusForbidden
	case metav1.StatusReasonRequestEntityTooLarge:
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusUnprocessableEntity
}
