package apps

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/registry/core"
	"github.com/skiff-sh/skiff/internal/registry/validationutil"
)

const (
	defaultRevisionHistoryLimit    = 10
	defaultProgressDeadlineSeconds = 600
)

// RegisterDefaults registers the apps/v1 defaulting functions on s, with the core registry's
// pod-template defaults (CorePodTemplate) applied to templates after the workload's own defaults.
func RegisterDefaults(s *runtime.Scheme) error { return RegisterDefaultsWith(s, CorePodTemplate()) }

// RegisterDefaultsWith is RegisterDefaults with other pod-template hooks (pod may be zero: no
// template defaults).
func RegisterDefaultsWith(s *runtime.Scheme, pod validationutil.PodTemplate) error {
	if s == nil {
		return fmt.Errorf("register apps/v1 defaults: nil scheme")
	}
	s.AddTypeDefaultingFunc(&appsv1.Deployment{}, func(o any) { DefaultDeployment(o.(*appsv1.Deployment), pod) })
	s.AddTypeDefaultingFunc(&appsv1.DeploymentList{}, func(o any) {
		for i := range o.(*appsv1.DeploymentList).Items {
			DefaultDeployment(&o.(*appsv1.DeploymentList).Items[i], pod)
		}
	})
	s.AddTypeDefaultingFunc(&appsv1.ReplicaSet{}, func(o any) { DefaultReplicaSet(o.(*appsv1.ReplicaSet), pod) })
	s.AddTypeDefaultingFunc(&appsv1.ReplicaSetList{}, func(o any) {
		for i := range o.(*appsv1.ReplicaSetList).Items {
			DefaultReplicaSet(&o.(*appsv1.ReplicaSetList).Items[i], pod)
		}
	})
	s.AddTypeDefaultingFunc(&appsv1.StatefulSet{}, func(o any) { DefaultStatefulSet(o.(*appsv1.StatefulSet), pod) })
	s.AddTypeDefaultingFunc(&appsv1.StatefulSetList{}, func(o any) {
		for i := range o.(*appsv1.StatefulSetList).Items {
			DefaultStatefulSet(&o.(*appsv1.StatefulSetList).Items[i], pod)
		}
	})
	s.AddTypeDefaultingFunc(&appsv1.DaemonSet{}, func(o any) { DefaultDaemonSet(o.(*appsv1.DaemonSet), pod) })
	s.AddTypeDefaultingFunc(&appsv1.DaemonSetList{}, func(o any) {
		for i := range o.(*appsv1.DaemonSetList).Items {
			DefaultDaemonSet(&o.(*appsv1.DaemonSetList).Items[i], pod)
		}
	})
	return nil
}

// DefaultDeployment sets replicas 1, a RollingUpdate strategy of 25%/25%, revisionHistoryLimit 10,
// progressDeadlineSeconds 600, then the pod-template defaults.
func DefaultDeployment(d *appsv1.Deployment, pod validationutil.PodTemplate) {
	if d.Spec.Replicas == nil {
		d.Spec.Replicas = ptr.To[int32](1)
	}
	st := &d.Spec.Strategy
	if st.Type == "" {
		st.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if st.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if st.RollingUpdate == nil {
			st.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		if st.RollingUpdate.MaxUnavailable == nil {
			st.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("25%"))
		}
		if st.RollingUpdate.MaxSurge == nil {
			st.RollingUpdate.MaxSurge = ptr.To(intstr.FromString("25%"))
		}
	}
	if d.Spec.RevisionHistoryLimit == nil {
		d.Spec.RevisionHistoryLimit = ptr.To[int32](defaultRevisionHistoryLimit)
	}
	if d.Spec.ProgressDeadlineSeconds == nil {
		d.Spec.ProgressDeadlineSeconds = ptr.To[int32](defaultProgressDeadlineSeconds)
	}
	pod.ApplyDefaults(&d.Spec.Template)
}

// DefaultReplicaSet sets replicas 1, then the pod-template defaults.
func DefaultReplicaSet(rs *appsv1.ReplicaSet, pod validationutil.PodTemplate) {
	if rs.Spec.Replicas == nil {
		rs.Spec.Replicas = ptr.To[int32](1)
	}
	pod.ApplyDefaults(&rs.Spec.Template)
}

// DefaultStatefulSet sets podManagementPolicy OrderedReady, a RollingUpdate strategy with partition
// 0 and maxUnavailable 1, the Retain/Retain claim retention policy, replicas 1,
// revisionHistoryLimit 10, the claim templates' volumeMode and phase, then the pod-template defaults.
func DefaultStatefulSet(ss *appsv1.StatefulSet, pod validationutil.PodTemplate) {
	if ss.Spec.PodManagementPolicy == "" {
		ss.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	us := &ss.Spec.UpdateStrategy
	if us.Type == "" {
		us.Type = appsv1.RollingUpdateStatefulSetStrategyType
		if us.RollingUpdate == nil {
			us.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
	}
	// Kubernetes fills partition and maxUnavailable only when rollingUpdate is present.
	if us.Type == appsv1.RollingUpdateStatefulSetStrategyType && us.RollingUpdate != nil {
		if us.RollingUpdate.Partition == nil {
			us.RollingUpdate.Partition = ptr.To[int32](0)
		}
		if us.RollingUpdate.MaxUnavailable == nil {
			us.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(1))
		}
	}
	if ss.Spec.PersistentVolumeClaimRetentionPolicy == nil {
		ss.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	rp := ss.Spec.PersistentVolumeClaimRetentionPolicy
	if rp.WhenDeleted == "" {
		rp.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if rp.WhenScaled == "" {
		rp.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if ss.Spec.Replicas == nil {
		ss.Spec.Replicas = ptr.To[int32](1)
	}
	if ss.Spec.RevisionHistoryLimit == nil {
		ss.Spec.RevisionHistoryLimit = ptr.To[int32](defaultRevisionHistoryLimit)
	}
	for i := range ss.Spec.VolumeClaimTemplates {
		core.DefaultPersistentVolumeClaim(&ss.Spec.VolumeClaimTemplates[i])
	}
	pod.ApplyDefaults(&ss.Spec.Template)
}

// DefaultDaemonSet sets a RollingUpdate strategy with maxUnavailable 1 and maxSurge 0,
// revisionHistoryLimit 10, then the pod-template defaults.
func DefaultDaemonSet(ds *appsv1.DaemonSet, pod validationutil.PodTemplate) {
	us := &ds.Spec.UpdateStrategy
	if us.Type == "" {
		us.Type = appsv1.RollingUpdateDaemonSetStrategyType
	}
	if us.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if us.RollingUpdate == nil {
			us.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
		}
		if us.RollingUpdate.MaxUnavailable == nil {
			us.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(1))
		}
		if us.RollingUpdate.MaxSurge == nil {
			us.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(0))
		}
	}
	if ds.Spec.RevisionHistoryLimit == nil {
		ds.Spec.RevisionHistoryLimit = ptr.To[int32](defaultRevisionHistoryLimit)
	}
	pod.ApplyDefaults(&ds.Spec.Template)
}
