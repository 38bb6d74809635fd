package storage

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/registry"
	"github.com/skiff-sh/skiff/internal/registry/validationutil/errtest"
)

func resourceNamed(t *testing.T, plural string) *registry.Resource {
	t.Helper()
	for _, r := range Resources() {
		if r.Plural == plural {
			return r
		}
	}
	t.Fatalf("no resource %q", plural)
	return nil
}

func storageClass(mods ...func(*storagev1.StorageClass)) *storagev1.StorageClass {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: "ebs.csi.aws.com", Parameters: map[string]string{"type": "gp3"}}
	DefaultStorageClass(sc)
	for _, m := range mods {
		m(sc)
	}
	return sc
}

func TestStorageClassDefaults(t *testing.T) {
	s := runtime.NewScheme()
	if err := RegisterDefaults(s); err != nil {
		t.Fatal(err)
	}
	sc := &storagev1.StorageClass{}
	s.Default(sc)
	if *sc.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete || *sc.VolumeBindingMode != storagev1.VolumeBindingImmediate {
		t.Fatalf("defaults = %v %v", *sc.ReclaimPolicy, *sc.VolumeBindingMode)
	}
	d := &storagev1.CSIDriver{}
	s.Default(d)
	if !*d.Spec.AttachRequired || *d.Spec.PodInfoOnMount || *d.Spec.FSGroupPolicy != storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy ||
		len(d.Spec.VolumeLifecycleModes) != 1 || d.Spec.VolumeLifecycleModes[0] != storagev1.VolumeLifecyclePersistent {
		t.Fatalf("csidriver defaults = %+v", d.Spec)
	}
}

func TestValidateStorageClass(t *testing.T) {
	tests := []struct {
		name string
		obj  *storagev1.StorageClass
		want *errtest.Want
	}{
		{"valid", storageClass(), nil},
		{"topology", storageClass(func(sc *storagev1.StorageClass) {
			sc.AllowedTopologies = []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: "topology.kubernetes.io/zone", Values: []string{"a"}}}}}
		}), nil},
		{"no provisioner", storageClass(func(sc *storagev1.StorageClass) { sc.Provisioner = "" }), &errtest.Want{Field: "provisioner", Type: field.ErrorTypeRequired}},
		{"bad provisioner", storageClass(func(sc *storagev1.StorageClass) { sc.Provisioner = "a/b/c" }), &errtest.Want{Field: "provisioner", Type: field.ErrorTypeInvalid, Detail: "must consist of alphanumeric characters"}},
		{"empty parameter key", storageClass(func(sc *storagev1.StorageClass) { sc.Parameters = map[string]string{"": "x"} }), &errtest.Want{Field: "parameters", Type: field.ErrorTypeInvalid, Detail: "field can not be empty."}},
		{"recycle", storageClass(func(sc *storagev1.StorageClass) { sc.ReclaimPolicy = ptr.To(corev1.PersistentVolumeReclaimRecycle) }), &errtest.Want{Field: "reclaimPolicy", Type: field.ErrorTypeNotSupported}},
		{"no binding mode", storageClass(func(sc *storagev1.StorageClass) { sc.VolumeBindingMode = nil }), &errtest.Want{Field: "volumeBindingMode", Type: field.ErrorTypeRequired}},
		{"bad binding mode", storageClass(func(sc *storagev1.StorageClass) { sc.VolumeBindingMode = ptr.To(storagev1.VolumeBindingMode("Later")) }), &errtest.Want{Field: "volumeBindingMode", Type: field.ErrorTypeNotSupported}},
		{"duplicate topology", storageClass(func(sc *storagev1.StorageClass) {
			term := corev1.TopologySelectorTerm{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: "zone", Values: []string{"a"}}}}
			sc.AllowedTopologies = []corev1.TopologySelectorTerm{term, term}
		}), &errtest.Want{Field: "allowedTopologies[1].matchLabelExpressions", Type: field.ErrorTypeDuplicate}},
		{"topology without values", storageClass(func(sc *storagev1.StorageClass) {
			sc.AllowedTopologies = []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: "zone"}}}}
		}), &errtest.Want{Field: "allowedTopologies[0].matchLabelExpressions[0].values", Type: field.ErrorTypeRequired}},
		{"namespaced", storageClass(func(sc *storagev1.StorageClass) { sc.Namespace = "default" }), &errtest.Want{Field: "metadata.namespace", Type: field.ErrorTypeForbidden}},
	}
	r := resourceNamed(t, "storageclasses")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errtest.Check(t, r.Strategy.Validate(context.Background(), tt.obj), tt.want)
		})
	}
}

