package schedulingexplain

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	explainv1 "github.com/skiff-sh/skiff/internal/apis/schedulingexplainv1alpha1"
	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/request"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spec   explainv1.PodSchedulingExplanationSpec
		fields []string
	}{
		{name: "pod only", spec: explainv1.PodSchedulingExplanationSpec{PodName: "web-0"}},
		{name: "pod and nodes", spec: explainv1.PodSchedulingExplanationSpec{PodName: "web-0", NodeNames: []string{"a", "b.example"}}},
		{name: "no pod", spec: explainv1.PodSchedulingExplanationSpec{}, fields: []string{"spec.podName"}},
		{name: "bad pod name", spec: explainv1.PodSchedulingExplanationSpec{PodName: "Web_0"}, fields: []string{"spec.podName"}},
		{name: "duplicate and bad node", spec: explainv1.PodSchedulingExplanationSpec{PodName: "p", NodeNames: []string{"a", "a", "B!"}},
			fields: []string{"spec.nodeNames[1]", "spec.nodeNames[2]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := Validate(&explainv1.PodSchedulingExplanation{Spec: tc.spec})
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
			}
			if strings.Join(got, ",") != strings.Join(tc.fields, ",") {
				t.Fatalf("fields %v, want %v (%v)", got, tc.fields, errs)
			}
		})
	}
}

// denyNodes allows everything but listing nodes.
type denyNodes struct{}

func (denyNodes) Authorize(_ context.Context, _ *request.UserInfo, info *request.RequestInfo) (bool, string) {
	return !(info.Resource == "nodes" && info.Verb == "list"), ""
}

// fixedExplainer answers one status.
type fixedExplainer struct{ calls int }

func (f *fixedExplainer) Explain(context.Context, string, string, []string) (explainv1.PodSchedulingExplanationStatus, error) {
	f.calls++
	return explainv1.PodSchedulingExplanationStatus{TotalNodes: 3}, nil
}

func TestExplainAuthorizesReadsFirst(t *testing.T) {
	ctx := request.WithUser(context.Background(), &request.UserInfo{Name: "jane"})
	req := func() *explainv1.PodSchedulingExplanation {
		return &explainv1.PodSchedulingExplanation{ObjectMeta: metav1.ObjectMeta{Namespace: "team"}, Spec: explainv1.PodSchedulingExplanationSpec{PodName: "p"}}
	}
	ex := &fixedExplainer{}
	_, err := explain(ctx, registry.ComputeEnv{Authorizer: denyNodes{}, SchedulingExplainer: ex}, req())
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `user "jane" cannot list nodes`) || ex.calls != 0 {
		t.Fatalf("denied nodes: %v (explainer called %d times)", err, ex.calls)
	}
	out, err := explain(ctx, registry.ComputeEnv{Authorizer: allowAll{}, SchedulingExplainer: ex}, req())
	if err != nil || out.(*explainv1.PodSchedulingExplanation).Status.TotalNodes != 3 {
		t.Fatalf("allowed: %+v, %v", out, err)
	}
	if _, err := explain(ctx, registry.ComputeEnv{Authorizer: allowAll{}}, req()); !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("no explainer: %v", err)
	}
	checks := ReadChecks("team", "p")
	if checks[0].Verb != "get" || checks[0].Resource != "pods" || checks[0].Namespace != "team" || checks[0].Name != "p" || checks[1].Verb != "list" || checks[1].Resource != "nodes" {
		t.Fatalf("checks %+v %+v", checks[0], checks[1])
	}
}

type allowAll struct{}

func (allowAll) Authorize(context.Context, *request.UserInfo, *request.RequestInfo) (bool, string) {
	return true, ""
}
