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
	"k8s.io/apimachinery/pkg/api/meta"
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
	case "pods/log", "pods/exec", "pods/attach", "pods/portforward":
		return servePodConnect
	case "serviceaccounts/token":
		return serveServiceAccountToken
	case "pods/proxy":
		return withConnectAdmission(servePodProxy)
	case "services/proxy":
		return withConnectAdmission(serveServiceProxy)
	case "nodes/proxy":
		return withConnectAdmission(serveNodeProxy)
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
		obj, err := h.st.Get(r.Context(), info.Namespace, info.Name, storage.GetOptions{})
		if err != nil {
			h.s.writeError(w, r, err)
			return
		}
		writeScale(http.StatusOK, obj)
	case "update", "patch":
		opts, body, ok := h.readWrite(w, r)
		if !ok {
			return
		}
		// A scale writes the main resource: its strategy, admission and managed fields.
		out, _, err := h.st.Update(r.Context(), info.Namespace, info.Name, func(_ context.Context, current runtime.Object) (runtime.Object, error) {
			if current == nil {
				return nil, apierrors.NewNotFound(h.res.GroupResource(), info.Name)
			}
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
			obj := current.DeepCopyObject()
			if err := h.res.Scale.SetReplicas(obj, next.Spec.Replicas); err != nil {
				return nil, err
			}
			// The Scale's resourceVersion, when given, is the precondition; none updates the
			// object as it is now.
			if next.ResourceVersion != "" {
				m, err := meta.Accessor(obj)
				if err != nil {
					return nil, err
				}
				m.SetResourceVersion(next.ResourceVersion)
			}
			return obj, nil
		}, h.updateOptions(&updateContext{opts: opts}))
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
	h.bindPod(w, r, info.Namespace, info.Name, binding, opts)
}

