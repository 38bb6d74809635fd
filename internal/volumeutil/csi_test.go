package volumeutil

import (
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/utils/ptr"
)

// TestAttachmentName: the name is upstream's, csi- and the sha256 of handle, driver and node run
// together (the digest below is `printf 'vol-1hostpath.csi.k8s.ionode-1' | sha256sum`), so a
// kubelet or tool that computes it the Kubernetes way finds skiff's objects.
func TestAttachmentName(t *testing.T) {
	want := "csi-a5a2e67339ab5660a390dc86be397e784322823ff01f40cf2c01a72c3cab1374"
	if got := AttachmentName("vol-1", "hostpath.csi.k8s.io", "node-1"); got != want {
		t.Errorf("AttachmentName = %q, want %q", got, want)
	}
	if AttachmentName("vol-1", "hostpath.csi.k8s.io", "node-2") == want {
		t.Error("another node gives the same name")
	}
}

func TestCSIUniqueVolumeName(t *testing.T) {
	if got, want := CSIUniqueVolumeName("hostpath.csi.k8s.io", "vol-1"), "kubernetes.io/csi/hostpath.csi.k8s.io^vol-1"; string(got) != want {
		t.Errorf("CSIUniqueVolumeName = %q, want %q", got, want)
	}
}

func TestAttachRequired(t *testing.T) {
	for _, tt := range []struct {
		name   string
		driver *storagev1.CSIDriver
		want   bool
	}{
		{"no CSIDriver object", nil, true},
		{"unset", &storagev1.CSIDriver{}, true},
		{"false", &storagev1.CSIDriver{Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}}, false},
		{"true", &storagev1.CSIDriver{Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(true)}}, true},
	} {
		if got := AttachRequired(tt.driver); got != tt.want {
			t.Errorf("%s: AttachRequired = %v, want %v", tt.name, got, tt.want)
		}
	}
}
