package core

//lint:file-ignore SA1019 core/v1 Endpoints are deprecated, not removed: Kubernetes still serves them and so does skiff.

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/skiff-sh/skiff/internal/registry"
)

// object is a core/v1 pointer type with metadata.
type object interface {
	runtime.Object
	metav1.Object
}

// typedStrategy implements registry.Strategy for one Go type from plain functions, so each
// resource states only what differs.
type typedStrategy[T object] struct {
	prepareCreate  func(obj T)
	prepareUpdate  func(obj, old T)
	validate       func(obj T) field.ErrorList
	validateUpdate func(obj, old T) field.ErrorList
	createOnUpdate bool
	unconditional  bool
	// resetFields are the top-level fields a main-resource write cannot change (status).
	resetFields []string
	// orphanByDefault: a delete that names no propagation orphans the dependents
	// (registry.DependentsOrphaner).
	orphanByDefault bool
}

var (
	_ registry.Strategy           = &typedStrategy[*corev1.Pod]{}
	_ registry.DependentsOrphaner = &typedStrategy[*corev1.Pod]{}
)

// OrphanDependentsByDefault implements registry.DependentsOrphaner.
func (s *typedStrategy[T]) OrphanDependentsByDefault() bool { return s.orphanByDefault }

func wrongType(obj runtime.Object) field.ErrorList {
	return field.ErrorList{field.InternalError(nil, fmt.Errorf("unexpected object type %T", obj))}
}

func (s *typedStrategy[T]) PrepareForCreate(_ context.Context, obj runtime.Object) {
	o, ok := obj.(T)
	if !ok {
		return
	}
	if s.prepareCreate != nil {
		s.prepareCreate(o)
	}
}

func (s *typedStrategy[T]) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	o, ok1 := obj.(T)
	p, ok2 := old.(T)
	if !ok1 || !ok2 {
		return
	}
	if s.prepareUpdate != nil {
		s.prepareUpdate(o, p)
	}
}

func (s *typedStrategy[T]) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	o, ok := obj.(T)
	if !ok {
		return wrongType(obj)
	}
	return s.validate(o)
}

func (s *typedStrategy[T]) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	o, ok1 := obj.(T)
	p, ok2 := old.(T)
	if !ok1 || !ok2 {
		return wrongType(obj)
	}
	return s.validateUpdate(o, p)
}

func (s *typedStrategy[T]) AllowCreateOnUpdate() bool      { return s.createOnUpdate }
func (s *typedStrategy[T]) AllowUnconditionalUpdate() bool { return s.unconditional }

func (s *typedStrategy[T]) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetFields(s.resetFields...)
}

func resetFields(fields ...string) map[fieldpath.APIVersion]*fieldpath.Set {
	if len(fields) == 0 {
		return nil
	}
	set := fieldpath.NewSet()
	for _, f := range fields {
		set.Insert(fieldpath.MakePathOrDie(f))
	}
	return map[fieldpath.APIVersion]*fieldpath.Set{"v1": set}
}

// typedStatusStrategy implements registry.StatusStrategy.
type typedStatusStrategy[T object] struct {
	prepareUpdate  func(obj, old T)
	validateUpdate func(obj, old T) field.ErrorList
	resetFields    []string
}

var _ registry.StatusStrategy = &typedStatusStrategy[*corev1.Pod]{}

func (s *typedStatusStrategy[T]) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	o, ok1 := obj.(T)
	p, ok2 := old.(T)
	if !ok1 || !ok2 {
		return
	}
	// Only what prepareUpdate restores: Kubernetes' core status strategies restore the spec and
	// let /status change labels and annotations (conformance's Service status lifecycle patches
	// an annotation through it); the store keeps generation, UID and timestamps.
	s.prepareUpdate(o, p)
}

func (s *typedStatusStrategy[T]) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	o, ok1 := obj.(T)
	p, ok2 := old.(T)
	if !ok1 || !ok2 {
		return wrongType(obj)
	}
	return s.validateUpdate(o, p)
}

func (s *typedStatusStrategy[T]) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetFields(s.resetFields...)
}