func TestStorageClassUpdate(t *testing.T) {
	r := resourceNamed(t, "storageclasses")
	if r.ShortNames[0] != "sc" || r.Namespaced || r.Status != nil {
		t.Fatalf("resource = %+v", r)
	}
	old := storageClass(func(sc *storagev1.StorageClass) { sc.ResourceVersion = "1" })
	tests := []struct {
		name string
		mod  func(*storagev1.StorageClass)
		want *errtest.Want
	}{
		{"expansion may change", func(sc *storagev1.StorageClass) { sc.AllowVolumeExpansion = ptr.To(true) }, nil},
		{"parameters", func(sc *storagev1.StorageClass) { sc.Parameters = map[string]string{"type": "io2"} }, &errtest.Want{Field: "parameters", Type: field.ErrorTypeForbidden, Detail: "updates to parameters are forbidden."}},
		{"provisioner", func(sc *storagev1.StorageClass) { sc.Provisioner = "other.csi" }, &errtest.Want{Field: "provisioner", Type: field.ErrorTypeForbidden, Detail: "updates to provisioner are forbidden."}},
		{"reclaim", func(sc *storagev1.StorageClass) { sc.ReclaimPolicy = ptr.To(corev1.PersistentVolumeReclaimRetain) }, &errtest.Want{Field: "reclaimPolicy", Type: field.ErrorTypeForbidden, Detail: "updates to reclaimPolicy are forbidden."}},
		{"binding", func(sc *storagev1.StorageClass) {
			sc.VolumeBindingMode = ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)
		}, &errtest.Want{Field: "volumeBindingMode", Type: field.ErrorTypeInvalid, Detail: "field is immutable"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			upd := old.DeepCopy()
			tt.mod(upd)
			errtest.Check(t, r.Strategy.ValidateUpdate(context.Background(), upd, old), tt.want)
		})
	}
}

func csiDriver(mods ...func(*storagev1.CSIDriver)) *storagev1.CSIDriver {
	d := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "ebs.csi.aws.com"}}
	DefaultCSIDriver(d)
	for _, m := range mods {
		m(d)
	}
	return d
}

func TestValidateCSIDriver(t *testing.T) {
	tests := []struct {
		name string
		obj  *storagev1.CSIDriver
		want *errtest.Want
	}{
		{"valid", csiDriver(), nil},
		{"token requests", csiDriver(func(d *storagev1.CSIDriver) {
			d.Spec.TokenRequests = []storagev1.TokenRequest{{Audience: "a", ExpirationSeconds: ptr.To[int64](3600)}, {Audience: ""}}
		}), nil},
		{"attach unset", csiDriver(func(d *storagev1.CSIDriver) { d.Spec.AttachRequired = nil }), &errtest.Want{Field: "spec.attachedRequired", Type: field.ErrorTypeRequired}},
		{"bad fsgroup policy", csiDriver(func(d *storagev1.CSIDriver) { d.Spec.FSGroupPolicy = ptr.To(storagev1.FSGroupPolicy("Always")) }), &errtest.Want{Field: "spec.fsGroupPolicy", Type: field.ErrorTypeNotSupported}},
		{"duplicate audience", csiDriver(func(d *storagev1.CSIDriver) {
			d.Spec.TokenRequests = []storagev1.TokenRequest{{Audience: "a"}, {Audience: "a"}}
		}), &errtest.Want{Field: "spec.tokenRequests[1].audience", Type: field.ErrorTypeDuplicate}},
		{"short token", csiDriver(func(d *storagev1.CSIDriver) {
			d.Spec.TokenRequests = []storagev1.TokenRequest{{Audience: "a", ExpirationSeconds: ptr.To[int64](60)}}
		}), &errtest.Want{Field: "spec.tokenRequests[0].expirationSeconds", Type: field.ErrorTypeInvalid, Detail: "may not specify a duration less than 10 minutes"}},
		{"bad mode", csiDriver(func(d *storagev1.CSIDriver) { d.Spec.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{"Shared"} }), &errtest.Want{Field: "spec.volumeLifecycleModes", Type: field.ErrorTypeNotSupported}},
	}
	r := resourceNamed(t, "csidrivers")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errtest.Check(t, r.Strategy.Validate(context.Background(), tt.obj), tt.want)
		})
	}
	old := csiDriver(func(d *storagev1.CSIDriver) { d.ResourceVersion = "1"; d.Generation = 1 })
	upd := old.DeepCopy()
	upd.Spec.AttachRequired = ptr.To(false)
	errtest.Check(t, r.Strategy.ValidateUpdate(context.Background(), upd, old), &errtest.Want{Field: "spec.attachedRequired", Type: field.ErrorTypeInvalid, Detail: "field is immutable"})
	upd = old.DeepCopy()
	upd.Spec.PodInfoOnMount = ptr.To(true)
	r.Strategy.PrepareForUpdate(context.Background(), upd, old)
	errtest.Check(t, r.Strategy.ValidateUpdate(context.Background(), upd, old), nil)
	if upd.Generation != 2 {
		t.Fatalf("generation = %d, want 2", upd.Generation)
	}
}

