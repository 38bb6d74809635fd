package storage

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// RegisterDefaults registers the storage.k8s.io/v1 defaulting functions on s, for the objects and
// their lists.
func RegisterDefaults(s *runtime.Scheme) error {
	if s == nil {
		return fmt.Errorf("register storage.k8s.io/v1 defaults: nil scheme")
	}
	s.AddTypeDefaultingFunc(&storagev1.StorageClass{}, func(o any) { DefaultStorageClass(o.(*storagev1.StorageClass)) })
	s.AddTypeDefaultingFunc(&storagev1.StorageClassList{}, func(o any) {
		l := o.(*storagev1.StorageClassList)
		for i := range l.Items {
			DefaultStorageClass(&l.Items[i])
		}
	})
	s.AddTypeDefaultingFunc(&storagev1.CSIDriver{}, func(o any) { DefaultCSIDriver(o.(*storagev1.CSIDriver)) })
	s.AddTypeDefaultingFunc(&storagev1.CSIDriverList{}, func(o any) {
		l := o.(*storagev1.CSIDriverList)
		for i := range l.Items {
			DefaultCSIDriver(&l.Items[i])
		}
	})
	return nil
}

// DefaultStorageClass sets reclaimPolicy Delete and volumeBindingMode Immediate, as Kubernetes does.
func DefaultStorageClass(sc *storagev1.StorageClass) {
	if sc.ReclaimPolicy == nil {
		sc.ReclaimPolicy = ptr.To(corev1.PersistentVolumeReclaimDelete)
	}
	if sc.VolumeBindingMode == nil {
		sc.VolumeBindingMode = ptr.To(storagev1.VolumeBindingImmediate)
	}
}

// DefaultCSIDriver fills the driver's capabilities the way Kubernetes does: attach required, no pod
// info on mount, no capacity tracking, fsGroup applied for ReadWriteOnce volumes with an fsType,
// persistent volumes only, no republish and no SELinux mount.
func DefaultCSIDriver(d *storagev1.CSIDriver) {
	if d.Spec.AttachRequired == nil {
		d.Spec.AttachRequired = ptr.To(true)
	}
	if d.Spec.PodInfoOnMount == nil {
		d.Spec.PodInfoOnMount = ptr.To(false)
	}
	if d.Spec.StorageCapacity == nil {
		d.Spec.StorageCapacity = ptr.To(false)
	}
	if d.Spec.FSGroupPolicy == nil {
		d.Spec.FSGroupPolicy = ptr.To(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy)
	}
	if len(d.Spec.VolumeLifecycleModes) == 0 {
		d.Spec.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	}
	if d.Spec.RequiresRepublish == nil {
		d.Spec.RequiresRepublish = ptr.To(false)
	}
	if d.Spec.SELinuxMount == nil {
		d.Spec.SELinuxMount = ptr.To(false)
	}
}
