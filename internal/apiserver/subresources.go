package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/internal/storage"
)

// subresourceFunc serves a subresource that is neither status nor scale.
type subresourceFunc func(h *resourceHandler, w http.ResponseWriter, r *http.Request, info *RequestInfo)

// extraSubresource returns the handler of the built-in special subresources.
func (s *Server) extraSubresource(gr schema.GroupResource, name string) subresourceFunc {
	if gr.Group != "" {
		return nil
	}
	switch gr.Resource + "/" + name {
	case "pods/binding":
		return servePodBinding
	case "pods/eviction":
		return servePodEviction
	case "namespaces/finalize":
		return serveNamespaceFinalize
	case "pods/log", "pods/exec", "pods/attach", "pods/portforward":
		return servePodConnect
	case "serviceaccounts/token":
		return serveServiceAccountToken
	}
	if s.cfg.ExtraSubresources != nil {
		if f := s.cfg.ExtraSubresources(gr, name); f != nil {
			return func(h *resourceHandler, w http.ResponseWriter, r *http.Request, info *RequestInfo) { f(w, r, info) }
		}
	}
	return nil
}

func (s *Server) typeConverter() managedfields.TypeConverter {
	if s.cfg.TypeConverter != nil {
		return s.cfg.TypeConverter
	}
	return managedfields.NewDeducedTypeConverter()
}

// ---- scale ----

func (h *resourceHandler) serveScale(w http.ResponseWriter, r *http.Request, info *RequestInfo) {
	scaleGV := autoscalingv1.SchemeGroupVersion
	writeScale := func(code int, obj runtime.Object) {
		scale, err := h.res.Scale.Get(obj)
		if err != nil {
			h.s.writeError(w, r, err)
			return
		}
		choice, err := negotiateOutput(acceptsHeader(r), h.s.codecs.SupportedMediaTypes(), false)
		if err != nil {
			h.s.writeError(w, r, notAcceptable(err))
			return
		}
		if err := h.s.writeEncoded(w, code, choice, scaleGV, scale); err != nil {
			h.s.log.Debug("write scale", "err", err)
		}
	}
	switch info.Verb {
	case "get":
		obj := h.res.New()
		if err := h.store.Get(r.Context(), h.key(info.Namespace, info.Name), storage.GetOptions{}, obj); err != nil {
			h.s.writeError(w, r, storage.ToAPIError(err, h.res.GroupResource(), info.Name))
			return
		}
		writeScale(http.StatusOK, obj)
	case "update", "patch":
		opts, body, ok := h.readWrite(w, r)
		if !ok {
			return
		}
		uc := &updateContext{subresource: "scale", opts: opts}
		out, err := h.guaranteedUpdate(r.Context(), info.Namespace, info.Name, opts.dryRun, false, func(current runtime.Object) (runtime.Object, error) {
			scale, err := h.res.Scale.Get(current)
			if err != nil {
				return nil, err
			}
			next, err := h.nextScale(r, info.Verb, scale, body)
			if err != nil {
				return nil, err
			}
			if next.Spec.Replicas < 0 {
				return nil, apierrors.NewInvalid(schema.GroupKind{Group: "autoscaling", Kind: "Scale"}, info.Name,
					field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), next.Spec.Replicas, "must be greater than or equal to 0")})
			}
			if next.ResourceVersion != "" && next.ResourceVersion != scale.ResourceVersion {
				return nil, apierrors.NewConflict(h.res.GroupResource(), info.Name, errors.New(optimisticLockErrorMsg))
			}
			obj := current.DeepCopyObject()
			if err := h.res.Scale.SetReplicas(obj, next.Spec.Replicas); err != nil {
				return nil, err
			}
			uc.skipManagedFields = false
			return h.beforeUpdate(r.Context(), obj, current, &updateContext{opts: uc.opts})
		})
		if err != nil {
			h.s.writeError(w, r, err)
			return
		}
		writeScale(http.StatusOK, out)
	default:
		h.s.writeError(w, r, apierrors.NewMethodNotSupported(schema.GroupResource{Group: h.res.GroupVersion.Group, Resource: h.res.Plural + "/scale"}, info.Verb))
	}
}