// bumpGenerationOnSpecChange increments metadata.generation when spec differs from old's.
func bumpGenerationOnSpecChange(meta, old metav1.Object, spec, oldSpec any) {
	meta.SetGeneration(old.GetGeneration())
	if !apiequality.Semantic.DeepEqual(spec, oldSpec) {
		meta.SetGeneration(old.GetGeneration() + 1)
	}
}

// --- pods ---

// PodStrategy is the pods strategy; it also implements registry.GracefulDeleter.
type PodStrategy struct {
	typedStrategy[*corev1.Pod]
}

var (
	_ registry.GracefulDeleter     = &PodStrategy{}
	_ registry.ResetFieldsProvider = &PodStrategy{}
)

func newPodStrategy() *PodStrategy {
	return &PodStrategy{typedStrategy[*corev1.Pod]{
		prepareCreate: func(pod *corev1.Pod) {
			pod.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: PodQOSClass(&pod.Spec)}
			if len(pod.Spec.SchedulingGates) > 0 {
				pod.Status.Conditions = []corev1.PodCondition{{
					Type:    corev1.PodScheduled,
					Status:  corev1.ConditionFalse,
					Reason:  corev1.PodReasonSchedulingGated,
					Message: "Scheduling is blocked due to non-empty scheduling gates",
				}}
			}
			pod.Generation = 1
		},
		prepareUpdate: func(pod, old *corev1.Pod) {
			pod.Status = old.Status
			bumpGenerationOnSpecChange(pod, old, pod.Spec, old.Spec)
		},
		validate:       ValidatePod,
		validateUpdate: ValidatePodUpdate,
		unconditional:  true,
		resetFields:    []string{"status"},
	}}
}

// CheckGracefulDelete decides the grace period of a pod delete: the request's, else the pod's
// terminationGracePeriodSeconds; immediate for unscheduled or finished pods; a negative period
// becomes 1. It writes the period back to options and reports whether the delete is graceful.
func (s *PodStrategy) CheckGracefulDelete(_ context.Context, obj runtime.Object, options *metav1.DeleteOptions) bool {
	pod, ok := obj.(*corev1.Pod)
	if !ok || options == nil {
		return false
	}
	period := defaultTerminationGracePeriodSeconds
	switch {
	case options.GracePeriodSeconds != nil:
		period = *options.GracePeriodSeconds
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		period = *pod.Spec.TerminationGracePeriodSeconds
	}
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		period = 0
	}
	if period < 0 {
		period = 1
	}
	options.GracePeriodSeconds = &period
	return period > 0
}

func newPodStatusStrategy() *typedStatusStrategy[*corev1.Pod] {
	return &typedStatusStrategy[*corev1.Pod]{
		prepareUpdate: func(pod, old *corev1.Pod) {
			pod.Spec = old.Spec
			// As Kubernetes: a kubelet's status write must not change the owner references
			// garbage collection follows.
			pod.OwnerReferences = old.OwnerReferences
		},
		validateUpdate: ValidatePodStatusUpdate,
		resetFields:    []string{"spec"},
	}
}

// --- namespaces ---

func newNamespaceStrategy() NamespaceStrategy {
	return NamespaceStrategy{&typedStrategy[*corev1.Namespace]{
		prepareCreate: func(ns *corev1.Namespace) {
			ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
			// The kubernetes finalizer is required on create; it is removed later through /finalize.
			hasKube := false
			for _, f := range ns.Spec.Finalizers {
				hasKube = hasKube || f == corev1.FinalizerKubernetes
			}
			if !hasKube {
				ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
			}
			setNamespaceNameLabel(ns)
		},
		prepareUpdate: func(ns, old *corev1.Namespace) {
			ns.Spec.Finalizers = old.Spec.Finalizers
			ns.Status = old.Status
			setNamespaceNameLabel(ns)
		},
		validate:       ValidateNamespace,
		validateUpdate: ValidateNamespaceUpdate,
		unconditional:  true,
		resetFields:    []string{"status"},
	}}
}

func newNamespaceStatusStrategy() *typedStatusStrategy[*corev1.Namespace] {
	return &typedStatusStrategy[*corev1.Namespace]{
		prepareUpdate:  func(ns, old *corev1.Namespace) { ns.Spec = old.Spec },
		validateUpdate: ValidateNamespaceStatusUpdate,
		resetFields:    []string{"spec"},
	}
}