func TestValidateCSINode(t *testing.T) {
	node := func(drivers ...storagev1.CSINodeDriver) *storagev1.CSINode {
		return &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "worker-1", ResourceVersion: "1"}, Spec: storagev1.CSINodeSpec{Drivers: drivers}}
	}
	ebs := storagev1.CSINodeDriver{Name: "ebs.csi.aws.com", NodeID: "i-123", TopologyKeys: []string{"topology.ebs.csi.aws.com/zone"}, Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](25)}}
	tests := []struct {
		name string
		obj  *storagev1.CSINode
		want *errtest.Want
	}{
		{"valid", node(ebs), nil},
		{"no drivers", node(), nil},
		{"no node id", node(storagev1.CSINodeDriver{Name: "a.b"}), &errtest.Want{Field: "spec.drivers[0].nodeID", Type: field.ErrorTypeRequired}},
		{"long node id", node(storagev1.CSINodeDriver{Name: "a.b", NodeID: strings.Repeat("x", 193)}), &errtest.Want{Field: "spec.drivers[0].nodeID", Type: field.ErrorTypeInvalid, Detail: "must be 192 characters or less"}},
		{"duplicate", node(ebs, ebs), &errtest.Want{Field: "spec.drivers[1].name", Type: field.ErrorTypeDuplicate}},
		{"bad name", node(storagev1.CSINodeDriver{Name: "Bad_Name", NodeID: "x"}), &errtest.Want{Field: "spec.drivers[0].name", Type: field.ErrorTypeInvalid}},
		{"negative count", node(storagev1.CSINodeDriver{Name: "a.b", NodeID: "x", Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](-1)}}), &errtest.Want{Field: "spec.drivers[0].allocatable.count", Type: field.ErrorTypeInvalid}},
		{"bad topology key", node(storagev1.CSINodeDriver{Name: "a.b", NodeID: "x", TopologyKeys: []string{"a/b/c"}}), &errtest.Want{Field: "spec.drivers[0]", Type: field.ErrorTypeInvalid}},
	}
	r := resourceNamed(t, "csinodes")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errtest.Check(t, r.Strategy.Validate(context.Background(), tt.obj), tt.want)
		})
	}
	old := node(ebs)
	changed := ebs
	changed.NodeID = "i-456"
	errtest.Check(t, r.Strategy.ValidateUpdate(context.Background(), node(changed), old), &errtest.Want{Field: "spec.drivers", Type: field.ErrorTypeInvalid, Detail: "field is immutable"})
	errtest.Check(t, r.Strategy.ValidateUpdate(context.Background(), node(ebs, storagev1.CSINodeDriver{Name: "c.d", NodeID: "n"}), old), nil)
}

func TestValidateCSIStorageCapacity(t *testing.T) {
	capacity := func(mods ...func(*storagev1.CSIStorageCapacity)) *storagev1.CSIStorageCapacity {
		c := &storagev1.CSIStorageCapacity{
			ObjectMeta:       metav1.ObjectMeta{Name: "csisc-abc", Namespace: "kube-system", ResourceVersion: "1"},
			NodeTopology:     &metav1.LabelSelector{MatchLabels: map[string]string{"topology.kubernetes.io/zone": "a"}},
			StorageClassName: "fast",
			Capacity:         ptr.To(resource.MustParse("100Gi")),
		}
		for _, m := range mods {
			m(c)
		}
		return c
	}
	r := resourceNamed(t, "csistoragecapacities")
	if !r.Namespaced {
		t.Fatal("csistoragecapacities are namespaced")
	}
	ctx := context.Background()
	errtest.Check(t, r.Strategy.Validate(ctx, capacity()), nil)
	errtest.Check(t, r.Strategy.Validate(ctx, capacity(func(c *storagev1.CSIStorageCapacity) { c.StorageClassName = "" })), &errtest.Want{Field: "storageClassName", Type: field.ErrorTypeInvalid})
	errtest.Check(t, r.Strategy.Validate(ctx, capacity(func(c *storagev1.CSIStorageCapacity) { c.Capacity = ptr.To(resource.MustParse("-1")) })), &errtest.Want{Field: "capacity", Type: field.ErrorTypeInvalid, Detail: "must be greater than or equal to 0"})
	errtest.Check(t, r.Strategy.Validate(ctx, capacity(func(c *storagev1.CSIStorageCapacity) { c.Namespace = "" })), &errtest.Want{Field: "metadata.namespace", Type: field.ErrorTypeRequired})
	old := capacity()
	errtest.Check(t, r.Strategy.ValidateUpdate(ctx, capacity(func(c *storagev1.CSIStorageCapacity) { c.Capacity = ptr.To(resource.MustParse("50Gi")) }), old), nil)
	errtest.Check(t, r.Strategy.ValidateUpdate(ctx, capacity(func(c *storagev1.CSIStorageCapacity) { c.StorageClassName = "slow" }), old), &errtest.Want{Field: "storageClassName", Type: field.ErrorTypeInvalid, Detail: "field is immutable"})
	errtest.Check(t, r.Strategy.ValidateUpdate(ctx, capacity(func(c *storagev1.CSIStorageCapacity) { c.NodeTopology = nil }), old), &errtest.Want{Field: "nodeTopology", Type: field.ErrorTypeInvalid, Detail: "field is immutable"})
}

