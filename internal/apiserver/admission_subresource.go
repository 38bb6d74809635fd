package apiserver

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/internal/request"
)

// admitSubresourceCreate runs the admission chain (mutating, then validating) on a create of a
// subresource whose body is not the parent object, as Kubernetes does for pods/eviction and
// serviceaccounts/token: the attributes name the parent resource, the subresource and the
// parent's name, and the object is the request's body (an Eviction, a TokenRequest). Plugins that
// judge only the parent object skip such requests by their subresource; NodeRestriction judges them.
// The object is given its apiVersion and kind (gvk), and the attributes name that kind, so
// webhooks and policies see what it is (an AdmissionReview's kind is policy/v1 Eviction, not Pod).
func (h *resourceHandler) admitSubresourceCreate(ctx context.Context, info *RequestInfo, obj runtime.Object, gvk schema.GroupVersionKind, dryRun bool) error {
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	user, _ := request.UserFrom(ctx)
	attrs := &AdmissionAttributes{
		Verb: "create", Resource: h.res, Subresource: info.Subresource, Namespace: info.Namespace, Name: info.Name,
		Kind: gvk, Object: obj, User: user, DryRun: dryRun, Options: &metav1.CreateOptions{DryRun: dryRunList(dryRun)},
	}
	if err := h.s.admit(ctx, attrs); err != nil {
		return err
	}
	return h.s.validateAdmission(ctx, attrs)
}
