package authorization

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/internal/registry"
	vu "github.com/skiff-sh/skiff/internal/registry/validationutil"
	"github.com/skiff-sh/skiff/internal/request"
)

// Resources returns the authorization.k8s.io/v1 review resources.
func Resources() []*registry.Resource {
	gv := authorizationv1.SchemeGroupVersion
	create := []string{"create"}
	return []*registry.Resource{
		{
			GroupVersion: gv, Kind: "SubjectAccessReview", ListKind: "SubjectAccessReviewList", Plural: "subjectaccessreviews", Singular: "subjectaccessreview",
			New:      func() runtime.Object { return &authorizationv1.SubjectAccessReview{} },
			NewList:  func() runtime.Object { return &authorizationv1.SubjectAccessReview{} },
			Strategy: &vu.Strategy[*authorizationv1.SubjectAccessReview]{}, Verbs: create, Compute: subjectAccessReview,
		},
		{
			GroupVersion: gv, Kind: "SelfSubjectAccessReview", ListKind: "SelfSubjectAccessReviewList", Plural: "selfsubjectaccessreviews", Singular: "selfsubjectaccessreview",
			New:      func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} },
			NewList:  func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} },
			Strategy: &vu.Strategy[*authorizationv1.SelfSubjectAccessReview]{}, Verbs: create, Compute: selfSubjectAccessReview,
		},
		{
			GroupVersion: gv, Kind: "LocalSubjectAccessReview", ListKind: "LocalSubjectAccessReviewList", Plural: "localsubjectaccessreviews", Singular: "localsubjectaccessreview",
			Namespaced: true,
			New:        func() runtime.Object { return &authorizationv1.LocalSubjectAccessReview{} },
			NewList:    func() runtime.Object { return &authorizationv1.LocalSubjectAccessReview{} },
			Strategy:   &vu.Strategy[*authorizationv1.LocalSubjectAccessReview]{Namespaced: true}, Verbs: create, Compute: localSubjectAccessReview,
		},
		{
			GroupVersion: gv, Kind: "SelfSubjectRulesReview", ListKind: "SelfSubjectRulesReviewList", Plural: "selfsubjectrulesreviews", Singular: "selfsubjectrulesreview",
			New:      func() runtime.Object { return &authorizationv1.SelfSubjectRulesReview{} },
			NewList:  func() runtime.Object { return &authorizationv1.SelfSubjectRulesReview{} },
			Strategy: &vu.Strategy[*authorizationv1.SelfSubjectRulesReview]{}, Verbs: create, Compute: selfSubjectRulesReview,
		},
	}
}

// Attributes turns a review's spec into the attributes the authorizer decides on; exactly one of
// resourceAttributes and nonResourceAttributes must be given, as Kubernetes validates.
func Attributes(res *authorizationv1.ResourceAttributes, nonRes *authorizationv1.NonResourceAttributes) (*request.RequestInfo, error) {
	switch {
	case res != nil && nonRes != nil:
		return nil, apierrors.NewBadRequest("spec.nonResourceAttributes: Invalid value: cannot be specified in combination with resourceAttributes")
	case res != nil:
		return &request.RequestInfo{
			IsResourceRequest: true, Verb: res.Verb, APIGroup: res.Group, APIVersion: res.Version,
			Namespace: res.Namespace, Resource: res.Resource, Subresource: res.Subresource, Name: res.Name,
		}, nil
	case nonRes != nil:
		return &request.RequestInfo{Verb: nonRes.Verb, Path: nonRes.Path}, nil
	}
	return nil, apierrors.NewBadRequest("spec.resourceAttributes: Required value: exactly one of nonResourceAttributes or resourceAttributes must be specified")
}

func userFromSpec(spec *authorizationv1.SubjectAccessReviewSpec) *request.UserInfo {
	u := &request.UserInfo{Name: spec.User, UID: spec.UID, Groups: spec.Groups}
	if len(spec.Extra) > 0 {
		u.Extra = map[string][]string{}
		for k, v := range spec.Extra {
			u.Extra[k] = v
		}
	}
	return u
}