// nextScale reads the Scale a PUT sends or computes the one a PATCH describes.
func (h *resourceHandler) nextScale(r *http.Request, verb string, current *autoscalingv1.Scale, body []byte) (*autoscalingv1.Scale, error) {
	scaleGV := autoscalingv1.SchemeGroupVersion
	if verb == "update" {
		info, ok := inputSerializer(r.Header.Get("Content-Type"), h.s.codecs.SupportedMediaTypes())
		if !ok {
			return nil, unsupportedMediaType(r.Header.Get("Content-Type"))
		}
		next := &autoscalingv1.Scale{}
		gvk := scaleGV.WithKind("Scale")
		if _, _, err := h.s.codecs.DecoderToVersion(info.Serializer, scaleGV).Decode(body, &gvk, next); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("Scale in version %q cannot be handled as a Scale: %v", scaleGV.Version, err))
		}
		return next, nil
	}
	pt, ok := patchTypeOf(r.Header.Get("Content-Type"))
	if !ok || pt == types.ApplyYAMLPatchType {
		return nil, unsupportedMediaType(r.Header.Get("Content-Type"))
	}
	currentJSON, err := runtime.Encode(h.s.codecs.LegacyCodec(scaleGV), current)
	if err != nil {
		return nil, err
	}
	patched, err := applyPatch(pt, currentJSON, body, &autoscalingv1.Scale{})
	if err != nil {
		return nil, err
	}
	next := &autoscalingv1.Scale{}
	if err := runtime.DecodeInto(h.s.codecs.UniversalDecoder(scaleGV), patched, next); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return next, nil
}

// ---- pods/binding ----

// servePodBinding assigns a pod to a node: the scheduler's only write path.
func servePodBinding(h *resourceHandler, w http.ResponseWriter, r *http.Request, info *RequestInfo) {
	if info.Verb != "create" {
		h.s.writeError(w, r, apierrors.NewMethodNotSupported(schema.GroupResource{Resource: "pods/binding"}, info.Verb))
		return
	}
	opts, body, ok := h.readWrite(w, r)
	if !ok {
		return
	}
	binding := &corev1.Binding{}
	if err := runtime.DecodeInto(h.s.codecs.UniversalDecoder(corev1.SchemeGroupVersion), body, binding); err != nil {
		h.s.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("Binding in version \"v1\" cannot be handled as a Binding: %v", err)))
		return
	}
	if binding.Name != "" && binding.Name != info.Name {
		h.s.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", binding.Name, info.Name)))
		return
	}
	if binding.Target.Name == "" {
		h.s.writeError(w, r, apierrors.NewInvalid(schema.GroupKind{Kind: "Binding"}, info.Name,
			field.ErrorList{field.Required(field.NewPath("target", "name"), "")}))
		return
	}
	if binding.Target.Kind != "" && binding.Target.Kind != "Node" {
		h.s.writeError(w, r, apierrors.NewInvalid(schema.GroupKind{Kind: "Binding"}, info.Name,
			field.ErrorList{field.NotSupported(field.NewPath("target", "kind"), binding.Target.Kind, []string{"Node", "<empty>"})}))
		return
	}
	_, err := h.guaranteedUpdate(r.Context(), info.Namespace, info.Name, opts.dryRun, false, func(current runtime.Object) (runtime.Object, error) {
		pod, ok := current.DeepCopyObject().(*corev1.Pod)
		if !ok {
			return nil, fmt.Errorf("binding: stored object is %T", current)
		}
		if pod.DeletionTimestamp != nil {
			return nil, apierrors.NewConflict(h.res.GroupResource(), info.Name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", info.Name))
		}
		if pod.Spec.NodeName != "" {
			return nil, apierrors.NewConflict(h.res.GroupResource(), info.Name, fmt.Errorf("pod %s is already assigned to node %q", info.Name, pod.Spec.NodeName))
		}
		if binding.UID != "" && binding.UID != pod.UID {
			return nil, apierrors.NewConflict(h.res.GroupResource(), info.Name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", binding.UID, pod.UID))
		}
		pod.Spec.NodeName = binding.Target.Name
		for k, v := range binding.Annotations {
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[k] = v
		}
		setPodCondition(pod, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(h.s.clock.Now())})
		return pod, nil
	})
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	h.s.writeStatus(w, r, &metav1.Status{Status: metav1.StatusSuccess, Code: http.StatusCreated})
}

