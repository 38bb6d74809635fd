package core

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func makePV() *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{ObjectMeta: clusterMeta("pv-1"), Spec: corev1.PersistentVolumeSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Capacity:    corev1.ResourceList{"storage": qty("10Gi")},
		PersistentVolumeSource: corev1.PersistentVolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: "/srv/pv-1"},
		},
	}}
	DefaultPersistentVolume(pv)
	return pv
}

func makePVC() *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: meta("data"), Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{"storage": qty("1Gi")}},
	}}
	DefaultPersistentVolumeClaim(pvc)
	return pvc
}

func TestValidatePersistentVolume(t *testing.T) {
	requireNoErrors(t, ValidatePersistentVolume(makePV()))
	cases := []struct {
		name   string
		mutate func(*corev1.PersistentVolume)
		want   wantErr
	}{
		{"access modes", func(p *corev1.PersistentVolume) { p.Spec.AccessModes = nil }, wantErr{"spec.accessModes", field.ErrorTypeRequired, ""}},
		{"access mode value", func(p *corev1.PersistentVolume) {
			p.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{"ReadSometimes"}
		}, wantErr{"spec.accessModes", field.ErrorTypeNotSupported, ""}},
		{"capacity", func(p *corev1.PersistentVolume) { p.Spec.Capacity = nil }, wantErr{"spec.capacity", field.ErrorTypeRequired, ""}},
		{"capacity key", func(p *corev1.PersistentVolume) { p.Spec.Capacity["cpu"] = qty("1") }, wantErr{"spec.capacity", field.ErrorTypeNotSupported, `"storage"`}},
		{"zero capacity", func(p *corev1.PersistentVolume) { p.Spec.Capacity["storage"] = qty("0") }, wantErr{"spec.capacity[storage]", field.ErrorTypeInvalid, "must be greater than zero"}},
		{"no source", func(p *corev1.PersistentVolume) { p.Spec.PersistentVolumeSource = corev1.PersistentVolumeSource{} }, wantErr{"spec", field.ErrorTypeRequired, "must specify a volume type"}},
		{"two sources", func(p *corev1.PersistentVolume) { p.Spec.NFS = &corev1.NFSVolumeSource{Server: "s", Path: "/x"} }, wantErr{"spec.nfs", field.ErrorTypeForbidden, "may not specify more than 1 volume type"}},
		{"reclaim policy", func(p *corev1.PersistentVolume) { p.Spec.PersistentVolumeReclaimPolicy = "Keep" }, wantErr{"spec.persistentVolumeReclaimPolicy", field.ErrorTypeNotSupported, ""}},
		{"volume mode", func(p *corev1.PersistentVolume) { p.Spec.VolumeMode = ptrTo(corev1.PersistentVolumeMode("Raw")) }, wantErr{"spec.volumeMode", field.ErrorTypeNotSupported, ""}},
		{"local needs affinity", func(p *corev1.PersistentVolume) {
			p.Spec.HostPath = nil
			p.Spec.Local = &corev1.LocalVolumeSource{Path: "/mnt/disk"}
		}, wantErr{"spec.nodeAffinity", field.ErrorTypeRequired, "Local volume requires node affinity"}},
		{"empty attributes class", func(p *corev1.PersistentVolume) {
			p.Spec.HostPath = nil
			p.Spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: "hostpath.csi.k8s.io", VolumeHandle: "v1"}
			p.Spec.VolumeAttributesClassName = ptrTo("")
		}, wantErr{"spec.volumeAttributesClassName", field.ErrorTypeRequired, "an empty string is disallowed"}},
		{"attributes class name", func(p *corev1.PersistentVolume) {
			p.Spec.HostPath = nil
			p.Spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: "hostpath.csi.k8s.io", VolumeHandle: "v1"}
			p.Spec.VolumeAttributesClassName = ptrTo("Gold_Class")
		}, wantErr{"spec.volumeAttributesClassName", field.ErrorTypeInvalid, ""}},
		{"attributes class without csi", func(p *corev1.PersistentVolume) { p.Spec.VolumeAttributesClassName = ptrTo("gold") },
			wantErr{"spec.csi", field.ErrorTypeRequired, "has to be specified when using volumeAttributesClassName"}},
		{"recycle slash", func(p *corev1.PersistentVolume) {
			p.Spec.HostPath.Path = "/"
			p.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRecycle
		}, wantErr{"spec.persistentVolumeReclaimPolicy", field.ErrorTypeForbidden, ""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pv := makePV()
			c.mutate(pv)
			requireError(t, ValidatePersistentVolume(pv), c.want)
		})
	}

	old := makePV()
	moved := old.DeepCopy()
	moved.Spec.HostPath.Path = "/srv/other"
	requireError(t, ValidatePersistentVolumeUpdate(moved, old), wantErr{"spec.persistentvolumesource", field.ErrorTypeForbidden, ""})
	grown := old.DeepCopy()
	grown.Spec.Capacity["storage"] = qty("20Gi")
	requireNoErrors(t, ValidatePersistentVolumeUpdate(grown, old))

	csi := makePV()
	csi.Spec.HostPath = nil
	csi.Spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: "hostpath.csi.k8s.io", VolumeHandle: "v1"}
	csi.Spec.VolumeAttributesClassName = ptrTo("gold")
	requireNoErrors(t, ValidatePersistentVolume(csi))
	modified := csi.DeepCopy()
	modified.Spec.VolumeAttributesClassName = ptrTo("silver")
	requireNoErrors(t, ValidatePersistentVolumeUpdate(modified, csi))
	unset := csi.DeepCopy()
	unset.Spec.VolumeAttributesClassName = nil
	requireError(t, ValidatePersistentVolumeUpdate(unset, csi), wantErr{"spec.volumeAttributesClassName", field.ErrorTypeForbidden, "update from non-nil value to nil is forbidden"})
}

