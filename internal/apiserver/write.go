package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"

	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/internal/apiserver/request"
	"github.com/skiff-sh/skiff/internal/storage"
)

const optimisticLockErrorMsg = "the object has been modified; please apply your changes to the latest version and try again"

// errNotFoundMarker lets tryUpdate tell the handler the key was missing (for create-on-update).
var errNotFoundMarker = errors.New("not found")

func (h *resourceHandler) invalid(name string, errs field.ErrorList) error {
	return apierrors.NewInvalid(h.res.GroupVersionKind().GroupKind(), name, errs)
}

func (h *resourceHandler) create(w http.ResponseWriter, r *http.Request, info *RequestInfo) {
	opts, obj, warnings, ok := h.readObject(w, r, info)
	if !ok {
		return
	}
	out, err := h.createObject(r.Context(), obj, opts)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	warningHeader(w, warnings)
	h.respond(w, r, http.StatusCreated, out)
}

// respond writes a write's result object in the negotiated encoding.
func (h *resourceHandler) respond(w http.ResponseWriter, r *http.Request, code int, obj runtime.Object) {
	choice, err := negotiateOutput(acceptsHeader(r), h.s.codecs.SupportedMediaTypes(), false)
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

// prepareCreate fills the system fields, runs admission, the strategy and validation: everything a
// create does short of writing. It is shared by POST, create-on-PUT and server-side apply.
func (h *resourceHandler) prepareCreate(ctx context.Context, obj runtime.Object, opts writeOptions, managed bool) (runtime.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if m.GetResourceVersion() != "" {
		return nil, apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	if m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(generateName(m.GetGenerateName(), h.s.nameSuffix))
	}
	m.SetUID(newUID())
	m.SetCreationTimestamp(metav1.NewTime(h.s.clock.Now().Truncate(1e9)))
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetSelfLink("")
	if managed && opts.fieldManager != "" {
		obj = h.fieldManager.UpdateNoErrors(h.res.New(), obj, opts.fieldManager)
		if m, err = meta.Accessor(obj); err != nil {
			return nil, err
		}
	}
	user, _ := request.UserFrom(ctx)
	attrs := &AdmissionAttributes{Verb: "create", Resource: h.res, Namespace: m.GetNamespace(), Name: m.GetName(), Object: obj, User: user, DryRun: opts.dryRun}
	if err := h.s.admit(ctx, attrs); err != nil {
		return nil, err
	}
	h.res.Strategy.PrepareForCreate(ctx, obj)
	if errs := h.res.Strategy.Validate(ctx, obj); len(errs) > 0 {
		return nil, h.invalid(m.GetName(), errs)
	}
	return obj, h.s.validateAdmission(ctx, attrs)
}

// generateNameAttempts is how often a create whose generated name is taken is tried with a new
// one, as Kubernetes retries (five random characters collide within a few thousand objects).
const generateNameAttempts = 8

func (h *resourceHandler) createObject(ctx context.Context, obj runtime.Object, opts writeOptions) (runtime.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if m.GetName() != "" || m.GetGenerateName() == "" {
		return h.createOnce(ctx, obj, opts)
	}
	for attempt := 1; ; attempt++ {
		out, err := h.createOnce(ctx, obj.DeepCopyObject(), opts)
		if !apierrors.IsAlreadyExists(err) || attempt == generateNameAttempts {
			return out, err
		}
	}
}

func (h *resourceHandler) createOnce(ctx context.Context, obj runtime.Object, opts writeOptions) (runtime.Object, error) {
	obj, err := h.prepareCreate(ctx, obj, opts, true)
	if err != nil {
		return nil, err
	}
	m, _ := meta.Accessor(obj)
	key := h.key(m.GetNamespace(), m.GetName())
	if opts.dryRun {
		existing := h.res.New()
		err := h.store.Get(ctx, key, storage.GetOptions{}, existing)
		if err == nil {
			return nil, apierrors.NewAlreadyExists(h.res.GroupResource(), m.GetName())
		}
		if !storage.IsNotFound(err) {
			return nil, storage.ToAPIError(err, h.res.GroupResource(), m.GetName())
		}
	}
	var held *allocation
	if svc, ok := obj.(*corev1.Service); ok && h.s.services != nil {
		if held, err = h.s.services.allocateForCreate(ctx, svc, opts.dryRun); err != nil {
			return nil, err
		}
	}
	if opts.dryRun {
		return obj, nil
	}
	out := h.res.New()
	if err := h.store.Create(ctx, key, obj, out); err != nil {
		if held != nil {
			h.s.services.rollback(ctx, held)
		}
		return nil, storage.ToAPIError(err, h.res.GroupResource(), m.GetName())
	}
	return out, nil
}

// updateContext carries a PUT or PATCH through its tryUpdate function.
type updateContext struct {
	subresource string
	opts        writeOptions
	created     bool
	// skipManagedFields is set by server-side apply, whose field manager already recorded ownership.
	skipManagedFields bool
}

// beforeUpdate carries the stored system fields over to obj, applies the (sub)resource strategy, runs
// admission and validation. It is the common tail of PUT and PATCH.
func (h *resourceHandler) beforeUpdate(ctx context.Context, obj, old runtime.Object, uc *updateContext) (runtime.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	om, err := meta.Accessor(old)
	if err != nil {
		return nil, err
	}
	m.SetGeneration(om.GetGeneration())
	if m.GetResourceVersion() == "" {
		// An unconditional update (the handler already refused it where the type requires a
		// resourceVersion) is checked against the stored object's revision.
		m.SetResourceVersion(om.GetResourceVersion())
	}
	if m.GetUID() == "" {
		m.SetUID(om.GetUID())
	}
	if m.GetUID() != om.GetUID() {
		return nil, apierrors.NewConflict(h.res.GroupResource(), m.GetName(), fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", m.GetUID(), om.GetUID()))
	}
	m.SetCreationTimestamp(om.GetCreationTimestamp())
	if ts := om.GetDeletionTimestamp(); ts != nil {
		m.SetDeletionTimestamp(ts)
	} else if m.GetDeletionTimestamp() != nil {
		m.SetDeletionTimestamp(nil)
	}
	m.SetDeletionGracePeriodSeconds(om.GetDeletionGracePeriodSeconds())
	m.SetSelfLink("")

	if svc, ok := obj.(*corev1.Service); ok && h.s.services != nil && uc.subresource == "" {
		if err := h.s.services.allocateForUpdate(ctx, svc, uc.opts.dryRun); err != nil {
			return nil, err
		}
	}
	fm := h.fieldManager
	partial, partialFM := h.partialUpdate(uc.subresource)
	if partial != nil {
		fm = partialFM
		partial.PrepareForUpdate(ctx, obj, old)
	} else {
		h.res.Strategy.PrepareForUpdate(ctx, obj, old)
	}
	if fm != nil && uc.opts.fieldManager != "" && !uc.skipManagedFields {
		obj = fm.UpdateNoErrors(old, obj, uc.opts.fieldManager)
		if m, err = meta.Accessor(obj); err != nil {
			return nil, err
		}
	}
	user, _ := request.UserFrom(ctx)
	attrs := &AdmissionAttributes{Verb: "update", Resource: h.res, Subresource: uc.subresource, Namespace: m.GetNamespace(), Name: m.GetName(), Object: obj, OldObject: old, User: user, DryRun: uc.opts.dryRun}
	if err := h.s.admit(ctx, attrs); err != nil {
		return nil, err
	}
	var errs field.ErrorList
	if partial != nil {
		errs = partial.ValidateUpdate(ctx, obj, old)
	} else {
		errs = h.res.Strategy.ValidateUpdate(ctx, obj, old)
	}
	if len(errs) > 0 {
		return nil, h.invalid(m.GetName(), errs)
	}
	return obj, h.s.validateAdmission(ctx, attrs)
}

// guaranteedUpdate runs tryUpdate against the stored object with compare-and-swap retries. A missing
// key reaches tryUpdate as nil when allowCreate is set. With dryRun nothing is written.
func (h *resourceHandler) guaranteedUpdate(ctx context.Context, namespace, name string, dryRun, allowCreate bool, tryUpdate func(current runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	key := h.key(namespace, name)
	wrapped := func(current runtime.Object) (runtime.Object, error) {
		m, err := meta.Accessor(current)
		if err != nil {
			return nil, err
		}
		if m.GetResourceVersion() == "" && m.GetUID() == "" && m.GetName() == "" {
			if !allowCreate {
				return nil, apierrors.NewNotFound(h.res.GroupResource(), name)
			}
			return tryUpdate(nil)
		}
		return tryUpdate(current)
	}
	if dryRun {
		current := h.res.New()
		err := h.store.Get(ctx, key, storage.GetOptions{}, current)
		if storage.IsNotFound(err) {
			current = h.res.New()
		} else if err != nil {
			return nil, storage.ToAPIError(err, h.res.GroupResource(), name)
		}
		return wrapped(current)
	}
	out := h.res.New()
	err := h.store.GuaranteedUpdate(ctx, key, out, allowCreate, nil, wrapped)
	if err != nil {
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			return nil, err
		}
		return nil, storage.ToAPIError(err, h.res.GroupResource(), name)
	}
	return out, nil
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
	allowCreate := subresource == "" && h.res.Strategy.AllowCreateOnUpdate()
	out, err := h.guaranteedUpdate(r.Context(), info.Namespace, info.Name, opts.dryRun, allowCreate, func(current runtime.Object) (runtime.Object, error) {
		next := obj.DeepCopyObject()
		if current == nil {
			nm, _ := meta.Accessor(next)
			nm.SetResourceVersion("")
			uc.created = true
			return h.prepareCreate(r.Context(), next, opts, true)
		}
		cm, _ := meta.Accessor(current)
		nm, _ := meta.Accessor(next)
		switch rv := nm.GetResourceVersion(); {
		case rv == "" && !h.res.Strategy.AllowUnconditionalUpdate():
			return nil, h.invalid(info.Name, field.ErrorList{field.Invalid(field.NewPath("metadata", "resourceVersion"), rv, "must be specified for an update")})
		case rv != "" && rv != cm.GetResourceVersion():
			return nil, apierrors.NewConflict(h.res.GroupResource(), info.Name, errors.New(optimisticLockErrorMsg))
		}
		return h.beforeUpdate(r.Context(), next, current, uc)
	})
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	h.finishUpdate(w, r, out, opts, warnings, uc.created)
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

// finishUpdate ends a PUT or PATCH: an object whose last finalizer went is deleted, and the result
// is written (201 when the update created it).
func (h *resourceHandler) finishUpdate(w http.ResponseWriter, r *http.Request, out runtime.Object, opts writeOptions, warnings []string, created bool) {
	out, err := h.finishIfFinalized(r.Context(), out, opts.dryRun)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	warningHeader(w, warnings)
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	h.respond(w, r, code, out)
}

// finishIfFinalized deletes an object whose deletion was waiting for finalizers once the last one is
// gone (and no grace period is still running), as Kubernetes does on update.
func (h *resourceHandler) finishIfFinalized(ctx context.Context, obj runtime.Object, dryRun bool) (runtime.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil || dryRun {
		return obj, err
	}
	if m.GetDeletionTimestamp() == nil || len(m.GetFinalizers()) > 0 {
		return obj, nil
	}
	if g := m.GetDeletionGracePeriodSeconds(); g != nil && *g > 0 {
		return obj, nil
	}
	if h.res.GroupResource().String() == "namespaces" && namespaceHasSpecFinalizers(obj) {
		return obj, nil
	}
	rv := m.GetResourceVersion()
	out := h.res.New()
	err = h.store.Delete(ctx, h.key(m.GetNamespace(), m.GetName()), out, &storage.Preconditions{ResourceVersion: &rv}, nil)
	switch {
	case err == nil:
		return out, nil
	case storage.IsNotFound(err), storage.IsConflict(err):
		// Someone else finished or changed it first; the update itself succeeded.
		return obj, nil
	default:
		return nil, storage.ToAPIError(err, h.res.GroupResource(), m.GetName())
	}
}

// nameSuffixLength is how many random characters generateName appends, as Kubernetes does.
const nameSuffixLength = 5

// randomNameSuffix is Kubernetes' generated-name suffix.
func randomNameSuffix() string { return utilrand.String(nameSuffixLength) }

// generateName appends a suffix to a generateName prefix, trimming the prefix so the result stays
// within 63 characters.
func generateName(base string, suffix func() string) string {
	const maxNameLength = 63
	if len(base) > maxNameLength-nameSuffixLength {
		base = base[:maxNameLength-nameSuffixLength]
	}
	return base + suffix()
}

func newUID() types.UID { return types.UID(uuid.NewString()) }
