package apiserver

import (
	"context"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/storage"
)

// serveAction routes a POST to an action subresource (registry.Resource.Actions: pods/binding,
// pods/eviction, serviceaccounts/token) to the registry: it decodes the body in the action's kind,
// lends the action the stores, the clock and admission, and writes its answer with 201.
func (h *resourceHandler) serveAction(w http.ResponseWriter, r *http.Request, info *RequestInfo, action *registry.Action) {
	if info.Verb != "create" {
		h.s.writeError(w, r, apierrors.NewMethodNotSupported(schema.GroupResource{Group: h.res.GroupVersion.Group, Resource: h.res.Plural + "/" + info.Subresource}, info.Verb))
		return
	}
	opts, obj, ok := h.readAction(w, r, action)
	if !ok {
		return
	}
	h.runAction(w, r, info, action, obj, opts.dryRun)
}

// runAction carries out a decoded action request on the object info names.
func (h *resourceHandler) runAction(w http.ResponseWriter, r *http.Request, info *RequestInfo, action *registry.Action, body runtime.Object, dryRun bool) {
	req := registry.ActionRequest{
		Namespace: info.Namespace, Name: info.Name, Body: body, DryRun: dryRun,
		Admit: func(ctx context.Context, obj runtime.Object, dryRun bool) error {
			return h.admitSubresourceCreate(ctx, info, obj, action.Kind, dryRun)
		},
	}
	out, err := action.Create(r.Context(), h.actionEnv(), req)
	if err != nil {
		if _, isStatus := err.(apierrors.APIStatus); !isStatus {
			err = apierrors.NewInternalError(err)
		}
		h.s.writeError(w, r, err)
		return
	}
	if status, ok := out.(*metav1.Status); ok {
		h.s.writeStatus(w, r, status)
		return
	}
	choice, err := negotiateOutput(acceptsHeader(r), h.s.codecs.SupportedMediaTypes(), false)
	if err != nil {
		h.s.writeError(w, r, notAcceptable(err))
		return
	}
	if err := h.s.writeEncoded(w, http.StatusCreated, choice, action.Kind.GroupVersion(), out); err != nil {
		h.s.log.Debug("write action answer", "subresource", h.res.Plural+"/"+info.Subresource, "namespace", info.Namespace, "name", info.Name, "err", err)
	}
}

// readAction reads an action's write options and decodes its body, a body without apiVersion and
// kind taken to be of the action's kind, as Kubernetes' create handler does. It answers the client
// itself when either is bad.
func (h *resourceHandler) readAction(w http.ResponseWriter, r *http.Request, action *registry.Action) (writeOptions, runtime.Object, bool) {
	opts, body, ok := h.readWrite(w, r)
	if !ok {
		return opts, nil, false
	}
	gvk := action.Kind
	obj, _, err := h.s.codecs.UniversalDecoder(gvk.GroupVersion()).Decode(body, &gvk, action.New())
	if err != nil {
		h.s.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, gvk.Kind, err)))
		return opts, nil, false
	}
	return opts, obj, true
}

// serveBindings is the legacy POST /api/v1/namespaces/{ns}/bindings: pods/binding with the pod named
// by the Binding's metadata.name. h is the bindings handler; the write goes through the pods one.
func serveBindings(h *resourceHandler, w http.ResponseWriter, r *http.Request, info *RequestInfo) {
	if info.Verb != "create" || info.Name != "" {
		h.s.writeError(w, r, methodNotAllowed())
		return
	}
	pods := h.s.handlerForGroupResource(schema.GroupResource{Resource: "pods"})
	var action *registry.Action
	if pods != nil {
		action = pods.res.Actions["binding"]
	}
	if action == nil {
		h.s.writeError(w, r, apierrors.NewInternalError(fmt.Errorf("pods/binding is not served")))
		return
	}
	opts, obj, ok := pods.readAction(w, r, action)
	if !ok {
		return
	}
	binding, ok := obj.(*corev1.Binding)
	switch {
	case !ok:
		h.s.writeError(w, r, apierrors.NewInternalError(fmt.Errorf("pods/binding decoded a %T", obj)))
		return
	case binding.Namespace != "" && binding.Namespace != info.Namespace:
		h.s.writeError(w, r, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request"))
		return
	case binding.Name == "":
		h.s.writeError(w, r, apierrors.NewInvalid(schema.GroupKind{Kind: "Binding"}, "",
			field.ErrorList{field.Required(field.NewPath("metadata", "name"), "name or generateName is required")}))
		return
	}
	podInfo := &RequestInfo{Verb: "create", Namespace: info.Namespace, Resource: "pods", Subresource: "binding", Name: binding.Name}
	pods.runAction(w, r, podInfo, action, binding, opts.dryRun)
}

// actionEnv is what the server lends the action subresources of h's resource.
func (h *resourceHandler) actionEnv() registry.ActionEnv {
	env := registry.ActionEnv{Stores: actionStores{h}, Clock: h.s.clock}
	if t := h.s.cfg.ServiceAccountTokens; t != nil && t.Issuer != nil {
		env.Tokens = &registry.TokenIssuing{Issuer: t.Issuer, Audiences: t.Audiences}
	}
	return env
}

// actionStores finds the generic stores of the served resources for the actions of own's resource.
type actionStores struct{ own *resourceHandler }

func (a actionStores) Store(gr schema.GroupResource) (registry.ObjectStore, bool) {
	if gr == a.own.res.GroupResource() {
		// The resource's own store, without a search of the served ones: a binding, the
		// scheduler's every write, needs no other.
		return actionStore{a.own}, true
	}
	h := a.own.s.handlerForGroupResource(gr)
	if h == nil {
		return nil, false
	}
	return actionStore{h}, true
}

// actionStore is one resource's generic store as an action sees it; its deletes run the resource's
// delete admission, as a DELETE does.
type actionStore struct{ h *resourceHandler }

func (a actionStore) Get(ctx context.Context, namespace, name string, stale bool) (runtime.Object, error) {
	opts := storage.GetOptions{}
	if stale {
		opts.ResourceVersion = "0"
	}
	return a.h.st.Get(ctx, namespace, name, opts)
}

func (a actionStore) List(ctx context.Context, namespace string) (runtime.Object, error) {
	return a.h.st.List(ctx, namespace, storage.ListOptions{Recursive: true})
}

func (a actionStore) GuaranteedUpdate(ctx context.Context, namespace, name string, preconditions *metav1.Preconditions, dryRun bool,
	tryUpdate func(current runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	return a.h.st.GuaranteedUpdate(ctx, namespace, name, preconditions, dryRun, tryUpdate)
}

func (a actionStore) Modify(ctx context.Context, namespace, name string, preconditions *metav1.Preconditions, dryRun bool,
	tryUpdate func(current runtime.Object) (runtime.Object, error)) error {
	return a.h.st.Modify(ctx, namespace, name, preconditions, dryRun, tryUpdate)
}

func (a actionStore) Delete(ctx context.Context, namespace, name string, options *metav1.DeleteOptions) error {
	_, _, err := a.h.st.Delete(ctx, namespace, name, options, a.h.deleteAdmission(options))
	return err
}
