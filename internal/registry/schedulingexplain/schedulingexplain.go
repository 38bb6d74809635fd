package schedulingexplain

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	explainv1 "github.com/skiff-sh/skiff/internal/apis/schedulingexplainv1alpha1"
	"github.com/skiff-sh/skiff/internal/registry"
	vu "github.com/skiff-sh/skiff/internal/registry/validationutil"
	"github.com/skiff-sh/skiff/internal/request"
)

// AddToScheme registers the scheduling.skiff.sh/v1alpha1 types.
func AddToScheme(s *runtime.Scheme) error { return explainv1.AddToScheme(s) }

// Resources returns the PodSchedulingExplanation review.
func Resources() []*registry.Resource {
	return []*registry.Resource{{
		GroupVersion: explainv1.SchemeGroupVersion, Kind: explainv1.Kind, ListKind: explainv1.ListKind,
		Plural: explainv1.Resource, Singular: explainv1.Singular, Namespaced: true,
		New:      func() runtime.Object { return &explainv1.PodSchedulingExplanation{} },
		NewList:  func() runtime.Object { return &explainv1.PodSchedulingExplanationList{} },
		Strategy: &vu.Strategy[*explainv1.PodSchedulingExplanation]{Namespaced: true},
		Verbs:    []string{"create"}, Compute: explain,
	}}
}

// groupKind names the review in errors.
var groupKind = schema.GroupKind{Group: explainv1.GroupName, Kind: explainv1.Kind}

// Validate checks the spec: a pod name, and node names that could name nodes.
func Validate(e *explainv1.PodSchedulingExplanation) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if e.Spec.PodName == "" {
		errs = append(errs, field.Required(spec.Child("podName"), "the pod to explain"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(e.Spec.PodName) {
			errs = append(errs, field.Invalid(spec.Child("podName"), e.Spec.PodName, msg))
		}
	}
	seen := map[string]bool{}
	for i, n := range e.Spec.NodeNames {
		p := spec.Child("nodeNames").Index(i)
		if seen[n] {
			errs = append(errs, field.Duplicate(p, n))
			continue
		}
		seen[n] = true
		for _, msg := range validation.IsDNS1123Subdomain(n) {
			errs = append(errs, field.Invalid(p, n, msg))
		}
	}
	return errs
}

// ReadChecks are the reads an explanation reveals, each of which the requester must be allowed:
// the pod itself and the cluster's nodes.
func ReadChecks(namespace, pod string) []*request.RequestInfo {
	return []*request.RequestInfo{
		{IsResourceRequest: true, Verb: "get", APIVersion: "v1", Resource: "pods", Namespace: namespace, Name: pod},
		{IsResourceRequest: true, Verb: "list", APIVersion: "v1", Resource: "nodes"},
	}
}

// Forbidden is the 403 for the first check the user fails, naming what they may not do.
func Forbidden(user *request.UserInfo, denied *request.RequestInfo, name string) error {
	what := denied.Resource
	if denied.Namespace != "" {
		what = fmt.Sprintf("%s in the namespace %q", denied.Resource, denied.Namespace)
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: explainv1.GroupName, Resource: explainv1.Resource}, name,
		fmt.Errorf("user %q cannot %s %s, which explaining the pod reads", user.Name, denied.Verb, what))
}

func explain(ctx context.Context, env registry.ComputeEnv, obj runtime.Object) (runtime.Object, error) {
	e, ok := obj.(*explainv1.PodSchedulingExplanation)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected a %s, got %T", explainv1.Kind, obj))
	}
	if errs := Validate(e); len(errs) > 0 {
		return nil, apierrors.NewInvalid(groupKind, e.Spec.PodName, errs)
	}
	if e.Namespace == "" {
		return nil, apierrors.NewBadRequest("a PodSchedulingExplanation is namespaced: the request names no namespace")
	}
	user, ok := request.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	if env.Authorizer == nil {
		return nil, apierrors.NewServiceUnavailable("no authorizer is configured")
	}
	for _, check := range ReadChecks(e.Namespace, e.Spec.PodName) {
		if allowed, _ := env.Authorizer.Authorize(ctx, user, check); !allowed {
			return nil, Forbidden(user, check, e.Name)
		}
	}
	if env.SchedulingExplainer == nil {
		return nil, apierrors.NewServiceUnavailable("this API server runs no scheduling explainer")
	}
	status, err := env.SchedulingExplainer.Explain(ctx, e.Namespace, e.Spec.PodName, e.Spec.NodeNames)
	if err != nil {
		if _, isStatus := err.(apierrors.APIStatus); isStatus {
			return nil, err
		}
		return nil, apierrors.NewInternalError(fmt.Errorf("explain pod %s/%s: %w", e.Namespace, e.Spec.PodName, err))
	}
	e.Status = status
	return e, nil
}
