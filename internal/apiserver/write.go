package apiserver

import (
	"context"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/skiff-sh/skiff/internal/apiserver/store"
	"github.com/skiff-sh/skiff/internal/request"
)

func (h *resourceHandler) create(w http.ResponseWriter, r *http.Request, info *RequestInfo) {
	opts, obj, warnings, ok := h.readObject(w, r, info)
	if !ok {
		return
	}
	out, err := h.st.Create(r.Context(), obj, store.CreateOptions{DryRun: opts.dryRun, Admission: h.createAdmission(opts, true)})
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	warningHeader(w, warnings)
	h.respond(w, r, http.StatusCreated, out)
}

// respond writes a write's result object in the negotiated encoding.
func (h *resourceHandler) respond(w http.ResponseWriter, r *http.Request, code int, obj runtime.Object) {
	choice, err := negotiateOutput(acceptsHeader(r), h.mediaTypes, false)
	if err != nil {
		h.s.writeError(w, r, notAcceptable(err))
		return
	}
	h.writeObject(w, r, code, choice, obj)
}

// checkNamespace fills in the request's namespace or refuses a body that names another one.
func (h *resourceHandler) checkNamespace(obj runtime.Object, namespace string) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if !h.res.Namespaced {
		m.SetNamespace("")
		return nil
	}
	switch m.GetNamespace() {
	case "":
		m.SetNamespace(namespace)
	case namespace:
	default:
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

// createAdmission is the HTTP layer's part of a create, which the store runs once the system fields
// are set: managed fields (unless managed is false: server-side apply recorded them already), then
// mutating admission; after the strategy's validation, validating admission.
func (h *resourceHandler) createAdmission(opts writeOptions, managed bool) store.Admission {
	var attrs *AdmissionAttributes
	return store.Admission{
		Mutate: func(ctx context.Context, obj, _ runtime.Object) (runtime.Object, error) {
			if managed && opts.fieldManager != "" {
				obj = h.fieldManager.UpdateNoErrors(h.res.New(), obj, opts.fieldManager)
			}
			m, err := meta.Accessor(obj)
			if err != nil {
				return nil, err
			}
			user, _ := request.UserFrom(ctx)
			attrs = &AdmissionAttributes{Verb: "create", Resource: h.res, Namespace: m.GetNamespace(), Name: m.GetName(), Object: obj, User: user, DryRun: opts.dryRun,
				Options: &metav1.CreateOptions{DryRun: dryRunList(opts.dryRun), FieldManager: opts.fieldManager, FieldValidation: opts.fieldValidation}}
			return obj, h.s.admit(ctx, attrs)
		},
		Validate: func(ctx context.Context, obj, _ runtime.Object) error {
			attrs.Object = obj
			return h.s.validateAdmission(ctx, attrs)
		},
	}
}

// updateContext carries a PUT or PATCH through the store's update.
type updateContext struct {
	subresource string
	opts        writeOptions
	// forceAllowCreate is set by server-side apply, which creates a missing object.
	forceAllowCreate bool
	// skipManagedFields is set by server-side apply, whose field manager already recorded ownership.
	skipManagedFields bool
}

// updateOptions are the store's options of an update; its admission runs, on every attempt, managed
// fields and mutating admission after the (sub)resource strategy's PrepareForUpdate and validating
// admission after its validation. A create-on-update is admitted as a create.
func (h *resourceHandler) updateOptions(uc *updateContext) store.UpdateOptions {
	// The create admission of a create-on-update is built per attempt: server-side apply decides
	// whether managed fields are recorded already only once it has merged.
	var create store.Admission
	var attrs *AdmissionAttributes
	return store.UpdateOptions{
		DryRun:           uc.opts.dryRun,
		Subresource:      uc.subresource,
		ForceAllowCreate: uc.forceAllowCreate,
		Admission: store.Admission{
			Mutate: func(ctx context.Context, obj, old runtime.Object) (runtime.Object, error) {
				if old == nil {
					create = h.createAdmission(uc.opts, !uc.skipManagedFields)
					return create.Mutate(ctx, obj, nil)
				}
				if fm := h.fieldManagerFor(uc.subresource); fm != nil && uc.opts.fieldManager != "" && !uc.skipManagedFields {
					obj = fm.UpdateNoErrors(old, obj, uc.opts.fieldManager)
				}
				m, err := meta.Accessor(obj)
				if err != nil {
					return nil, err
				}
				user, _ := request.UserFrom(ctx)
				attrs = &AdmissionAttributes{Verb: "update", Resource: h.res, Subresource: uc.subresource, Namespace: m.GetNamespace(), Name: m.GetName(), Object: obj, OldObject: old, User: user, DryRun: uc.opts.dryRun,
					Options: &metav1.UpdateOptions{DryRun: dryRunList(uc.opts.dryRun), FieldManager: uc.opts.fieldManager, FieldValidation: uc.opts.fieldValidation}}
				return obj, h.s.admit(ctx, attrs)
			},
			Validate: func(ctx context.Context, obj, old runtime.Object) error {
				if old == nil {
					return create.Validate(ctx, obj, nil)
				}
				attrs.Object = obj
				return h.s.validateAdmission(ctx, attrs)
			},
		},
	}
}

func (h *resourceHandler) update(w http.ResponseWriter, r *http.Request, info *RequestInfo, subresource string) {
	opts, obj, warnings, ok := h.readObject(w, r, info)
	if !ok {
		return
	}
	m, _ := meta.Accessor(obj)
	if m.GetName() != info.Name {
		h.s.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), info.Name)))
		return
	}
	uc := &updateContext{subresource: subresource, opts: opts}
	out, created, err := h.st.Update(r.Context(), info.Namespace, info.Name, func(context.Context, runtime.Object) (runtime.Object, error) {
		return obj.DeepCopyObject(), nil
	}, h.updateOptions(uc))
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	h.finishUpdate(w, r, out, warnings, created)
}

// readObject reads a create or update body into an object of the resource in the request's
// namespace, answering the client itself when that fails.
func (h *resourceHandler) readObject(w http.ResponseWriter, r *http.Request, info *RequestInfo) (writeOptions, runtime.Object, []string, bool) {
	opts, body, ok := h.readWrite(w, r)
	if !ok {
		return opts, nil, nil, false
	}
	obj, warnings, err := h.decodeObject(body, r.Header.Get("Content-Type"), opts.fieldValidation)
	if err == nil {
		err = h.checkNamespace(obj, info.Namespace)
	}
	if err != nil {
		h.s.writeError(w, r, err)
		return opts, nil, nil, false
	}
	return opts, obj, warnings, true
}

// finishUpdate writes the result of a PUT or PATCH (201 when the update created it).
func (h *resourceHandler) finishUpdate(w http.ResponseWriter, r *http.Request, out runtime.Object, warnings []string, created bool) {
	warningHeader(w, warnings)
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	h.respond(w, r, code, out)
}

// randomNameSuffix is Kubernetes' generated-name suffix: five random characters.
func randomNameSuffix() string { return utilrand.String(5) }

// dryRunList is a write's dryRun option as the API carries it.
func dryRunList(dryRun bool) []string {
	if dryRun {
		return []string{metav1.DryRunAll}
	}
	return nil
}