func setPodCondition(pod *corev1.Pod, c corev1.PodCondition) {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == c.Type {
			if pod.Status.Conditions[i].Status == c.Status {
				return
			}
			pod.Status.Conditions[i] = c
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, c)
}

// ---- pods/eviction ----

// servePodEviction deletes a pod unless a PodDisruptionBudget covering it allows no disruption, in
// which case it answers 429 as Kubernetes does.
func servePodEviction(h *resourceHandler, w http.ResponseWriter, r *http.Request, info *RequestInfo) {
	if info.Verb != "create" {
		h.s.writeError(w, r, apierrors.NewMethodNotSupported(schema.GroupResource{Resource: "pods/eviction"}, info.Verb))
		return
	}
	body, err := readBody(r)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	eviction := &policyv1.Eviction{}
	if err := runtime.DecodeInto(h.s.codecs.UniversalDecoder(policyv1.SchemeGroupVersion), body, eviction); err != nil {
		h.s.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("Eviction cannot be handled: %v", err)))
		return
	}
	ctx := r.Context()
	pod := &corev1.Pod{}
	if err := h.store.Get(ctx, h.key(info.Namespace, info.Name), storage.GetOptions{}, pod); err != nil {
		h.s.writeError(w, r, storage.ToAPIError(err, h.res.GroupResource(), info.Name))
		return
	}
	// Pods that are not running (or already going away) are evicted without consulting budgets.
	opts := eviction.DeleteOptions
	if opts == nil {
		opts = &metav1.DeleteOptions{}
	}
	dryRun := len(opts.DryRun) > 0
	needsBudget := pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed && pod.Status.Phase != corev1.PodPending
	if needsBudget {
		if err := h.s.consumeDisruption(ctx, pod, dryRun); err != nil {
			h.s.writeError(w, r, err)
			return
		}
	}
	if _, _, err := h.deleteObject(ctx, info.Namespace, info.Name, opts); err != nil {
		h.s.writeError(w, r, err)
		return
	}
	h.s.writeStatus(w, r, &metav1.Status{Status: metav1.StatusSuccess, Code: http.StatusCreated})
}

// consumeDisruption finds the budget covering pod and takes one allowed disruption from it; a dry run
// only checks that one is allowed.
func (s *Server) consumeDisruption(ctx context.Context, pod *corev1.Pod, dryRun bool) error {
	h := s.handlerForGroupResource(schema.GroupResource{Group: "policy", Resource: "poddisruptionbudgets"})
	if h == nil {
		return nil
	}
	list := &policyv1.PodDisruptionBudgetList{}
	if err := h.store.List(ctx, h.collectionPrefix(pod.Namespace), storage.ListOptions{Recursive: true}, list); err != nil {
		return storage.ToAPIError(err, h.res.GroupResource(), "")
	}
	var matching []policyv1.PodDisruptionBudget
	for _, pdb := range list.Items {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		matching = append(matching, pdb)
	}
	if len(matching) == 0 {
		return nil
	}
	if len(matching) > 1 {
		return apierrors.NewInternalError(errors.New("This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."))
	}
	pdb := matching[0]
	tooMany := &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusTooManyRequests, Reason: metav1.StatusReasonTooManyRequests,
		Message: "Cannot evict pod as it would violate the pod's disruption budget.",
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: "DisruptionBudget", Message: fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy)}}},
	}}
	if pdb.Status.ObservedGeneration < pdb.Generation || pdb.Status.DisruptionsAllowed <= 0 {
		return tooMany
	}
	if dryRun {
		return nil
	}
	out := &policyv1.PodDisruptionBudget{}
	rv := pdb.ResourceVersion
	err := h.store.GuaranteedUpdate(ctx, h.key(pdb.Namespace, pdb.Name), out, false, &storage.Preconditions{ResourceVersion: &rv}, func(current runtime.Object) (runtime.Object, error) {
		next := current.DeepCopyObject().(*policyv1.PodDisruptionBudget)
		if next.Status.DisruptionsAllowed <= 0 {
			return nil, tooMany
		}
		next.Status.DisruptionsAllowed--
		if next.Status.DisruptedPods == nil {
			next.Status.DisruptedPods = map[string]metav1.Time{}
		}
		next.Status.DisruptedPods[pod.Name] = metav1.NewTime(s.clock.Now())
		return next, nil
	})
	if storage.IsConflict(err) {
		return tooMany
	}
	var status apierrors.APIStatus
	if err != nil && !errors.As(err, &status) {
		return storage.ToAPIError(err, h.res.GroupResource(), pdb.Name)
	}
	return err
}