func decide(ctx context.Context, env registry.ComputeEnv, user *request.UserInfo, spec *authorizationv1.SubjectAccessReviewSpec) (authorizationv1.SubjectAccessReviewStatus, error) {
	info, err := Attributes(spec.ResourceAttributes, spec.NonResourceAttributes)
	if err != nil {
		return authorizationv1.SubjectAccessReviewStatus{}, err
	}
	if env.Authorizer == nil {
		return authorizationv1.SubjectAccessReviewStatus{}, apierrors.NewServiceUnavailable("no authorizer is configured")
	}
	allowed, reason := env.Authorizer.Authorize(ctx, user, info)
	return authorizationv1.SubjectAccessReviewStatus{Allowed: allowed, Reason: reason}, nil
}

func subjectAccessReview(ctx context.Context, env registry.ComputeEnv, obj runtime.Object) (runtime.Object, error) {
	sar := obj.(*authorizationv1.SubjectAccessReview)
	if sar.Spec.User == "" && len(sar.Spec.Groups) == 0 {
		return nil, apierrors.NewBadRequest("spec.user: Invalid value: \"\": at least one of user or group must be specified")
	}
	status, err := decide(ctx, env, userFromSpec(&sar.Spec), &sar.Spec)
	if err != nil {
		return nil, err
	}
	sar.Status = status
	return sar, nil
}

func localSubjectAccessReview(ctx context.Context, env registry.ComputeEnv, obj runtime.Object) (runtime.Object, error) {
	sar := obj.(*authorizationv1.LocalSubjectAccessReview)
	if sar.Spec.User == "" && len(sar.Spec.Groups) == 0 {
		return nil, apierrors.NewBadRequest("spec.user: Invalid value: \"\": at least one of user or group must be specified")
	}
	if sar.Spec.ResourceAttributes != nil {
		switch sar.Spec.ResourceAttributes.Namespace {
		case "":
			sar.Spec.ResourceAttributes.Namespace = sar.Namespace
		case sar.Namespace:
		default:
			return nil, apierrors.NewBadRequest(fmt.Sprintf("spec.resourceAttributes.namespace must match namespace: %v", sar.Namespace))
		}
	} else {
		return nil, apierrors.NewBadRequest("spec.resourceAttributes: Required value: disallowed on this kind of request")
	}
	status, err := decide(ctx, env, userFromSpec(&sar.Spec), &sar.Spec)
	if err != nil {
		return nil, err
	}
	sar.Status = status
	return sar, nil
}

func selfSubjectAccessReview(ctx context.Context, env registry.ComputeEnv, obj runtime.Object) (runtime.Object, error) {
	sar := obj.(*authorizationv1.SelfSubjectAccessReview)
	user, ok := request.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	spec := &authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: sar.Spec.ResourceAttributes, NonResourceAttributes: sar.Spec.NonResourceAttributes}
	status, err := decide(ctx, env, user, spec)
	if err != nil {
		return nil, err
	}
	sar.Status = status
	return sar, nil
}

func selfSubjectRulesReview(ctx context.Context, env registry.ComputeEnv, obj runtime.Object) (runtime.Object, error) {
	rr := obj.(*authorizationv1.SelfSubjectRulesReview)
	user, ok := request.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	if rr.Spec.Namespace == "" {
		// kubectl auth can-i --list always names one; Kubernetes requires it.
		return nil, apierrors.NewBadRequest("no namespace on request")
	}
	if env.Rules == nil {
		rr.Status = authorizationv1.SubjectRulesReviewStatus{Incomplete: true, EvaluationError: "no rule resolver is configured"}
		return rr, nil
	}
	rules, errs := env.Rules.RulesFor(user, rr.Spec.Namespace)
	rr.Status = RulesReviewStatus(rules, errs)
	return rr, nil
}

// RulesReviewStatus turns rules into a SelfSubjectRulesReview's status. The review is always
// marked incomplete when resolution failed, as Kubernetes does.
func RulesReviewStatus(rules []rbacv1.PolicyRule, errs []error) authorizationv1.SubjectRulesReviewStatus {
	var status authorizationv1.SubjectRulesReviewStatus
	for _, r := range rules {
		if len(r.NonResourceURLs) > 0 {
			status.NonResourceRules = append(status.NonResourceRules, authorizationv1.NonResourceRule{Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs})
			continue
		}
		status.ResourceRules = append(status.ResourceRules, authorizationv1.ResourceRule{
			Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames,
		})
	}
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		status.Incomplete = true
		status.EvaluationError = strings.Join(msgs, ", ")
	}
	return status
}
