package printers

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// groupGoldenCases are the tables of the groups served since issue 11 (storage, node, networking,
// flowcontrol, autoscaling and the later core resources).
func groupGoldenCases() []goldenCase {
	group := func(g, r string) schema.GroupResource { return schema.GroupResource{Group: g, Resource: r} }
	return []goldenCase{
		{"storageclasses.storage.k8s.io", group("storage.k8s.io", "storageclasses"), goldenStorageClasses()},
		{"csidrivers.storage.k8s.io", group("storage.k8s.io", "csidrivers"), goldenCSIDrivers()},
		{"csinodes.storage.k8s.io", group("storage.k8s.io", "csinodes"), goldenCSINodes()},
		{"csistoragecapacities.storage.k8s.io", group("storage.k8s.io", "csistoragecapacities"), goldenCSIStorageCapacities()},
		{"volumeattachments.storage.k8s.io", group("storage.k8s.io", "volumeattachments"), goldenVolumeAttachments()},
		{"runtimeclasses.node.k8s.io", group("node.k8s.io", "runtimeclasses"), goldenRuntimeClasses()},
	}
}

func goldenStorageClasses() []runtime.Object {
	return []runtime.Object{
		&storagev1.StorageClass{
			ObjectMeta:  metav1.ObjectMeta{Name: "local-path", CreationTimestamp: ago(40 * 24 * time.Hour), Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
			Provisioner: "rancher.io/local-path", ReclaimPolicy: ptr.To(corev1.PersistentVolumeReclaimDelete),
			VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
		},
		&storagev1.StorageClass{
			ObjectMeta:  metav1.ObjectMeta{Name: "gp3-retain", CreationTimestamp: ago(2 * time.Hour)},
			Provisioner: "ebs.csi.aws.com", ReclaimPolicy: ptr.To(corev1.PersistentVolumeReclaimRetain),
			VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate), AllowVolumeExpansion: ptr.To(true),
		},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "undefaulted", CreationTimestamp: ago(time.Minute)}, Provisioner: "example.com/nfs"},
	}
}

func goldenCSIDrivers() []runtime.Object {
	return []runtime.Object{
		&storagev1.CSIDriver{
			ObjectMeta: metav1.ObjectMeta{Name: "ebs.csi.aws.com", CreationTimestamp: ago(10 * 24 * time.Hour)},
			Spec: storagev1.CSIDriverSpec{
				AttachRequired: ptr.To(true), PodInfoOnMount: ptr.To(false), StorageCapacity: ptr.To(false), RequiresRepublish: ptr.To(false),
				VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent},
			},
		},
		&storagev1.CSIDriver{
			ObjectMeta: metav1.ObjectMeta{Name: "secrets-store.csi.k8s.io", CreationTimestamp: ago(3 * time.Hour)},
			Spec: storagev1.CSIDriverSpec{
				AttachRequired: ptr.To(false), PodInfoOnMount: ptr.To(true), StorageCapacity: ptr.To(true), RequiresRepublish: ptr.To(true),
				TokenRequests:        []storagev1.TokenRequest{{Audience: "api://vault"}, {Audience: ""}},
				VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral},
			},
		},
		&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "undefaulted.example.com", CreationTimestamp: ago(time.Minute)}},
	}
}

func goldenCSINodes() []runtime.Object {
	return []runtime.Object{
		&storagev1.CSINode{
			ObjectMeta: metav1.ObjectMeta{Name: "worker-1", CreationTimestamp: ago(5 * 24 * time.Hour)},
			Spec:       storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "ebs.csi.aws.com", NodeID: "i-1"}, {Name: "efs.csi.aws.com", NodeID: "i-1"}}},
		},
		&storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "worker-2", CreationTimestamp: ago(time.Hour)}},
	}
}

func goldenCSIStorageCapacities() []runtime.Object {
	return []runtime.Object{
		&storagev1.CSIStorageCapacity{
			ObjectMeta:       metav1.ObjectMeta{Name: "csisc-7x2kq", Namespace: "kube-system", CreationTimestamp: ago(time.Hour)},
			StorageClassName: "local-lvm", Capacity: ptr.To(resource.MustParse("512Gi")),
		},
		&storagev1.CSIStorageCapacity{ObjectMeta: metav1.ObjectMeta{Name: "csisc-unset", Namespace: "kube-system"}, StorageClassName: "local-lvm"},
	}
}

func goldenVolumeAttachments() []runtime.Object {
	return []runtime.Object{
		&storagev1.VolumeAttachment{
			ObjectMeta: metav1.ObjectMeta{Name: "csi-3b1f0c9e", CreationTimestamp: ago(20 * time.Minute)},
			Spec: storagev1.VolumeAttachmentSpec{
				Attacher: "ebs.csi.aws.com", NodeName: "worker-1",
				Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pvc-8d2f")},
			},
			Status: storagev1.VolumeAttachmentStatus{Attached: true},
		},
		&storagev1.VolumeAttachment{
			ObjectMeta: metav1.ObjectMeta{Name: "csi-inline", CreationTimestamp: ago(30 * time.Second)},
			Spec: storagev1.VolumeAttachmentSpec{
				Attacher: "ebs.csi.aws.com", NodeName: "worker-2",
				Source: storagev1.VolumeAttachmentSource{InlineVolumeSpec: &corev1.PersistentVolumeSpec{}},
			},
		},
	}
}

func goldenRuntimeClasses() []runtime.Object {
	return []runtime.Object{
		&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor", CreationTimestamp: ago(8 * 24 * time.Hour)}, Handler: "runsc"},
		&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "kata", CreationTimestamp: ago(90 * time.Second)}, Handler: "kata-qemu"},
	}
}