// ---- namespaces/finalize ----

// serveNamespaceFinalize lets the namespace controller clear spec.finalizers once a namespace is empty;
// with none left and the namespace terminating, the namespace is removed.
func serveNamespaceFinalize(h *resourceHandler, w http.ResponseWriter, r *http.Request, info *RequestInfo) {
	if info.Verb != "update" {
		h.s.writeError(w, r, apierrors.NewMethodNotSupported(schema.GroupResource{Resource: "namespaces/finalize"}, info.Verb))
		return
	}
	opts, body, ok := h.readWrite(w, r)
	if !ok {
		return
	}
	obj, _, err := h.decodeObject(body, r.Header.Get("Content-Type"), "Ignore")
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	want, ok := obj.(*corev1.Namespace)
	if !ok {
		h.s.writeError(w, r, apierrors.NewBadRequest("finalize takes a Namespace"))
		return
	}
	if errs := validateFinalizerNames(want.Spec.Finalizers); len(errs) > 0 {
		h.s.writeError(w, r, h.invalid(info.Name, errs))
		return
	}
	out, err := h.guaranteedUpdate(r.Context(), "", info.Name, opts.dryRun, false, func(current runtime.Object) (runtime.Object, error) {
		ns := current.DeepCopyObject().(*corev1.Namespace)
		if want.ResourceVersion != "" && want.ResourceVersion != ns.ResourceVersion {
			return nil, apierrors.NewConflict(h.res.GroupResource(), info.Name, errors.New(optimisticLockErrorMsg))
		}
		ns.Spec.Finalizers = want.Spec.Finalizers
		return ns, nil
	})
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	if ns := out.(*corev1.Namespace); ns.DeletionTimestamp != nil && len(ns.Spec.Finalizers) == 0 && len(ns.Finalizers) == 0 && !opts.dryRun {
		rv := ns.ResourceVersion
		removed := &corev1.Namespace{}
		if err := h.store.Delete(r.Context(), h.key("", info.Name), removed, &storage.Preconditions{ResourceVersion: &rv}, nil); err == nil {
			out = removed
		}
	}
	h.respond(w, r, http.StatusOK, out)
}

func validateFinalizerNames(finalizers []corev1.FinalizerName) field.ErrorList {
	var errs field.ErrorList
	for i, f := range finalizers {
		if f == "" {
			errs = append(errs, field.Required(field.NewPath("spec", "finalizers").Index(i), ""))
		}
	}
	return errs
}

// ---- Lookup for admission ----

func (s *Server) handlerForGroupResource(gr schema.GroupResource) *resourceHandler {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for gvr, h := range s.handlers {
		if gvr.GroupResource() == gr {
			return h
		}
	}
	return nil
}

// Get reads one object from storage for admission plugins. Like the informer caches Kubernetes'
// admission reads from, it may be slightly stale (a serializable read), which keeps it off the
// path of etcd's linearizable-read barrier under write load.
func (s *Server) Get(ctx context.Context, group, resource, namespace, name string) (runtime.Object, error) {
	h := s.handlerForGroupResource(schema.GroupResource{Group: group, Resource: resource})
	if h == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: group, Resource: resource}, name)
	}
	obj := h.res.New()
	if err := h.store.Get(ctx, h.key(namespace, name), storage.GetOptions{ResourceVersion: "0"}, obj); err != nil {
		return nil, storage.ToAPIError(err, h.res.GroupResource(), name)
	}
	return obj, nil
}

// List reads a collection from storage for admission plugins.
func (s *Server) List(ctx context.Context, group, resource, namespace string) (runtime.Object, error) {
	h := s.handlerForGroupResource(schema.GroupResource{Group: group, Resource: resource})
	if h == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: group, Resource: resource}, "")
	}
	list := h.res.NewList()
	if err := h.store.List(ctx, h.collectionPrefix(namespace), storage.ListOptions{Recursive: true, ResourceVersion: "0"}, list); err != nil {
		return nil, storage.ToAPIError(err, h.res.GroupResource(), "")
	}
	return list, nil
}