// NamespaceFinalizeStrategy is the namespaces/finalize subresource: only spec.finalizers change.
type NamespaceFinalizeStrategy struct{}

var (
	_ registry.StatusStrategy      = NamespaceFinalizeStrategy{}
	_ registry.ResetFieldsProvider = NamespaceFinalizeStrategy{}
)

// PrepareForUpdate keeps everything of the stored namespace but spec.finalizers.
func (NamespaceFinalizeStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	ns, ok1 := obj.(*corev1.Namespace)
	o, ok2 := old.(*corev1.Namespace)
	if !ok1 || !ok2 {
		return
	}
	finalizers := ns.Spec.Finalizers
	metav1.ResetObjectMetaForStatus(ns, o)
	ns.Spec = *o.Spec.DeepCopy()
	ns.Spec.Finalizers = finalizers
	ns.Status = o.Status
}

// ValidateUpdate checks the finalizer names.
func (NamespaceFinalizeStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	ns, ok1 := obj.(*corev1.Namespace)
	o, ok2 := old.(*corev1.Namespace)
	if !ok1 || !ok2 {
		return wrongType(obj)
	}
	return ValidateNamespaceFinalizeUpdate(ns, o)
}

// GetResetFields: a finalize request owns nothing but spec.finalizers.
func (NamespaceFinalizeStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetFields("status")
}

// --- nodes ---

func newNodeStrategy() *typedStrategy[*corev1.Node] {
	return &typedStrategy[*corev1.Node]{
		// Nodes may set status on create: the kubelet registers with its capacity and addresses.
		prepareCreate:  func(node *corev1.Node) {},
		prepareUpdate:  func(node, old *corev1.Node) { node.Status = old.Status },
		validate:       ValidateNode,
		validateUpdate: ValidateNodeUpdate,
		unconditional:  true,
		resetFields:    []string{"status"},
	}
}

func newNodeStatusStrategy() *typedStatusStrategy[*corev1.Node] {
	return &typedStatusStrategy[*corev1.Node]{
		prepareUpdate:  func(node, old *corev1.Node) { node.Spec = old.Spec },
		validateUpdate: ValidateNodeUpdate,
		resetFields:    []string{"spec"},
	}
}

// --- services ---

func normalizeClusterIPs(svc *corev1.Service) {
	if svc.Spec.ClusterIP != "" && len(svc.Spec.ClusterIPs) == 0 {
		svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
	}
	if svc.Spec.ClusterIP == "" && len(svc.Spec.ClusterIPs) > 0 {
		svc.Spec.ClusterIP = svc.Spec.ClusterIPs[0]
	}
}

// carryAllocatedValues keeps what the allocator assigned when an update omits it (a PUT of a
// manifest without clusterIP or nodePort must not look like an attempt to change them).
func carryAllocatedValues(svc, old *corev1.Service) {
	if svc.Spec.Type == corev1.ServiceTypeExternalName || old.Spec.Type == corev1.ServiceTypeExternalName {
		return
	}
	if svc.Spec.ClusterIP == "" && len(svc.Spec.ClusterIPs) == 0 {
		svc.Spec.ClusterIP = old.Spec.ClusterIP
		svc.Spec.ClusterIPs = append([]string(nil), old.Spec.ClusterIPs...)
	}
	if len(svc.Spec.IPFamilies) == 0 {
		svc.Spec.IPFamilies = append([]corev1.IPFamily(nil), old.Spec.IPFamilies...)
	}
	external := svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer
	if external {
		oldNodePorts := map[string]int32{}
		for _, p := range old.Spec.Ports {
			oldNodePorts[fmt.Sprintf("%d/%s", p.Port, p.Protocol)] = p.NodePort
		}
		for i := range svc.Spec.Ports {
			p := &svc.Spec.Ports[i]
			if p.NodePort == 0 {
				p.NodePort = oldNodePorts[fmt.Sprintf("%d/%s", p.Port, p.Protocol)]
			}
		}
		if svc.Spec.HealthCheckNodePort == 0 && NeedsHealthCheck(svc) && NeedsHealthCheck(old) {
			svc.Spec.HealthCheckNodePort = old.Spec.HealthCheckNodePort
		}
	}
}