// serveBindings is the legacy POST /api/v1/namespaces/{ns}/bindings: pods/binding with the pod named
// by the Binding's metadata.name. h is the bindings handler; the write goes through the pods one.
func serveBindings(h *resourceHandler, w http.ResponseWriter, r *http.Request, info *RequestInfo) {
	if info.Verb != "create" || info.Name != "" {
		h.s.writeError(w, r, methodNotAllowed())
		return
	}
	pods := h.s.handlerForGroupResource(schema.GroupResource{Resource: "pods"})
	if pods == nil {
		h.s.writeError(w, r, apierrors.NewInternalError(fmt.Errorf("pods are not served")))
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
	if binding.Namespace != "" && binding.Namespace != info.Namespace {
		h.s.writeError(w, r, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request"))
		return
	}
	if binding.Name == "" {
		h.s.writeError(w, r, apierrors.NewInvalid(schema.GroupKind{Kind: "Binding"}, "",
			field.ErrorList{field.Required(field.NewPath("metadata", "name"), "name or generateName is required")}))
		return
	}
	pods.bindPod(w, r, info.Namespace, binding.Name, binding, opts)
}

// bindPod assigns pod name to binding's node (h is the pods handler), as Kubernetes' BindingREST
// does: the target must be a Node, the pod unassigned and not being deleted, and a uid in the
// Binding is a precondition.
func (h *resourceHandler) bindPod(w http.ResponseWriter, r *http.Request, namespace, name string, binding *corev1.Binding, opts writeOptions) {
	info := &RequestInfo{Namespace: namespace, Name: name}
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
	var preconditions *metav1.Preconditions
	if binding.UID != "" {
		preconditions = &metav1.Preconditions{UID: &binding.UID}
	}
	err := h.st.Modify(r.Context(), info.Namespace, info.Name, preconditions, opts.dryRun, func(current runtime.Object) (runtime.Object, error) {
		// current is the update's own copy (storage.UpdateFunc's contract), free to change.
		pod, ok := current.(*corev1.Pod)
		if !ok {
			return nil, fmt.Errorf("binding: stored object is %T", current)
		}
		if pod.DeletionTimestamp != nil {
			return nil, apierrors.NewConflict(h.res.GroupResource(), info.Name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", info.Name))
		}
		if pod.Spec.NodeName != "" {
			return nil, apierrors.NewConflict(h.res.GroupResource(), info.Name, fmt.Errorf("pod %s is already assigned to node %q", info.Name, pod.Spec.NodeName))
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

// setPodCondition adds or refreshes a condition as Kubernetes' pod utilities do: reason and message
// follow c; c's transition time is taken only when the status changes.
func setPodCondition(pod *corev1.Pod, c corev1.PodCondition) {
	for i := range pod.Status.Conditions {
		existing := &pod.Status.Conditions[i]
		if existing.Type != c.Type {
			continue
		}
		if existing.Status == c.Status {
			c.LastTransitionTime = existing.LastTransitionTime
		}
		*existing = c
		return
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
	pod, err := getAs[*corev1.Pod](ctx, h, info.Namespace, info.Name)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	// Pods that are not running (or already going away) are evicted without consulting budgets.
	opts := eviction.DeleteOptions
	if opts == nil {
		opts = &metav1.DeleteOptions{}
	}
	dryRun := len(opts.DryRun) > 0
	if err := h.admitSubresourceCreate(ctx, info, eviction, policyv1.SchemeGroupVersion.WithKind("Eviction"), dryRun); err != nil {
		h.s.writeError(w, r, err)
		return
	}
	needsBudget := pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed && pod.Status.Phase != corev1.PodPending
	if needsBudget {
		if err := h.s.consumeDisruption(ctx, pod, dryRun); err != nil {
			h.s.writeError(w, r, err)
			return
		}
	}
	if !dryRun {
		if opts, err = h.markDisruptionTarget(ctx, info.Namespace, info.Name, opts); err != nil {
			h.s.writeError(w, r, err)
			return
		}
	}
	if _, _, err := h.st.Delete(ctx, info.Namespace, info.Name, opts, h.deleteAdmission(opts)); err != nil {
		h.s.writeError(w, r, err)
		return
	}
	h.s.writeStatus(w, r, &metav1.Status{Status: metav1.StatusSuccess, Code: http.StatusCreated})
}

// markDisruptionTarget records on the pod's status why it goes, before the eviction deletes it, as
// Kubernetes does: condition DisruptionTarget=True, reason EvictionByEvictionAPI. Controllers read
// it (a Job's podFailurePolicy onPodConditions rule). The eviction's own preconditions apply to this
// write; a resourceVersion precondition then moves to the version this write produced, since the
// delete must not fail on our own change.
func (h *resourceHandler) markDisruptionTarget(ctx context.Context, namespace, name string, opts *metav1.DeleteOptions) (*metav1.DeleteOptions, error) {
	now := metav1.NewTime(h.s.clock.Now())
	out, err := h.st.GuaranteedUpdate(ctx, namespace, name, opts.Preconditions, false, func(current runtime.Object) (runtime.Object, error) {
		pod, ok := current.(*corev1.Pod)
		if !ok {
			return nil, fmt.Errorf("pods store returned %T", current)
		}
		setPodCondition(pod, corev1.PodCondition{
			Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting", LastTransitionTime: now,
		})
		return pod, nil
	})
	if err != nil {
		return nil, err
	}
	if opts.Preconditions == nil || opts.Preconditions.ResourceVersion == nil || *opts.Preconditions.ResourceVersion == "" {
		return opts, nil
	}
	m, err := meta.Accessor(out)
	if err != nil {
		return nil, err
	}
	opts = opts.DeepCopy()
	rv := m.GetResourceVersion()
	opts.Preconditions.ResourceVersion = &rv
	return opts, nil
}

// consumeDisruption finds the budget covering pod and takes one allowed disruption from it; a dry run
// only checks that one is allowed.
func (s *Server) consumeDisruption(ctx context.Context, pod *corev1.Pod, dryRun bool) error {
	h := s.handlerForGroupResource(schema.GroupResource{Group: "policy", Resource: "poddisruptionbudgets"})
	if h == nil {
		return nil
	}
	listObj, err := h.st.List(ctx, pod.Namespace, storage.ListOptions{Recursive: true})
	if err != nil {
		return err
	}
	list, ok := listObj.(*policyv1.PodDisruptionBudgetList)
	if !ok {
		return apierrors.NewInternalError(fmt.Errorf("poddisruptionbudgets store returned %T", listObj))
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
		//lint:ignore ST1005 Kubernetes' wording, which clients match.
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
	rv := pdb.ResourceVersion
	err = h.st.Modify(ctx, pdb.Namespace, pdb.Name, &metav1.Preconditions{ResourceVersion: &rv}, false, func(current runtime.Object) (runtime.Object, error) {
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
	if apierrors.IsConflict(err) {
		// The budget changed since it was read: its answer may have changed too.
		return tooMany
	}
	return err
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
	return s.get(ctx, group, resource, namespace, name, storage.GetOptions{ResourceVersion: "0"})
}

// GetLatest reads an object with a quorum read, for a bootstrap step that reads back what it just
// wrote: Get's serializable read may reach an external etcd member that has not applied the write
// yet, and answer NotFound.
func (s *Server) GetLatest(ctx context.Context, group, resource, namespace, name string) (runtime.Object, error) {
	return s.get(ctx, group, resource, namespace, name, storage.GetOptions{})
}

// get reads one object of a served resource from storage with opts.
func (s *Server) get(ctx context.Context, group, resource, namespace, name string, opts storage.GetOptions) (runtime.Object, error) {
	gr := schema.GroupResource{Group: group, Resource: resource}
	h := s.handlerForGroupResource(gr)
	if h == nil {
		return nil, apierrors.NewNotFound(gr, name)
	}
	return h.st.Get(ctx, namespace, name, opts)
}

// List reads a collection from storage for admission plugins.
func (s *Server) List(ctx context.Context, group, resource, namespace string) (runtime.Object, error) {
	h := s.handlerForGroupResource(schema.GroupResource{Group: group, Resource: resource})
	if h == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: group, Resource: resource}, "")
	}
	return h.st.List(ctx, namespace, storage.ListOptions{Recursive: true, ResourceVersion: "0"})
}