func TestValidatePersistentVolumeClaim(t *testing.T) {
	requireNoErrors(t, ValidatePersistentVolumeClaim(makePVC()))
	cases := []struct {
		name   string
		mutate func(*corev1.PersistentVolumeClaim)
		want   wantErr
	}{
		{"access modes", func(p *corev1.PersistentVolumeClaim) { p.Spec.AccessModes = nil }, wantErr{"spec.accessModes", field.ErrorTypeRequired, "at least 1 access mode is required"}},
		{"storage request", func(p *corev1.PersistentVolumeClaim) { p.Spec.Resources.Requests = nil }, wantErr{"spec.resources[storage]", field.ErrorTypeRequired, ""}},
		{"zero storage", func(p *corev1.PersistentVolumeClaim) { p.Spec.Resources.Requests["storage"] = qty("0") }, wantErr{"spec.resources[storage]", field.ErrorTypeInvalid, "must be greater than zero"}},
		{"selector", func(p *corev1.PersistentVolumeClaim) {
			p.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b c"}}
		}, wantErr{"spec.selector.matchLabels", field.ErrorTypeInvalid, ""}},
		{"attributes class name", func(p *corev1.PersistentVolumeClaim) { p.Spec.VolumeAttributesClassName = ptrTo("Gold_Class") },
			wantErr{"spec.volumeAttributesClassName", field.ErrorTypeInvalid, ""}},
		{"once pod with others", func(p *corev1.PersistentVolumeClaim) {
			p.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod, corev1.ReadWriteOnce}
		}, wantErr{"spec.accessModes", field.ErrorTypeForbidden, ""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pvc := makePVC()
			c.mutate(pvc)
			requireError(t, ValidatePersistentVolumeClaim(pvc), c.want)
		})
	}
}

func TestValidatePersistentVolumeClaimUpdate(t *testing.T) {
	bound := makePVC()
	bound.Spec.VolumeName = "pv-1"
	bound.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{"storage": qty("1Gi")}}

	grown := bound.DeepCopy()
	grown.Spec.Resources.Requests["storage"] = qty("5Gi")
	requireNoErrors(t, ValidatePersistentVolumeClaimUpdate(grown, bound))

	shrunk := bound.DeepCopy()
	shrunk.Spec.Resources.Requests["storage"] = qty("500Mi")
	requireError(t, ValidatePersistentVolumeClaimUpdate(shrunk, bound), wantErr{"spec.resources.requests.storage", field.ErrorTypeForbidden, "field can not be less than status.capacity"})

	remoded := bound.DeepCopy()
	remoded.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	requireError(t, ValidatePersistentVolumeClaimUpdate(remoded, bound), wantErr{"spec", field.ErrorTypeForbidden, "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"})

	pending := makePVC()
	resized := pending.DeepCopy()
	resized.Spec.Resources.Requests["storage"] = qty("2Gi")
	requireError(t, ValidatePersistentVolumeClaimUpdate(resized, pending), wantErr{"spec", field.ErrorTypeForbidden, "spec is immutable"})

	binding := pending.DeepCopy()
	binding.Spec.VolumeName = "pv-1"
	requireNoErrors(t, ValidatePersistentVolumeClaimUpdate(binding, pending))
}

// TestValidatePersistentVolumeClaimAttributesClassUpdate: a bound claim may move to another
// VolumeAttributesClass or take one for the first time; a pending one keeps what it was created
// with; once set, the class stays set (nil and "" are refused, as Kubernetes does).
func TestValidatePersistentVolumeClaimAttributesClassUpdate(t *testing.T) {
	withClass := func(pvc *corev1.PersistentVolumeClaim, name *string) *corev1.PersistentVolumeClaim {
		out := pvc.DeepCopy()
		out.Spec.VolumeAttributesClassName = name
		return out
	}
	bound := makePVC()
	bound.Spec.VolumeName = "pv-1"
	bound.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{"storage": qty("1Gi")}}
	pending := makePVC()
	gold := ptrTo("gold")

	requireNoErrors(t, ValidatePersistentVolumeClaimUpdate(withClass(bound, gold), bound))
	requireNoErrors(t, ValidatePersistentVolumeClaimUpdate(withClass(bound, ptrTo("silver")), withClass(bound, gold)))
	requireNoErrors(t, ValidatePersistentVolumeClaimUpdate(withClass(pending, gold), withClass(pending, gold)))
	requireError(t, ValidatePersistentVolumeClaimUpdate(withClass(pending, gold), pending),
		wantErr{"spec", field.ErrorTypeForbidden, "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"})
	requireError(t, ValidatePersistentVolumeClaimUpdate(bound, withClass(bound, gold)),
		wantErr{"spec.volumeAttributesClassName", field.ErrorTypeForbidden, "update from non-nil value to nil is forbidden"})
	requireError(t, ValidatePersistentVolumeClaimUpdate(withClass(bound, ptrTo("")), withClass(bound, gold)),
		wantErr{"spec.volumeAttributesClassName", field.ErrorTypeForbidden, "update from non-nil value to an empty string is forbidden"})
}
