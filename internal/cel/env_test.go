package cel

import (
	"strings"
	"testing"

	celgo "github.com/google/cel-go/cel"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestToValueKeepsIntegers(t *testing.T) {
	v, err := ToValue(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{TerminationGracePeriodSeconds: new(int64)}})
	if err != nil {
		t.Fatal(err)
	}
	spec := v.(map[string]any)["spec"].(map[string]any)
	if _, ok := spec["terminationGracePeriodSeconds"].(int64); !ok {
		t.Fatalf("integer became %T", spec["terminationGracePeriodSeconds"])
	}
	var nilPod *corev1.Pod
	if v, err := ToValue(nilPod); v != nil || err != nil {
		t.Fatalf("nil pod = %v, %v", v, err)
	}
}

func TestCostLimit(t *testing.T) {
	env, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	prg, err := Compile(env, "object.all(x, object.all(y, x + y >= 0))", celgo.BoolType)
	if err != nil {
		t.Fatal(err)
	}
	list := make([]any, 2000)
	for i := range list {
		list[i] = int64(i)
	}
	_, err = prg.EvalBool(map[string]any{VarObject: list}, nil)
	if err == nil || !strings.Contains(err.Error(), "cost limit exceeded") {
		t.Fatalf("err = %v, want the per-call cost limit", err)
	}
	// Within the per-call limit but over what is left of the budget.
	small, err := Compile(env, "object.all(x, x >= 0)", celgo.BoolType)
	if err != nil {
		t.Fatal(err)
	}
	budget := int64(10)
	if _, err := small.EvalBool(map[string]any{VarObject: list}, &budget); err != ErrCostBudget {
		t.Fatalf("err = %v, want ErrCostBudget", err)
	}
}

func TestCompileWantsType(t *testing.T) {
	env, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Compile(env, "'x'", celgo.BoolType); err == nil || !strings.Contains(err.Error(), "must evaluate to bool") {
		t.Fatalf("err = %v", err)
	}
	if _, err := Compile(env, "object.x", celgo.BoolType); err != nil {
		t.Fatalf("a dynamic expression is checked at run time: %v", err)
	}
}
