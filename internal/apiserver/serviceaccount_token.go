package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/internal/serviceaccount"
)

// ServiceAccountTokens issues (TokenRequest) and authenticates service account tokens.
type ServiceAccountTokens struct {
	Issuer   *serviceaccount.Issuer
	Verifier *serviceaccount.Verifier
	// Audiences are the API server's own; a TokenRequest without audiences gets them.
	Audiences []string
}

// Token lifetimes as Kubernetes bounds them.
const (
	defaultTokenExpiration = time.Hour
	minTokenExpiration     = 10 * time.Minute
	maxTokenExpiration     = (1 << 32) * time.Second
)

// serveServiceAccountToken answers serviceaccounts/token: a signed token for the account, bound to
// a pod, secret or node when asked.
func serveServiceAccountToken(h *resourceHandler, w http.ResponseWriter, r *http.Request, info *RequestInfo) {
	if info.Verb != "create" {
		h.s.writeError(w, r, apierrors.NewMethodNotSupported(schema.GroupResource{Resource: "serviceaccounts/token"}, info.Verb))
		return
	}
	tokens := h.s.cfg.ServiceAccountTokens
	if tokens == nil || tokens.Issuer == nil {
		h.s.writeError(w, r, apierrors.NewServiceUnavailable("service account token issuing is not configured"))
		return
	}
	body, err := readBody(r)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	tr := &authenticationv1.TokenRequest{}
	gvk := authenticationv1.SchemeGroupVersion.WithKind("TokenRequest")
	if _, _, err := h.s.codecs.UniversalDecoder(authenticationv1.SchemeGroupVersion).Decode(body, &gvk, tr); err != nil {
		h.s.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("TokenRequest in version \"v1\" cannot be handled as a TokenRequest: %v", err)))
		return
	}
	ctx := r.Context()
	saObj, err := h.s.Get(ctx, "", "serviceaccounts", info.Namespace, info.Name)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	sa := saObj.(*corev1.ServiceAccount)
	if err := h.admitSubresourceCreate(ctx, info, tr, gvk, false); err != nil {
		h.s.writeError(w, r, err)
		return
	}
	invalid := func(errs field.ErrorList) {
		h.s.writeError(w, r, apierrors.NewInvalid(schema.GroupKind{Group: "authentication.k8s.io", Kind: "TokenRequest"}, info.Name, errs))
	}
	if tr.Spec.ExpirationSeconds == nil {
		secs := int64(defaultTokenExpiration / time.Second)
		tr.Spec.ExpirationSeconds = &secs
	}
	expiration := time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
	expPath := field.NewPath("spec", "expirationSeconds")
	switch {
	case expiration < minTokenExpiration:
		invalid(field.ErrorList{field.Invalid(expPath, *tr.Spec.ExpirationSeconds, "may not specify a duration less than 10 minutes")})
		return
	case expiration > maxTokenExpiration:
		invalid(field.ErrorList{field.TooLong(expPath, *tr.Spec.ExpirationSeconds, 1<<32)})
		return
	}
	if len(tr.Spec.Audiences) == 0 {
		tr.Spec.Audiences = tokens.Audiences
	}
	req := serviceaccount.Request{
		Namespace: info.Namespace, ServiceAccount: serviceaccount.Ref{Name: sa.Name, UID: sa.UID},
		Audiences: tr.Spec.Audiences, Expiration: expiration,
	}
	if ref := tr.Spec.BoundObjectRef; ref != nil {
		bound, obj, err := h.s.boundObject(ctx, info.Namespace, ref)
		if err != nil {
			h.s.writeError(w, r, err)
			return
		}
		switch ref.Kind {
		case "Pod":
			req.BoundPod = bound
			node, err := h.s.podNode(ctx, obj.(*corev1.Pod))
			if err != nil {
				h.s.writeError(w, r, err)
				return
			}
			req.BoundNode = node
		case "Secret":
			req.BoundSecret = bound
		case "Node":
			req.BoundNode = bound
		}
	}
	token, exp, err := tokens.Issuer.Issue(req, h.s.clock.Now())
	if err != nil {
		h.s.writeError(w, r, apierrors.NewInternalError(err))
		return
	}
	tr.Name, tr.Namespace, tr.CreationTimestamp = sa.Name, sa.Namespace, metav1.NewTime(h.s.clock.Now())
	tr.Status = authenticationv1.TokenRequestStatus{Token: token, ExpirationTimestamp: metav1.NewTime(exp)}
	choice, err := negotiateOutput(acceptsHeader(r), h.s.codecs.SupportedMediaTypes(), false)
	if err != nil {
		h.s.writeError(w, r, notAcceptable(err))
		return
	}
	if err := h.s.writeEncoded(w, http.StatusCreated, choice, authenticationv1.SchemeGroupVersion, tr); err != nil {
		h.s.log.Debug("write token request", "err", err)
	}
}