// dropTypeDependentFields clears what the new type cannot have but the old one was given.
func dropTypeDependentFields(svc, old *corev1.Service) {
	if svc.Spec.Type == corev1.ServiceTypeExternalName && old.Spec.Type != corev1.ServiceTypeExternalName {
		if svc.Spec.ClusterIP == old.Spec.ClusterIP {
			svc.Spec.ClusterIP = ""
			svc.Spec.ClusterIPs = nil
		}
		if apiequality.Semantic.DeepEqual(svc.Spec.IPFamilies, old.Spec.IPFamilies) {
			svc.Spec.IPFamilies = nil
		}
		if apiequality.Semantic.DeepEqual(svc.Spec.IPFamilyPolicy, old.Spec.IPFamilyPolicy) {
			svc.Spec.IPFamilyPolicy = nil
		}
		if apiequality.Semantic.DeepEqual(svc.Spec.InternalTrafficPolicy, old.Spec.InternalTrafficPolicy) {
			svc.Spec.InternalTrafficPolicy = nil
		}
	}
	if svc.Spec.Type == corev1.ServiceTypeClusterIP || svc.Spec.Type == corev1.ServiceTypeExternalName {
		for i := range svc.Spec.Ports {
			if i < len(old.Spec.Ports) && svc.Spec.Ports[i].NodePort == old.Spec.Ports[i].NodePort {
				svc.Spec.Ports[i].NodePort = 0
			}
		}
		if svc.Spec.ExternalTrafficPolicy == old.Spec.ExternalTrafficPolicy {
			svc.Spec.ExternalTrafficPolicy = ""
		}
		if svc.Spec.HealthCheckNodePort == old.Spec.HealthCheckNodePort {
			svc.Spec.HealthCheckNodePort = 0
		}
	}
	// A Service that no longer needs its health-check node port (no longer a LoadBalancer, or policy
	// Cluster) drops it unless the update changed it; the allocator gives it back.
	if old.Spec.HealthCheckNodePort != 0 && !NeedsHealthCheck(svc) && svc.Spec.HealthCheckNodePort == old.Spec.HealthCheckNodePort {
		svc.Spec.HealthCheckNodePort = 0
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer && old.Spec.Type == corev1.ServiceTypeLoadBalancer {
		if apiequality.Semantic.DeepEqual(svc.Spec.AllocateLoadBalancerNodePorts, old.Spec.AllocateLoadBalancerNodePorts) {
			svc.Spec.AllocateLoadBalancerNodePorts = nil
		}
		if apiequality.Semantic.DeepEqual(svc.Spec.LoadBalancerClass, old.Spec.LoadBalancerClass) {
			svc.Spec.LoadBalancerClass = nil
		}
	}
}

func newServiceStrategy() ServiceStrategy {
	return ServiceStrategy{typedStrategy: &typedStrategy[*corev1.Service]{
		prepareCreate: func(svc *corev1.Service) {
			svc.Status = corev1.ServiceStatus{}
			normalizeClusterIPs(svc)
		},
		prepareUpdate: func(svc, old *corev1.Service) {
			svc.Status = old.Status
			normalizeClusterIPs(svc)
			dropTypeDependentFields(svc, old)
			carryAllocatedValues(svc, old)
		},
		validate:       ValidateService,
		validateUpdate: ValidateServiceUpdate,
		createOnUpdate: true,
		unconditional:  true,
		resetFields:    []string{"status"},
	}}
}

func newServiceStatusStrategy() *typedStatusStrategy[*corev1.Service] {
	return &typedStatusStrategy[*corev1.Service]{
		prepareUpdate:  func(svc, old *corev1.Service) { svc.Spec = old.Spec },
		validateUpdate: ValidateServiceStatusUpdate,
		resetFields:    []string{"spec"},
	}
}

// --- types without a status subresource ---

func newConfigMapStrategy() *typedStrategy[*corev1.ConfigMap] {
	return &typedStrategy[*corev1.ConfigMap]{
		validate:       ValidateConfigMap,
		validateUpdate: ValidateConfigMapUpdate,
		unconditional:  true,
	}
}

func newSecretStrategy() *typedStrategy[*corev1.Secret] {
	return &typedStrategy[*corev1.Secret]{
		prepareCreate:  mergeStringData,
		prepareUpdate:  func(s, _ *corev1.Secret) { mergeStringData(s) },
		validate:       ValidateSecret,
		validateUpdate: ValidateSecretUpdate,
		unconditional:  true,
	}
}

func newServiceAccountStrategy() *typedStrategy[*corev1.ServiceAccount] {
	return &typedStrategy[*corev1.ServiceAccount]{
		validate:       ValidateServiceAccount,
		validateUpdate: ValidateServiceAccountUpdate,
		createOnUpdate: true,
		unconditional:  true,
	}
}

func newEventStrategy() *typedStrategy[*corev1.Event] {
	return &typedStrategy[*corev1.Event]{
		validate:       ValidateEvent,
		validateUpdate: ValidateEventUpdate,
		createOnUpdate: true,
		unconditional:  true,
	}
}

func newEndpointsStrategy() *typedStrategy[*corev1.Endpoints] {
	return &typedStrategy[*corev1.Endpoints]{
		validate:       ValidateEndpoints,
		validateUpdate: ValidateEndpointsUpdate,
		createOnUpdate: true,
		unconditional:  true,
	}
}

func newLimitRangeStrategy() *typedStrategy[*corev1.LimitRange] {
	return &typedStrategy[*corev1.LimitRange]{
		validate:       ValidateLimitRange,
		validateUpdate: ValidateLimitRangeUpdate,
		createOnUpdate: true,
		unconditional:  true,
	}
}

// --- resource quotas ---

func newResourceQuotaStrategy() *typedStrategy[*corev1.ResourceQuota] {
	return &typedStrategy[*corev1.ResourceQuota]{
		prepareCreate:  func(q *corev1.ResourceQuota) { q.Status = corev1.ResourceQuotaStatus{} },
		prepareUpdate:  func(q, old *corev1.ResourceQuota) { q.Status = old.Status },
		validate:       ValidateResourceQuota,
		validateUpdate: ValidateResourceQuotaUpdate,
		// As in Kubernetes, a PUT without a resourceVersion is accepted; the quota controller and
		// admission always name one, so their accounting stays compare-and-swap.
		unconditional: true,
		resetFields:   []string{"status"},
	}
}

func newResourceQuotaStatusStrategy() *typedStatusStrategy[*corev1.ResourceQuota] {
	return &typedStatusStrategy[*corev1.ResourceQuota]{
		prepareUpdate:  func(q, old *corev1.ResourceQuota) { q.Spec = old.Spec },
		validateUpdate: ValidateResourceQuotaStatusUpdate,
		resetFields:    []string{"spec"},
	}
}

// --- persistent volumes and claims ---

func newPersistentVolumeStrategy() *typedStrategy[*corev1.PersistentVolume] {
	return &typedStrategy[*corev1.PersistentVolume]{
		prepareCreate: func(pv *corev1.PersistentVolume) {
			pv.Status = corev1.PersistentVolumeStatus{Phase: corev1.VolumePending}
		},
		prepareUpdate:  func(pv, old *corev1.PersistentVolume) { pv.Status = old.Status },
		validate:       ValidatePersistentVolume,
		validateUpdate: ValidatePersistentVolumeUpdate,
		unconditional:  true,
		resetFields:    []string{"status"},
	}
}

func newPersistentVolumeStatusStrategy() *typedStatusStrategy[*corev1.PersistentVolume] {
	return &typedStatusStrategy[*corev1.PersistentVolume]{
		prepareUpdate:  func(pv, old *corev1.PersistentVolume) { pv.Spec = old.Spec },
		validateUpdate: ValidatePersistentVolumeStatusUpdate,
		resetFields:    []string{"spec"},
	}
}

func newPersistentVolumeClaimStrategy() *typedStrategy[*corev1.PersistentVolumeClaim] {
	return &typedStrategy[*corev1.PersistentVolumeClaim]{
		prepareCreate: func(pvc *corev1.PersistentVolumeClaim) {
			pvc.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}
		},
		prepareUpdate:  func(pvc, old *corev1.PersistentVolumeClaim) { pvc.Status = old.Status },
		validate:       ValidatePersistentVolumeClaim,
		validateUpdate: ValidatePersistentVolumeClaimUpdate,
		unconditional:  true,
		resetFields:    []string{"status"},
	}
}