func attachment(mods ...func(*storagev1.VolumeAttachment)) *storagev1.VolumeAttachment {
	va := &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: "csi-0123"},
		Spec: storagev1.VolumeAttachmentSpec{
			Attacher: "ebs.csi.aws.com", NodeName: "worker-1",
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-1")},
		},
	}
	for _, m := range mods {
		m(va)
	}
	return va
}

func TestValidateVolumeAttachment(t *testing.T) {
	tests := []struct {
		name string
		obj  *storagev1.VolumeAttachment
		want *errtest.Want
	}{
		{"valid", attachment(), nil},
		{"inline csi", attachment(func(va *storagev1.VolumeAttachment) {
			va.Spec.Source = storagev1.VolumeAttachmentSource{InlineVolumeSpec: &corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "a.b", VolumeHandle: "v"}}}}
		}), nil},
		{"no attacher", attachment(func(va *storagev1.VolumeAttachment) { va.Spec.Attacher = "" }), &errtest.Want{Field: "spec.attacher", Type: field.ErrorTypeRequired}},
		{"no source", attachment(func(va *storagev1.VolumeAttachment) { va.Spec.Source = storagev1.VolumeAttachmentSource{} }), &errtest.Want{Field: "spec.source", Type: field.ErrorTypeRequired, Detail: "must specify exactly one of inlineVolumeSpec and persistentVolumeName"}},
		{"two sources", attachment(func(va *storagev1.VolumeAttachment) { va.Spec.Source.InlineVolumeSpec = &corev1.PersistentVolumeSpec{} }), &errtest.Want{Field: "spec.source", Type: field.ErrorTypeForbidden}},
		{"empty pv", attachment(func(va *storagev1.VolumeAttachment) { va.Spec.Source.PersistentVolumeName = ptr.To("") }), &errtest.Want{Field: "spec.source.persistentVolumeName", Type: field.ErrorTypeRequired}},
		{"bad node", attachment(func(va *storagev1.VolumeAttachment) { va.Spec.NodeName = "Worker_1" }), &errtest.Want{Field: "spec.nodeName", Type: field.ErrorTypeInvalid}},
	}
	r := resourceNamed(t, "volumeattachments")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errtest.Check(t, r.Strategy.Validate(context.Background(), tt.obj), tt.want)
		})
	}
}

func TestVolumeAttachmentStatus(t *testing.T) {
	ctx := context.Background()
	r := resourceNamed(t, "volumeattachments")
	created := attachment(func(va *storagev1.VolumeAttachment) { va.Status.Attached = true })
	r.Strategy.PrepareForCreate(ctx, created)
	if created.Status.Attached {
		t.Fatal("create kept the status")
	}
	old := attachment(func(va *storagev1.VolumeAttachment) { va.ResourceVersion = "1" })
	upd := old.DeepCopy()
	upd.Spec.NodeName = "worker-2"
	errtest.Check(t, r.Strategy.ValidateUpdate(ctx, upd, old), &errtest.Want{Field: "spec", Type: field.ErrorTypeInvalid, Detail: "field is immutable"})
	st := old.DeepCopy()
	st.Spec.NodeName = "worker-2"
	st.Status.Attached = true
	st.Status.AttachError = &storagev1.VolumeError{ErrorCode: ptr.To[int32](-1)}
	r.Status.PrepareForUpdate(ctx, st, old)
	if st.Spec.NodeName != "worker-1" || !st.Status.Attached {
		t.Fatalf("status update = %+v", st)
	}
	errtest.Check(t, r.Status.ValidateUpdate(ctx, st, old), &errtest.Want{Field: "status.attachError.errorCode", Type: field.ErrorTypeInvalid})
}
