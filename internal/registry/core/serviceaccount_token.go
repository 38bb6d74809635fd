package core

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/serviceaccount"
)

// Token lifetimes as Kubernetes bounds them.
const (
	defaultTokenExpiration = time.Hour
	minTokenExpiration     = 10 * time.Minute
	maxTokenExpirationSecs = 1 << 32
)

// serviceAccountTokenAction serves serviceaccounts/token: a signed token for the account, bound to
// a pod, secret or node when asked, as Kubernetes' TokenREST does.
func serviceAccountTokenAction() *registry.Action {
	return typedAction(authenticationv1.SchemeGroupVersion.WithKind("TokenRequest"), createServiceAccountToken)
}

// createServiceAccountToken admits the TokenRequest once the account is known to exist, defaults
// and validates it, checks its bound object and signs the token.
func createServiceAccountToken(ctx context.Context, env registry.ActionEnv, req registry.ActionRequest, tr *authenticationv1.TokenRequest) (runtime.Object, error) {
	if env.Tokens == nil || env.Tokens.Issuer == nil {
		return nil, apierrors.NewServiceUnavailable("service account token issuing is not configured")
	}
	_, sa, err := getParent[*corev1.ServiceAccount](ctx, env, schema.GroupResource{Resource: "serviceaccounts"}, req, true)
	if err != nil {
		return nil, err
	}
	if err := req.AdmitBody(ctx, tr, false); err != nil {
		return nil, err
	}
	defaultTokenRequest(tr, env.Tokens.Audiences)
	if errs := ValidateTokenRequest(tr); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: authenticationv1.GroupName, Kind: "TokenRequest"}, req.Name, errs)
	}
	issue := serviceaccount.Request{
		Namespace: req.Namespace, ServiceAccount: serviceaccount.Ref{Name: sa.Name, UID: sa.UID},
		Audiences: tr.Spec.Audiences, Expiration: time.Duration(*tr.Spec.ExpirationSeconds) * time.Second,
	}
	if ref := tr.Spec.BoundObjectRef; ref != nil {
		if err := bindToken(ctx, env, req.Namespace, ref, &issue); err != nil {
			return nil, err
		}
	}
	now := env.Clock.Now()
	token, exp, err := env.Tokens.Issuer.Issue(issue, now)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("sign a token for %s/%s: %w", req.Namespace, sa.Name, err))
	}
	tr.Name, tr.Namespace, tr.CreationTimestamp = sa.Name, sa.Namespace, metav1.NewTime(now)
	tr.Status = authenticationv1.TokenRequestStatus{Token: token, ExpirationTimestamp: metav1.NewTime(exp)}
	return tr, nil
}

// defaultTokenRequest gives a TokenRequest Kubernetes' defaults: an hour, and the API server's own
// audiences when it names none.
func defaultTokenRequest(tr *authenticationv1.TokenRequest, audiences []string) {
	if tr.Spec.ExpirationSeconds == nil {
		secs := int64(defaultTokenExpiration / time.Second)
		tr.Spec.ExpirationSeconds = &secs
	}
	if len(tr.Spec.Audiences) == 0 {
		tr.Spec.Audiences = audiences
	}
}

// ValidateTokenRequest checks a defaulted TokenRequest: a lifetime between ten minutes and 2^32
// seconds, and a bound object of a kind a token may be bound to.
func ValidateTokenRequest(tr *authenticationv1.TokenRequest) field.ErrorList {
	var errs field.ErrorList
	specPath := field.NewPath("spec")
	if secs := tr.Spec.ExpirationSeconds; secs != nil {
		expPath := specPath.Child("expirationSeconds")
		switch {
		case time.Duration(*secs)*time.Second < minTokenExpiration:
			errs = append(errs, field.Invalid(expPath, *secs, "may not specify a duration less than 10 minutes"))
		case *secs > maxTokenExpirationSecs:
			errs = append(errs, field.TooLong(expPath, *secs, maxTokenExpirationSecs))
		}
	}
	if ref := tr.Spec.BoundObjectRef; ref != nil {
		if _, _, ok := boundResource(ref.Kind); !ok {
			errs = append(errs, field.NotSupported(specPath.Child("boundObjectRef", "kind"), ref.Kind, []string{"Pod", "Secret", "Node"}))
		}
	}
	return errs
}

// boundResource is the resource of the kinds a token may be bound to, and whether it is
// namespaced; ok is false for any other kind.
func boundResource(kind string) (resource string, namespaced, ok bool) {
	switch kind {
	case "Pod":
		return "pods", true, true
	case "Secret":
		return "secrets", true, true
	case "Node":
		return "nodes", false, true
	}
	return "", false, false
}

// bindToken binds the token to the object ref names, which must exist (and be the one the caller
// named by uid); a pod-bound token also names the pod's node.
func bindToken(ctx context.Context, env registry.ActionEnv, namespace string, ref *authenticationv1.BoundObjectReference, issue *serviceaccount.Request) error {
	resource, namespaced, _ := boundResource(ref.Kind)
	gr := schema.GroupResource{Resource: resource}
	st, err := storeOf(env, gr)
	if err != nil {
		return err
	}
	ns := ""
	if namespaced {
		ns = namespace
	}
	obj, err := st.Get(ctx, ns, ref.Name, true)
	if err != nil {
		return err
	}
	m, err := apimeta.Accessor(obj)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if ref.UID != "" && ref.UID != m.GetUID() {
		return apierrors.NewConflict(gr, ref.Name,
			fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	self := &serviceaccount.Ref{Name: m.GetName(), UID: m.GetUID()}
	switch ref.Kind {
	case "Pod":
		issue.BoundPod = self
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return apierrors.NewInternalError(fmt.Errorf("pods store returned %T", obj))
		}
		issue.BoundNode, err = podNode(ctx, env, pod)
		return err
	case "Secret":
		issue.BoundSecret = self
	case "Node":
		issue.BoundNode = self
	}
	return nil
}

// podNode is the node claim of a token bound to a pod: the node the pod is scheduled to, so that
// a TokenReview tells which node the token's pod runs on (as Kubernetes' node-name and node-uid
// extras do). A node that is gone still gives its name, without a UID; an unscheduled pod gives
// no node.
func podNode(ctx context.Context, env registry.ActionEnv, pod *corev1.Pod) (*serviceaccount.Ref, error) {
	name := pod.Spec.NodeName
	if name == "" {
		return nil, nil
	}
	nodes, err := storeOf(env, schema.GroupResource{Resource: "nodes"})
	if err != nil {
		return nil, err
	}
	obj, err := nodes.Get(ctx, "", name, true)
	switch {
	case apierrors.IsNotFound(err):
		return &serviceaccount.Ref{Name: name}, nil
	case err != nil:
		return nil, err
	}
	m, err := apimeta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return &serviceaccount.Ref{Name: name, UID: m.GetUID()}, nil
}