func newPersistentVolumeClaimStatusStrategy() *typedStatusStrategy[*corev1.PersistentVolumeClaim] {
	return &typedStatusStrategy[*corev1.PersistentVolumeClaim]{
		prepareUpdate:  func(pvc, old *corev1.PersistentVolumeClaim) { pvc.Spec = old.Spec },
		validateUpdate: ValidatePersistentVolumeClaimStatusUpdate,
		resetFields:    []string{"spec"},
	}
}

// --- pods/ephemeralcontainers and pods/resize ---

// podSubresourceStrategy is a pods subresource that changes one part of the spec (ephemeral
// containers, container resources): keep takes that part from the request into a copy of the stored
// pod; the generation moves on as for any spec change.
type podSubresourceStrategy struct {
	keep     func(pod, old *corev1.Pod)
	validate func(pod, old *corev1.Pod) field.ErrorList
}

var _ registry.SubresourceStrategy = podSubresourceStrategy{}

func (s podSubresourceStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	pod, ok1 := obj.(*corev1.Pod)
	prev, ok2 := old.(*corev1.Pod)
	if !ok1 || !ok2 {
		return
	}
	s.keep(pod, prev)
	bumpGenerationOnSpecChange(pod, prev, pod.Spec, prev.Spec)
}

func (s podSubresourceStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	pod, ok1 := obj.(*corev1.Pod)
	prev, ok2 := old.(*corev1.Pod)
	if !ok1 || !ok2 {
		return wrongType(obj)
	}
	return s.validate(pod, prev)
}