// podNode is the node claim of a token bound to a pod: the node the pod is scheduled to, so
// that a TokenReview tells which node the token's pod runs on (as upstream's node-name and
// node-uid extras do). A node that is gone still gives its name, without a UID; an unscheduled
// pod gives no node.
func (s *Server) podNode(ctx context.Context, pod *corev1.Pod) (*serviceaccount.Ref, error) {
	name := pod.Spec.NodeName
	if name == "" {
		return nil, nil
	}
	obj, err := s.Get(ctx, "", "nodes", "", name)
	switch {
	case apierrors.IsNotFound(err):
		return &serviceaccount.Ref{Name: name}, nil
	case err != nil:
		return nil, fmt.Errorf("the node of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	return &serviceaccount.Ref{Name: name, UID: m.GetUID()}, nil
}

// boundObject checks that a token's bound object exists (and is the one the caller named), and
// returns it.
func (s *Server) boundObject(ctx context.Context, namespace string, ref *authenticationv1.BoundObjectReference) (*serviceaccount.Ref, runtime.Object, error) {
	path := field.NewPath("spec", "boundObjectRef")
	var resource, ns string
	switch ref.Kind {
	case "Pod":
		resource, ns = "pods", namespace
	case "Secret":
		resource, ns = "secrets", namespace
	case "Node":
		resource = "nodes"
	default:
		return nil, nil, apierrors.NewInvalid(schema.GroupKind{Group: "authentication.k8s.io", Kind: "TokenRequest"}, ref.Name,
			field.ErrorList{field.NotSupported(path.Child("kind"), ref.Kind, []string{"Pod", "Secret", "Node"})})
	}
	obj, err := s.Get(ctx, "", resource, ns, ref.Name)
	if err != nil {
		return nil, nil, err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil, err
	}
	if ref.UID != "" && ref.UID != m.GetUID() {
		return nil, nil, apierrors.NewConflict(schema.GroupResource{Resource: resource}, ref.Name,
			fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	return &serviceaccount.Ref{Name: m.GetName(), UID: m.GetUID()}, obj, nil
}

// serviceAccountAuthenticator recognises bearer service account tokens whose account (and bound
// object) still exist.
type serviceAccountAuthenticator struct{ s *Server }

func (a serviceAccountAuthenticator) AuthenticateRequest(r *http.Request) (*UserInfo, bool, error) {
	tokens := a.s.cfg.ServiceAccountTokens
	auth := r.Header.Get("Authorization")
	if tokens == nil || tokens.Verifier == nil || !strings.HasPrefix(auth, "Bearer ") {
		return nil, false, nil
	}
	v, err := tokens.Verifier.Verify(strings.TrimSpace(strings.TrimPrefix(auth, "Bearer ")), a.s.clock.Now())
	if errors.Is(err, serviceaccount.ErrNotServiceAccountToken) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	ctx := r.Context()
	if err := a.stillExists(ctx, "serviceaccounts", v.Namespace, v.ServiceAccount); err != nil {
		return nil, false, err
	}
	// The node of a pod-bound token only says where the pod ran; the token lives and dies with
	// the pod. Only a token bound to the node itself is checked against the node.
	node := v.Claim.Node
	if v.Claim.Pod != nil {
		node = nil
	}
	for _, bound := range []struct {
		resource, ns string
		ref          *serviceaccount.Ref
	}{{"pods", v.Namespace, v.Claim.Pod}, {"secrets", v.Namespace, v.Claim.Secret}, {"nodes", "", node}} {
		if bound.ref != nil {
			if err := a.stillExists(ctx, bound.resource, bound.ns, *bound.ref); err != nil {
				return nil, false, err
			}
		}
	}
	return &UserInfo{
		Name:   fmt.Sprintf("system:serviceaccount:%s:%s", v.Namespace, v.ServiceAccount.Name),
		UID:    string(v.ServiceAccount.UID),
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + v.Namespace, "system:authenticated"},
		Extra:  v.Extra(),
	}, true, nil
}

// stillExists rejects tokens of deleted (or deleted and recreated) objects, and of pods being deleted.
func (a serviceAccountAuthenticator) stillExists(ctx context.Context, resource, namespace string, ref serviceaccount.Ref) error {
	obj, err := a.s.Get(ctx, "", resource, namespace, ref.Name)
	if err != nil {
		return fmt.Errorf("service account token: %s %s/%s: %w", resource, namespace, ref.Name, err)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if m.GetUID() != ref.UID {
		return fmt.Errorf("service account token: %s %s/%s was recreated", resource, namespace, ref.Name)
	}
	if resource == "pods" && m.GetDeletionTimestamp() != nil {
		return fmt.Errorf("service account token: pod %s/%s is being deleted", namespace, ref.Name)
	}
	return nil
}
