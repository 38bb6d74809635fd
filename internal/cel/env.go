package cel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
	"k8s.io/apimachinery/pkg/runtime"
)

// Kubernetes' cost limits: one expression may cost at most PerCallLimit, one policy evaluation at
// most RuntimeCostBudget in total.
const (
	PerCallLimit      = 1000000
	RuntimeCostBudget = 10000000
)

// ErrCostBudget is returned when an evaluation runs out of its cost budget.
var ErrCostBudget = errors.New("validation failed due to running out of cost budget, no further validation rules will be run")

// Variable names Kubernetes gives admission expressions.
const (
	VarObject          = "object"
	VarOldObject       = "oldObject"
	VarRequest         = "request"
	VarParams          = "params"
	VarNamespaceObject = "namespaceObject"
	VarAuthorizer      = "authorizer"
	VarVariables       = "variables"
)

// NewEnv is the admission CEL environment. Objects are dynamically typed (maps from their JSON),
// which type-checks every field access at run time; ValidatingAdmissionPolicy's type checking
// compiles the same expressions again with object, oldObject and params typed by their schemas
// (NewEnvWithoutObjects).
func NewEnv() (*cel.Env, error) {
	base, err := NewEnvWithoutObjects()
	if err != nil {
		return nil, err
	}
	env, err := base.Extend(cel.Variable(VarObject, cel.DynType), cel.Variable(VarOldObject, cel.DynType), cel.Variable(VarParams, cel.DynType))
	if err != nil {
		return nil, fmt.Errorf("admission CEL environment: %w", err)
	}
	return env, nil
}

// NewEnvWithoutObjects is the admission CEL environment less object, oldObject and params, for a
// caller that declares them with types of its own.
func NewEnvWithoutObjects() (*cel.Env, error) {
	env, err := cel.NewEnv(append([]cel.EnvOption{
		cel.Variable(VarRequest, cel.DynType),
		cel.Variable(VarNamespaceObject, cel.DynType),
		// authorizer and authorizer.requestResource: Kubernetes' authorizer library (authz.go).
		kubernetesAuthz(),
		cel.Variable(VarVariables, cel.MapType(cel.StringType, cel.DynType)),
		cel.EagerlyValidateDeclarations(true),
	}, Libraries()...)...)
	if err != nil {
		return nil, fmt.Errorf("admission CEL environment: %w", err)
	}
	return env, nil
}

// Libraries are the options every Kubernetes CEL environment shares, admission's and
// CustomResourceDefinitions' x-kubernetes-validations alike: the language options Kubernetes sets
// and its libraries (strings, sets, ip/cidr, lists, regex, quantity, url).
func Libraries() []cel.EnvOption {
	return []cel.EnvOption{
		cel.HomogeneousAggregateLiterals(),
		cel.DefaultUTCTimeZone(true),
		// Kubernetes keeps has() free, as it was before cel-go v0.17.7: estimated costs (which
		// decide whether a CRD's rule is accepted) must not move under its users.
		cel.CostEstimatorOptions(checker.PresenceTestHasCost(false)),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(ext.StringsVersion(2)),
		ext.Sets(),
		ext.Network(),
		ext.TwoVarComprehensions(),
		kubernetesLists(),
		kubernetesRegex(),
		kubernetesQuantity(),
		kubernetesURL(),
	}
}

// Program is one compiled expression.
type Program struct {
	Expression string
	prg        cel.Program
}

// Compile type-checks expr and plans it with the per-call cost limit. wantBool asks for a boolean
// result (validations, match conditions), wantString for a string (messageExpression).
func Compile(env *cel.Env, expr string, want *cel.Type) (*Program, error) {
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("compilation failed: %w", iss.Err())
	}
	if want != nil && ast.OutputType() != cel.DynType && !ast.OutputType().IsExactType(want) {
		return nil, fmt.Errorf("must evaluate to %s but got %s", want, ast.OutputType())
	}
	// The Kubernetes libraries' calls cost what they cost in Kubernetes (CallCosts), an authorizer
	// check 350,000.
	prg, err := env.Program(ast, cel.CostLimit(PerCallLimit), cel.EvalOptions(cel.OptTrackCost), cel.CostTracking(CallCosts{}), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, fmt.Errorf("program construction failed: %w", err)
	}
	return &Program{Expression: expr, prg: prg}, nil
}

// Eval runs the program; the cost it used is taken off budget (nil: no overall budget).
func (p *Program) Eval(vars map[string]any, budget *int64) (ref.Val, error) {
	out, details, err := p.prg.Eval(vars)
	if details != nil && details.ActualCost() != nil && budget != nil {
		*budget -= int64(*details.ActualCost())
		if *budget < 0 {
			return nil, ErrCostBudget
		}
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// EvalBool runs a boolean program.
func (p *Program) EvalBool(vars map[string]any, budget *int64) (bool, error) {
	out, err := p.Eval(vars, budget)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("expression '%s' resulted in non-boolean value", p.Expression)
	}
	return bool(b), nil
}

// ToValue turns an API object (typed or unstructured) into the CEL value Kubernetes gives
// expressions: its JSON as maps and lists, with integers kept as integers. nil is CEL null.
func ToValue(obj any) (any, error) {
	if obj == nil {
		return nil, nil
	}
	if o, ok := obj.(runtime.Object); ok && isNilObject(o) {
		return nil, nil
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode object for CEL: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode object for CEL: %w", err)
	}
	return numbers(v), nil
}

// isNilObject catches a typed nil (a *Pod that is nil), which json would encode as null anyway
// but which must not reach the accessor calls callers make.
func isNilObject(o runtime.Object) bool {
	v := reflect.ValueOf(o)
	return !v.IsValid() || (v.Kind() == reflect.Pointer && v.IsNil())
}

// numbers replaces json.Number with int64 where the number is integral, else float64.
func numbers(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = numbers(e)
		}
	case []any:
		for i, e := range t {
			t[i] = numbers(e)
		}
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	}
	return v
}