// podEphemeralContainersStrategy serves pods/ephemeralcontainers: only spec.ephemeralContainers of
// the request is kept, as Kubernetes does, so nothing else can change through it.
func podEphemeralContainersStrategy() podSubresourceStrategy {
	return podSubresourceStrategy{
		keep: func(pod, old *corev1.Pod) {
			next := old.DeepCopy()
			next.Name, next.Namespace, next.ResourceVersion, next.UID = pod.Name, pod.Namespace, pod.ResourceVersion, pod.UID
			next.Spec.EphemeralContainers = pod.Spec.EphemeralContainers
			*pod = *next
		},
		validate: ValidatePodEphemeralContainersUpdate,
	}
}

// podResizeStrategy serves pods/resize: only the containers' resources and resizePolicy are kept.
// The kubelet reports the outcome in the PodResizePending and PodResizeInProgress conditions.
func podResizeStrategy() podSubresourceStrategy {
	return podSubresourceStrategy{keep: PrepareResize, validate: ValidatePodResize}
}

// --- bindings ---

// newBindingStrategy validates a Binding as Kubernetes' ValidatePodBinding does; the API server
// applies it to the named pod instead of storing it.
func newBindingStrategy() *typedStrategy[*corev1.Binding] {
	return &typedStrategy[*corev1.Binding]{
		validate:       ValidateBinding,
		validateUpdate: func(b, _ *corev1.Binding) field.ErrorList { return ValidateBinding(b) },
	}
}

// ValidateBinding checks that a Binding names a node: target.kind is Node or empty, target.name set.
func ValidateBinding(b *corev1.Binding) field.ErrorList {
	var errs field.ErrorList
	if b.Target.Kind != "" && b.Target.Kind != "Node" {
		errs = append(errs, field.NotSupported(field.NewPath("target", "kind"), b.Target.Kind, []string{"Node", "<empty>"}))
	}
	if b.Target.Name == "" {
		errs = append(errs, field.Required(field.NewPath("target", "name"), ""))
	}
	return errs
}
