package apps

import (
	"context"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/registry/core"
	vu "github.com/skiff-sh/skiff/internal/registry/validationutil"
)

var categoryAll = []string{"all"}

// Resources returns the apps/v1 resources, validating pod templates with the core registry's rules.
func Resources() []*registry.Resource { return ResourcesWith(CorePodTemplate()) }

// CorePodTemplate is the core registry's pod-template defaulting and validation, the hooks
// Resources and RegisterDefaults use.
func CorePodTemplate() vu.PodTemplate {
	return vu.PodTemplate{Default: core.DefaultPodTemplateSpec, Validate: core.ValidatePodTemplateSpec}
}

// ResourcesWith is Resources with other pod-template hooks (tests use simplified ones).
func ResourcesWith(pod vu.PodTemplate) []*registry.Resource {
	gv := appsv1.SchemeGroupVersion
	return []*registry.Resource{
		{
			GroupVersion: gv, Kind: "Deployment", ListKind: "DeploymentList", Plural: "deployments", Singular: "deployment",
			ShortNames: []string{"deploy"}, Categories: categoryAll, Namespaced: true,
			New:     func() runtime.Object { return &appsv1.Deployment{} },
			NewList: func() runtime.Object { return &appsv1.DeploymentList{} },
			Strategy: &vu.Strategy[*appsv1.Deployment]{
				APIVersion:  gv.String(),
				Namespaced:  true,
				ClearStatus: func(d *appsv1.Deployment) { d.Status = appsv1.DeploymentStatus{} },
				KeepStatus:  func(d, old *appsv1.Deployment) { d.Status = old.Status },
				// Annotations count as spec: the controller copies them to the ReplicaSets, so it must
				// see their changes through observedGeneration, as in Kubernetes.
				SpecEqual: func(d, old *appsv1.Deployment) bool {
					return apiequality.Semantic.DeepEqual(d.Spec, old.Spec) && apiequality.Semantic.DeepEqual(d.Annotations, old.Annotations)
				},
				ValidateObject: func(d *appsv1.Deployment) field.ErrorList { return ValidateDeployment(d, pod) },
				ValidateChange: func(d, old *appsv1.Deployment) field.ErrorList {
					return validateSelectorUnchanged(d.Spec.Selector, old.Spec.Selector)
				},
				UnconditionalUpdate: true,
			},
			Status: &vu.StatusStrategy[*appsv1.Deployment]{
				APIVersion: gv.String(),
				KeepSpec:   func(d, old *appsv1.Deployment) { d.Spec = old.Spec },
				Metadata:   vu.StatusResetsLabels,
				ValidateStatus: func(d, old *appsv1.Deployment) field.ErrorList {
					return ValidateDeploymentStatus(&d.Status, &old.Status)
				},
			},
			Scale: vu.ScaleAccessor(vu.ScaleFuncs[*appsv1.Deployment]{
				SpecReplicas:   func(d *appsv1.Deployment) int32 { return replicas(d.Spec.Replicas) },
				StatusReplicas: func(d *appsv1.Deployment) int32 { return d.Status.Replicas },
				Selector:       func(d *appsv1.Deployment) *metav1.LabelSelector { return d.Spec.Selector },
				SetReplicas:    func(d *appsv1.Deployment, n int32) { d.Spec.Replicas = &n },
			}),
		},
		{
			GroupVersion: gv, Kind: "ReplicaSet", ListKind: "ReplicaSetList", Plural: "replicasets", Singular: "replicaset",
			ShortNames: []string{"rs"}, Categories: categoryAll, Namespaced: true,
			New:     func() runtime.Object { return &appsv1.ReplicaSet{} },
			NewList: func() runtime.Object { return &appsv1.ReplicaSetList{} },
			Strategy: &vu.Strategy[*appsv1.ReplicaSet]{
				APIVersion:     gv.String(),
				Namespaced:     true,
				ClearStatus:    func(rs *appsv1.ReplicaSet) { rs.Status = appsv1.ReplicaSetStatus{} },
				KeepStatus:     func(rs, old *appsv1.ReplicaSet) { rs.Status = old.Status },
				SpecEqual:      func(rs, old *appsv1.ReplicaSet) bool { return apiequality.Semantic.DeepEqual(rs.Spec, old.Spec) },
				ValidateObject: func(rs *appsv1.ReplicaSet) field.ErrorList { return ValidateReplicaSet(rs, pod) },
				ValidateChange: func(rs, old *appsv1.ReplicaSet) field.ErrorList {
					return validateSelectorUnchanged(rs.Spec.Selector, old.Spec.Selector)
				},
				UnconditionalUpdate: true,
			},
			Status: &vu.StatusStrategy[*appsv1.ReplicaSet]{
				APIVersion:     gv.String(),
				KeepSpec:       func(rs, old *appsv1.ReplicaSet) { rs.Spec = old.Spec },
				ValidateStatus: func(rs, _ *appsv1.ReplicaSet) field.ErrorList { return ValidateReplicaSetStatus(&rs.Status) },
			},
			Scale: vu.ScaleAccessor(vu.ScaleFuncs[*appsv1.ReplicaSet]{
				SpecReplicas:   func(rs *appsv1.ReplicaSet) int32 { return replicas(rs.Spec.Replicas) },
				StatusReplicas: func(rs *appsv1.ReplicaSet) int32 { return rs.Status.Replicas },
				Selector:       func(rs *appsv1.ReplicaSet) *metav1.LabelSelector { return rs.Spec.Selector },
				SetReplicas:    func(rs *appsv1.ReplicaSet, n int32) { rs.Spec.Replicas = &n },
			}),
		},
		{
			GroupVersion: gv, Kind: "StatefulSet", ListKind: "StatefulSetList", Plural: "statefulsets", Singular: "statefulset",
			ShortNames: []string{"sts"}, Categories: categoryAll, Namespaced: true,
			New:     func() runtime.Object { return &appsv1.StatefulSet{} },
			NewList: func() runtime.Object { return &appsv1.StatefulSetList{} },
			Strategy: &vu.Strategy[*appsv1.StatefulSet]{
				APIVersion:     gv.String(),
				Namespaced:     true,
				ClearStatus:    func(ss *appsv1.StatefulSet) { ss.Status = appsv1.StatefulSetStatus{} },
				KeepStatus:     func(ss, old *appsv1.StatefulSet) { ss.Status = old.Status },
				SpecEqual:      func(ss, old *appsv1.StatefulSet) bool { return apiequality.Semantic.DeepEqual(ss.Spec, old.Spec) },
				ValidateObject: func(ss *appsv1.StatefulSet) field.ErrorList { return ValidateStatefulSet(ss, pod) },
				ValidateChange: func(ss, old *appsv1.StatefulSet) field.ErrorList {
					return append(validateSelectorUnchanged(ss.Spec.Selector, old.Spec.Selector), validateStatefulSetChange(ss, old)...)
				},
				UnconditionalUpdate: true,
			},
			Status: &vu.StatusStrategy[*appsv1.StatefulSet]{
				APIVersion: gv.String(),
				KeepSpec:   func(ss, old *appsv1.StatefulSet) { ss.Spec = old.Spec },
				ValidateStatus: func(ss, old *appsv1.StatefulSet) field.ErrorList {
					return ValidateStatefulSetStatus(&ss.Status, &old.Status)
				},
			},
			Scale: vu.ScaleAccessor(vu.ScaleFuncs[*appsv1.StatefulSet]{
				SpecReplicas:   func(ss *appsv1.StatefulSet) int32 { return replicas(ss.Spec.Replicas) },
				StatusReplicas: func(ss *appsv1.StatefulSet) int32 { return ss.Status.Replicas },
				Selector:       func(ss *appsv1.StatefulSet) *metav1.LabelSelector { return ss.Spec.Selector },
				SetReplicas:    func(ss *appsv1.StatefulSet, n int32) { ss.Spec.Replicas = &n },
			}),
		},
		{
			GroupVersion: gv, Kind: "DaemonSet", ListKind: "DaemonSetList", Plural: "daemonsets", Singular: "daemonset",
			ShortNames: []string{"ds"}, Categories: categoryAll, Namespaced: true,
			New:     func() runtime.Object { return &appsv1.DaemonSet{} },
			NewList: func() runtime.Object { return &appsv1.DaemonSetList{} },
			Strategy: &vu.Strategy[*appsv1.DaemonSet]{
				APIVersion:     gv.String(),
				Namespaced:     true,
				ClearStatus:    func(ds *appsv1.DaemonSet) { ds.Status = appsv1.DaemonSetStatus{} },
				KeepStatus:     func(ds, old *appsv1.DaemonSet) { ds.Status = old.Status },
				SpecEqual:      func(ds, old *appsv1.DaemonSet) bool { return apiequality.Semantic.DeepEqual(ds.Spec, old.Spec) },
				OnCreate:       func(_ context.Context, ds *appsv1.DaemonSet) { setTemplateGeneration(ds, nil) },
				OnUpdate:       func(_ context.Context, ds, old *appsv1.DaemonSet) { setTemplateGeneration(ds, old) },
				ValidateObject: func(ds *appsv1.DaemonSet) field.ErrorList { return ValidateDaemonSet(ds, pod) },
				ValidateChange: func(ds, old *appsv1.DaemonSet) field.ErrorList {
					return validateSelectorUnchanged(ds.Spec.Selector, old.Spec.Selector)
				},
				UnconditionalUpdate: true,
			},
			Status: &vu.StatusStrategy[*appsv1.DaemonSet]{
				APIVersion: gv.String(),
				KeepSpec:   func(ds, old *appsv1.DaemonSet) { ds.Spec = old.Spec },
				ValidateStatus: func(ds, old *appsv1.DaemonSet) field.ErrorList {
					return ValidateDaemonSetStatus(&ds.Status, &old.Status)
				},
			},
		},
		{
			GroupVersion: gv, Kind: "ControllerRevision", ListKind: "ControllerRevisionList", Plural: "controllerrevisions", Singular: "controllerrevision",
			Namespaced: true,
			New:        func() runtime.Object { return &appsv1.ControllerRevision{} },
			NewList:    func() runtime.Object { return &appsv1.ControllerRevisionList{} },
			Strategy: &vu.Strategy[*appsv1.ControllerRevision]{
				Namespaced:     true,
				ValidateObject: ValidateControllerRevision,
				ValidateChange: func(cr, old *appsv1.ControllerRevision) field.ErrorList {
					return vu.Immutable(cr.Data, old.Data, field.NewPath("data"))
				},
				UnconditionalUpdate: true,
			},
		},
	}
}

// templateGenerationAnnotation carries a DaemonSet's template generation in apps/v1, where the
// field no longer exists; Kubernetes still maintains it and older tooling reads it.
const templateGenerationAnnotation = "deprecated.daemonset.template.generation"

// setTemplateGeneration starts the template generation at 1 and bumps it when the template changes.
func setTemplateGeneration(ds, old *appsv1.DaemonSet) {
	gen := int64(1)
	if old != nil {
		prev, err := strconv.ParseInt(old.Annotations[templateGenerationAnnotation], 10, 64)
		if err != nil || prev < 1 {
			prev = 1
		}
		gen = prev
		if !apiequality.Semantic.DeepEqual(ds.Spec.Template, old.Spec.Template) {
			gen++
		}
	} else if cur, err := strconv.ParseInt(ds.Annotations[templateGenerationAnnotation], 10, 64); err == nil && cur > 1 {
		gen = cur
	}
	if ds.Annotations == nil {
		ds.Annotations = map[string]string{}
	}
	ds.Annotations[templateGenerationAnnotation] = strconv.FormatInt(gen, 10)
}
