package kubelet

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/kubelet/csi/fakecsi"
	"github.com/skiff-sh/skiff/internal/volumeutil"
)

func TestCSIAccessMode(t *testing.T) {
	for _, tc := range []struct {
		modes       []corev1.PersistentVolumeAccessMode
		multiWriter bool
		want        csipb.VolumeCapability_AccessMode_Mode
	}{
		{nil, false, csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		{[]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, false, csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		{[]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, true, csipb.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER},
		{[]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}, false, csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		{[]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}, true, csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER},
		{[]corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany, corev1.ReadWriteOnce}, false, csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY},
		{[]corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, false, csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER},
	} {
		if got := csiAccessMode(tc.modes, tc.multiWriter); got != tc.want {
			t.Errorf("csiAccessMode(%v, %v) = %v, want %v", tc.modes, tc.multiWriter, got, tc.want)
		}
	}
}

func TestCSIAppliesFSGroup(t *testing.T) {
	rwo := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	rwx := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	for _, tc := range []struct {
		name      string
		policy    storagev1.FSGroupPolicy
		fsType    string
		ephemeral bool
		modes     []corev1.PersistentVolumeAccessMode
		want      bool
	}{
		{"None never", storagev1.NoneFSGroupPolicy, "ext4", false, rwo, false},
		{"File always", storagev1.FileFSGroupPolicy, "", false, rwx, true},
		{"default needs an fsType", storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, "", false, rwo, false},
		{"default with fsType and RWO", storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, "ext4", false, rwo, true},
		{"default with fsType, RWX only", storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, "ext4", false, rwx, false},
		{"default inline with fsType", storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, "ext4", true, nil, true},
	} {
		if got := csiAppliesFSGroup(tc.policy, tc.fsType, tc.ephemeral, tc.modes); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func csiTestPV(name string, mutate func(*corev1.PersistentVolume)) *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			AccessModes:  []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Capacity:     corev1.ResourceList{corev1.ResourceStorage: quantity("1Gi")},
			MountOptions: []string{"noatime"},
			ClaimRef:     &corev1.ObjectReference{Namespace: "default", Name: "data"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "fake.csi.test", VolumeHandle: "vol-1", FSType: "ext4", VolumeAttributes: map[string]string{"a": "b"},
			}},
		},
	}
	if mutate != nil {
		mutate(pv)
	}
	return pv
}

func TestCSIVolumeFromPV(t *testing.T) {
	pod := makePod("web").obj()
	pod.Spec.ServiceAccountName = "sa"
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000)}
	ref := &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data", ReadOnly: true}
	driver := &storagev1.CSIDriver{Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false), PodInfoOnMount: ptr.To(true)}}

	v := csiVolumeFromPV(pod, "vol", ref, csiTestPV("pv-1", nil), driver, csiCaps{}, testNode)
	want := map[string]string{"a": "b", csiPodNameKey: "web", csiPodNamespaceKey: "default", csiPodUIDKey: "uid-web", csiServiceAccountKey: "sa", csiEphemeralKey: "false"}
	if !reflect.DeepEqual(v.volumeContext, want) {
		t.Errorf("volume context = %v, want %v", v.volumeContext, want)
	}
	if v.attachment != "" || !v.readOnly || v.specName != "pv-1" || v.pvc != "data" || v.fsGroup == nil || *v.fsGroup != 2000 {
		t.Errorf("volume = %+v", v)
	}
	if m := v.capability().GetMount(); m.GetFsType() != "ext4" || !slices.Equal(m.GetMountFlags(), []string{"noatime"}) {
		t.Errorf("capability = %v", v.capability())
	}

	// No CSIDriver object: attach required, no pod info; a driver applying the group itself gets it.
	v = csiVolumeFromPV(pod, "vol", ref, csiTestPV("pv-1", nil), nil, csiCaps{mountGroup: true}, testNode)
	if v.attachment != volumeutil.AttachmentName("vol-1", "fake.csi.test", testNode) || v.volumeContext[csiPodNameKey] != "" {
		t.Errorf("without CSIDriver: %+v", v)
	}
	if v.fsGroup != nil || v.capability().GetMount().GetVolumeMountGroup() != "2000" {
		t.Errorf("VOLUME_MOUNT_GROUP: fsGroup %v, capability %v", v.fsGroup, v.capability())
	}
	if volumeutil.AttachmentName("vol-1", "fake.csi.test", "a") == volumeutil.AttachmentName("vol-1", "fake.csi.test", "b") || !strings.HasPrefix(v.attachment, "csi-") || len(v.attachment) != 4+64 {
		t.Errorf("attachment names: %s", v.attachment)
	}

	block := csiVolumeFromPV(pod, "vol", ref, csiTestPV("pv-b", func(pv *corev1.PersistentVolume) { pv.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock) }), nil, csiCaps{}, testNode)
	if !block.block || block.capability().GetBlock() == nil || block.fsGroup != nil {
		t.Errorf("block: %+v", block)
	}
}

func TestCSIVolumeInline(t *testing.T) {
	pod := makePod("web").obj()
	vol := &corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
		Driver: "fake.csi.test", VolumeAttributes: map[string]string{"size": "1"}, NodePublishSecretRef: &corev1.LocalObjectReference{Name: "s"},
	}}}
	if _, err := csiVolumeInline(pod, vol, nil, csiCaps{}); err == nil {
		t.Error("a driver without a CSIDriver object must refuse inline volumes")
	}
	persistentOnly := &storagev1.CSIDriver{Spec: storagev1.CSIDriverSpec{VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}}}
	if _, err := csiVolumeInline(pod, vol, persistentOnly, csiCaps{}); err == nil {
		t.Error("a Persistent-only driver must refuse inline volumes")
	}
	driver := &storagev1.CSIDriver{Spec: storagev1.CSIDriverSpec{PodInfoOnMount: ptr.To(true), VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral}}}
	v, err := csiVolumeInline(pod, vol, driver, csiCaps{})
	if err != nil {
		t.Fatal(err)
	}
	if !v.ephemeral || v.volumeContext[csiEphemeralKey] != "true" || v.volumeContext["size"] != "1" || v.attachment != "" ||
		v.publishSecret == nil || v.publishSecret.Namespace != "default" || v.handle != csiInlineHandle("uid-web", "scratch") {
		t.Errorf("inline volume = %+v", v)
	}
}

func TestCSIPathsFor(t *testing.T) {
	fs := csiPathsFor("/var/lib/kubelet", "u1", csiVolume{specName: "pv-1", driver: "d", handle: "h"})
	if fs.target != "/var/lib/kubelet/pods/u1/volumes/kubernetes.io~csi/pv-1/mount" || fs.dir != filepath.Dir(fs.target) ||
		!strings.HasPrefix(fs.staging, "/var/lib/kubelet/plugins/kubernetes.io/csi/d/") || !strings.HasSuffix(fs.staging, "/globalmount") {
		t.Errorf("file system paths = %+v", fs)
	}
	block := csiPathsFor("/var/lib/kubelet", "u1", csiVolume{specName: "pv-1", driver: "d", handle: "h", block: true})
	if block.target != "/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/publish/pv-1/u1" ||
		block.staging != "/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/staging/pv-1" ||
		block.dir != "/var/lib/kubelet/pods/u1/volumeDevices/kubernetes.io~csi/pv-1" {
		t.Errorf("block paths = %+v", block)
	}
}

func TestPlanUnstage(t *testing.T) {
	used := csiVolData{SpecVolID: "used", StagingTargetPath: "/s/1", Done: true}
	unused := csiVolData{SpecVolID: "unused", StagingTargetPath: "/s/2", Done: true}
	failed := csiVolData{SpecVolID: "failed", StagingTargetPath: "/s/3"}
	pods := []csiVolData{{TargetPath: "/t/a", StagingTargetPath: "/s/1"}, {TargetPath: "/t/inline"}}
	unstage, forget := planUnstage([]csiVolData{used, unused, failed}, pods)
	if !reflect.DeepEqual(unstage, []csiVolData{unused}) || !reflect.DeepEqual(forget, []csiVolData{failed}) {
		t.Errorf("planUnstage = %v, %v; want /s/2 unstaged (no pod uses it), /s/3 forgotten (its stage failed for good)", unstage, forget)
	}
}

func TestCSIOutcomeUncertain(t *testing.T) {
	for err, want := range map[error]bool{
		status.Error(codes.DeadlineExceeded, "x"): true, status.Error(codes.Unavailable, "x"): true, status.Error(codes.Aborted, "x"): true,
		status.Error(codes.InvalidArgument, "x"): false, status.Error(codes.NotFound, "x"): false, status.Error(codes.Internal, "x"): false,
		errors.New("connection reset"): true,
	} {
		if got := csiOutcomeUncertain(err); got != want {
			t.Errorf("csiOutcomeUncertain(%v) = %v, want %v", err, got, want)
		}
	}
}

// TestCSIStageErrorCases are the CSI mock specs' NodeStage error cases: a stage that failed for
// good owes no unstage, one that timed out does; an unstage that failed does not hold the pod, and
// the next pod of the volume stages it again.
func TestCSIStageErrorCases(t *testing.T) {
	csiDriver := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "fake.csi.test"}, Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}}
	for _, tc := range []struct {
		name        string
		stageErr    error
		wantUnstage bool
	}{
		{"final error: no NodeUnstage", status.Error(codes.InvalidArgument, "fake error"), false},
		{"transient error: NodeUnstage", status.Error(codes.DeadlineExceeded, "fake error"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			driver := csiTestDriver()
			driver.Fail("NodeStageVolume", tc.stageErr)
			h, _ := csiHarness(t, driver, append(csiClaimObjects(csiTestPV("pv-1", nil)), csiDriver)...)
			created := h.create(csiPod("web"))
			h.eventually("NodeStageVolume called", func() bool { return slices.Contains(driver.Methods(), "NodeStageVolume") })
			h.deletePod(created)
			if got := slices.Contains(driver.Methods(), "NodeUnstageVolume"); got != tc.wantUnstage {
				t.Errorf("NodeUnstageVolume called: %v, want %v (calls %v)", got, tc.wantUnstage, driver.Methods())
			}
			if slices.Contains(driver.Methods(), "NodeUnpublishVolume") {
				t.Errorf("unpublished a volume never published: %v", driver.Methods())
			}
		})
	}

	t.Run("unstage final error, then a second pod", func(t *testing.T) {
		driver := csiTestDriver()
		h, _ := csiHarness(t, driver, append(csiClaimObjects(csiTestPV("pv-1", nil)), csiDriver)...)
		first := h.create(csiPod("first"))
		h.waitPodStepping("default", "first", "running", podRunning)
		driver.Fail("NodeUnstageVolume", status.Error(codes.InvalidArgument, "fake final error"))
		h.deletePod(h.pod("default", first.Name))
		driver.Fail("NodeUnstageVolume", nil)
		h.create(csiPod("second"))
		second := h.waitPodStepping("default", "second", "running", podRunning)
		h.deletePod(second)
		want := []string{"NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume", "NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume"}
		if got := driver.Methods("NodeGetInfo", "NodeGetCapabilities", "NodeGetVolumeStats"); !reflect.DeepEqual(got, want) {
			t.Errorf("calls = %v, want %v", got, want)
		}
	})
}

func TestCSIExpansion(t *testing.T) {
	pv := csiTestPV("pv-1", func(pv *corev1.PersistentVolume) { pv.Spec.Capacity[corev1.ResourceStorage] = quantity("2Gi") })
	claim := func(capacity string, mutate func(*corev1.PersistentVolumeClaimStatus)) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{Status: corev1.PersistentVolumeClaimStatus{Capacity: corev1.ResourceList{corev1.ResourceStorage: quantity(capacity)}}}
		if mutate != nil {
			mutate(&c.Status)
		}
		return c
	}
	pendingStatus := func(s *corev1.PersistentVolumeClaimStatus) {
		s.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: corev1.PersistentVolumeClaimNodeResizePending}
	}
	pendingCondition := func(s *corev1.PersistentVolumeClaimStatus) {
		s.Conditions = []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimFileSystemResizePending, Status: corev1.ConditionTrue}}
	}
	inProgress := func(s *corev1.PersistentVolumeClaimStatus) {
		s.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: corev1.PersistentVolumeClaimNodeResizeInProgress}
	}
	infeasible := func(s *corev1.PersistentVolumeClaimStatus) {
		s.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: corev1.PersistentVolumeClaimNodeResizeInfeasible}
	}
	for _, tc := range []struct {
		name  string
		claim *corev1.PersistentVolumeClaim
		due   bool
	}{
		{"not grown", claim("2Gi", pendingStatus), false},
		{"grown, controller not done", claim("1Gi", nil), false},
		{"grown, node resize pending", claim("1Gi", pendingStatus), true},
		{"grown, file system resize pending", claim("1Gi", pendingCondition), true},
		{"grown, node resize in progress (a failed call is tried again)", claim("1Gi", inProgress), true},
		{"grown, node resize infeasible", claim("1Gi", infeasible), false},
	} {
		size, due := csiExpansion(tc.claim, pv)
		if due != tc.due || (due && size.Cmp(quantity("2Gi")) != 0) {
			t.Errorf("%s: %v %v", tc.name, size.String(), due)
		}
	}
	if got := expandingClaim(claim("1Gi", pendingStatus)); got == nil || got.Status.AllocatedResourceStatuses[corev1.ResourceStorage] != corev1.PersistentVolumeClaimNodeResizeInProgress {
		t.Errorf("expanding claim = %+v", got)
	}
	if got := expandingClaim(claim("1Gi", inProgress)); got != nil {
		t.Errorf("a claim in progress already is written again: %+v", got.Status)
	}
	for _, tc := range []struct {
		err        error
		wantStatus corev1.ClaimResourceStatus
	}{
		{status.Error(codes.InvalidArgument, "too big"), corev1.PersistentVolumeClaimNodeResizeInfeasible},
		{status.Error(codes.OutOfRange, "too big"), corev1.PersistentVolumeClaimNodeResizeInfeasible},
		{status.Error(codes.Internal, "fake"), corev1.PersistentVolumeClaimNodeResizeInProgress},
		{errors.New("connection reset"), corev1.PersistentVolumeClaimNodeResizeInProgress},
	} {
		got := failedExpansionClaim(failedExpansionClaim(claim("1Gi", inProgress), quantity("2Gi"), tc.err, metav1.Time{}), quantity("2Gi"), tc.err, metav1.Time{})
		if s := got.Status.AllocatedResourceStatuses[corev1.ResourceStorage]; s != tc.wantStatus {
			t.Errorf("after %v: status %q, want %q", tc.err, s, tc.wantStatus)
		}
		if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Type != corev1.PersistentVolumeClaimNodeResizeError ||
			!strings.Contains(got.Status.Conditions[0].Message, tc.err.Error()) {
			t.Errorf("after %v: conditions %+v, want one NodeResizeError", tc.err, got.Status.Conditions)
		}
	}
	// Recovery: the user now asks for less than the size that failed; the first failure keeps the
	// expansion in progress, a failure again makes it infeasible, which the resizer recovers from.
	asksLess := claim("1Gi", inProgress)
	asksLess.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: quantity("1536Mi")}
	first := failedExpansionClaim(asksLess, quantity("2Gi"), status.Error(codes.Internal, "fake"), metav1.Time{})
	if s := first.Status.AllocatedResourceStatuses[corev1.ResourceStorage]; s != corev1.PersistentVolumeClaimNodeResizeInProgress {
		t.Errorf("first failure: status %q", s)
	}
	again := failedExpansionClaim(first, quantity("2Gi"), status.Error(codes.Internal, "fake"), metav1.Time{})
	if s := again.Status.AllocatedResourceStatuses[corev1.ResourceStorage]; s != corev1.PersistentVolumeClaimNodeResizeInfeasible {
		t.Errorf("failure again with another size asked for: status %q, want NodeResizeInfeasible", s)
	}
	done := expandedClaim(claim("1Gi", func(s *corev1.PersistentVolumeClaimStatus) {
		pendingStatus(s)
		pendingCondition(s)
		s.Conditions = append(s.Conditions, corev1.PersistentVolumeClaimCondition{Type: corev1.PersistentVolumeClaimNodeResizeError, Status: corev1.ConditionTrue})
	}), quantity("2Gi"))
	if c := done.Status.Capacity[corev1.ResourceStorage]; c.Cmp(quantity("2Gi")) != 0 || done.Status.AllocatedResourceStatuses != nil || len(done.Status.Conditions) != 0 {
		t.Errorf("expanded claim status = %+v", done.Status)
	}
}

func TestSharedMountPlan(t *testing.T) {
	info := strings.Join([]string{
		"27 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw",
		"40 27 8:2 / /data rw,relatime - ext4 /dev/sda2 rw",
		"41 40 8:2 /k /data/kubelet rw,relatime - ext4 /dev/sda2 rw",
	}, "\n")
	for _, tc := range []struct {
		dir              string
		bind, makeShared bool
	}{
		{"/var/lib/kubelet", false, false}, // on the shared root
		{"/data/other", true, true},        // on a private mount: bind it, then share it
		{"/data/kubelet", false, true},     // a private mount point of its own: share it
		{"/data/kubelet/pods", true, true}, // below it
		{"/datax/kubelet", false, false},   // a prefix that is no parent: the root's
	} {
		bind, share := sharedMountPlan(info, tc.dir)
		if bind != tc.bind || share != tc.makeShared {
			t.Errorf("sharedMountPlan(%s) = %v %v, want %v %v", tc.dir, bind, share, tc.bind, tc.makeShared)
		}
	}
}

func TestContainerDevices(t *testing.T) {
	c := &corev1.Container{VolumeDevices: []corev1.VolumeDevice{{Name: "blk", DevicePath: "/dev/xvda"}}}
	devices, err := containerDevices(c, map[string]volume{"blk": {hostPath: "/p/blk", block: true, readOnly: true}})
	if err != nil || len(devices) != 1 || devices[0].HostPath != "/p/blk" || devices[0].ContainerPath != "/dev/xvda" || devices[0].Permissions != "mr" {
		t.Errorf("devices = %v, %v", devices, err)
	}
	if _, err := containerDevices(c, map[string]volume{"blk": {hostPath: "/p/dir"}}); err == nil {
		t.Error("a file system volume must not become a device")
	}
}

// csiHarness runs a kubelet whose root dir has a fake CSI driver registered through
// plugins_registry.
func csiHarness(t *testing.T, driver *fakecsi.Driver, objects ...runtime.Object) (*harness, string) {
	t.Helper()
	root, err := os.MkdirTemp("", "kl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	if err := driver.Start(filepath.Join(root, "plugins", "fake", "csi.sock"), filepath.Join(root, "plugins_registry", "fake-reg.sock")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(driver.Stop)
	h := newHarnessWithObjects(t, func(c *Config) { c.RootDir = root }, objects...)
	return h, root
}

func csiTestDriver() *fakecsi.Driver {
	return &fakecsi.Driver{Name: "fake.csi.test", NodeID: "fake-" + testNode, Capabilities: []csipb.NodeServiceCapability_RPC_Type{
		csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME, csipb.NodeServiceCapability_RPC_EXPAND_VOLUME, csipb.NodeServiceCapability_RPC_GET_VOLUME_STATS,
	}}
}

func csiClaimObjects(pv *corev1.PersistentVolume) []runtime.Object {
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
		Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: pv.Name},
		Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: quantity("1Gi")}},
	}
	return []runtime.Object{pv, claim}
}

func csiPod(name string) *corev1.Pod {
	pod := makePod(name).container(corev1.Container{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}).obj()
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	return pod
}

func (h *harness) deletePod(pod *corev1.Pod) {
	h.t.Helper()
	now := metav1.NewTime(h.clock.Now())
	pod.DeletionTimestamp = &now
	pod.DeletionGracePeriodSeconds = ptr.To[int64](0)
	if _, err := h.client.CoreV1().Pods(pod.Namespace).Update(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	h.eventually("pod deleted by the kubelet", func() bool { return h.pod(pod.Namespace, pod.Name) == nil })
}

// TestCSIPersistentVolumeLifecycle: a pod's CSI claim waits for its VolumeAttachment, is staged
// and published into the pod's directory with the attachment's publish context and the pod's
// information, reaches the container as a mount, and is unpublished and unstaged when the pod
// goes, leaving no directory behind.
func TestCSIPersistentVolumeLifecycle(t *testing.T) {
	driver := csiTestDriver()
	csiDriver := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "fake.csi.test"}, Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(true), PodInfoOnMount: ptr.To(true)}}
	pv := csiTestPV("pv-1", nil)
	h, root := csiHarness(t, driver, append(csiClaimObjects(pv), csiDriver)...)
	ctx := context.Background()

	created := h.create(csiPod("web"))
	h.eventually("FailedMount waiting for the attachment", func() bool { return h.hasEvent("waiting for VolumeAttachment") })
	if slices.Contains(driver.Methods(), "NodePublishVolume") {
		t.Fatal("published before the volume was attached")
	}
	va := &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: volumeutil.AttachmentName("vol-1", "fake.csi.test", testNode)},
		Spec:       storagev1.VolumeAttachmentSpec{Attacher: "fake.csi.test", NodeName: testNode, Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-1")}},
		Status:     storagev1.VolumeAttachmentStatus{Attached: true, AttachmentMetadata: map[string]string{"device": "/dev/fake"}},
	}
	if _, err := h.client.StorageV1().VolumeAttachments().Create(ctx, va, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := h.waitPodStepping("default", "web", "running", podRunning)

	target := filepath.Join(root, "pods", string(created.UID), "volumes", "kubernetes.io~csi", "pv-1", "mount")
	if got := driver.Methods("NodeGetVolumeStats"); !reflect.DeepEqual(got, []string{"NodeGetInfo", "NodeGetCapabilities", "NodeStageVolume", "NodePublishVolume"}) {
		t.Errorf("calls = %v", got)
	}
	var publish *csipb.NodePublishVolumeRequest
	for _, c := range driver.Calls() {
		if r, ok := c.Request.(*csipb.NodePublishVolumeRequest); ok {
			publish = r
		}
	}
	if publish.GetTargetPath() != target || publish.GetPublishContext()["device"] != "/dev/fake" || publish.GetVolumeContext()[csiPodNameKey] != "web" ||
		publish.GetVolumeContext()["a"] != "b" || !strings.HasSuffix(publish.GetStagingTargetPath(), "/globalmount") ||
		!slices.Equal(publish.GetVolumeCapability().GetMount().GetMountFlags(), []string{"noatime"}) {
		t.Errorf("publish request = %v", publish)
	}
	config := h.runtime.ContainerConfig(h.runtime.RunningContainer(string(created.UID), "app"))
	if !slices.ContainsFunc(config.GetMounts(), func(m *runtimeapi.Mount) bool { return m.HostPath == target && m.ContainerPath == "/data" }) {
		t.Errorf("container mounts = %v", config.GetMounts())
	}
	if _, err := os.Stat(filepath.Join(target, fakecsi.Marker)); err != nil {
		t.Errorf("target not published: %v", err)
	}
	// The node reports the volume in use while it holds it, so the attach/detach controller
	// does not detach it, and stops once it is unstaged.
	inUse := volumeutil.CSIUniqueVolumeName("fake.csi.test", "vol-1")
	h.eventually("volume reported in use", func() bool {
		h.clock.Step(h.cfg.NodeStatusUpdateFrequency) // the node status loop runs on the fake clock
		n := h.node()
		return n != nil && slices.Equal(n.Status.VolumesInUse, []corev1.UniqueVolumeName{inUse})
	})

	h.deletePod(pod)
	h.eventually("volume no longer reported in use", func() bool {
		h.clock.Step(h.cfg.NodeStatusUpdateFrequency)
		n := h.node()
		return n != nil && len(n.Status.VolumesInUse) == 0
	})
	if got := driver.Methods("NodeGetVolumeStats"); !reflect.DeepEqual(got[len(got)-2:], []string{"NodeUnpublishVolume", "NodeUnstageVolume"}) {
		t.Errorf("calls after deletion = %v", got)
	}
	if _, err := os.Stat(filepath.Join(root, "pods", string(created.UID))); !os.IsNotExist(err) {
		t.Errorf("pod directory left: %v", err)
	}
	if _, err := os.Stat(publish.GetStagingTargetPath()); !os.IsNotExist(err) {
		t.Errorf("staging directory left: %v", err)
	}
}

func csiSandboxOf(t *testing.T, h *harness, uid string) string {
	t.Helper()
	sandboxes, err := h.runtime.ListPodSandbox(context.Background(), &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{labelPodUID: uid}})
	if err != nil || len(sandboxes) != 1 {
		t.Fatalf("sandboxes of %s: %v %v", uid, sandboxes, err)
	}
	return sandboxes[0].Id
}

func unpublishedTargets(d *fakecsi.Driver) []string {
	var out []string
	for _, c := range d.Calls() {
		if r, ok := c.Request.(*csipb.NodeUnpublishVolumeRequest); ok {
			out = append(out, r.GetTargetPath())
		}
	}
	return out
}

// TestCSIVolumesAfterRestart: a kubelet that restarts keeps the volumes of the pods still
// there, and unpublishes those of pods deleted while it was down, from the records on disk:
// a pod whose sandbox is still there (taken down by its worker) and one whose sandbox is gone too.
func TestCSIVolumesAfterRestart(t *testing.T) {
	driver := csiTestDriver()
	csiDriver := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "fake.csi.test"}, Spec: storagev1.CSIDriverSpec{
		AttachRequired: ptr.To(false), VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral},
	}}
	h, root := csiHarness(t, driver, append(csiClaimObjects(csiTestPV("pv-1", nil)), csiDriver)...)
	inline := func(name string) *corev1.Pod {
		pod := makePod(name).container(corev1.Container{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/s"}}}).obj()
		pod.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "fake.csi.test"}}}}
		return pod
	}
	keep := h.create(csiPod("keep"))
	goneWithSandbox := h.create(inline("gone-a"))
	goneWithout := h.create(inline("gone-b"))
	for _, name := range []string{"keep", "gone-a", "gone-b"} {
		h.waitPodStepping("default", name, "running", podRunning)
	}
	target := func(p *corev1.Pod, vol string) string {
		return filepath.Join(root, "pods", string(p.UID), "volumes", "kubernetes.io~csi", vol, "mount")
	}

	h.stop()
	ctx := context.Background()
	for _, p := range []*corev1.Pod{goneWithSandbox, goneWithout} {
		if err := h.client.CoreV1().Pods("default").Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	id := csiSandboxOf(t, h, string(goneWithout.UID))
	if err := h.runtime.StopPodSandbox(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := h.runtime.RemovePodSandbox(ctx, id); err != nil {
		t.Fatal(err)
	}
	if got := unpublishedTargets(driver); len(got) != 0 {
		t.Fatalf("unpublished before the restart: %v", got)
	}
	h.start()
	h.eventually("gone pods' volumes unpublished", func() bool {
		got := unpublishedTargets(driver)
		return slices.Contains(got, target(goneWithSandbox, "scratch")) && slices.Contains(got, target(goneWithout, "scratch"))
	})
	if slices.Contains(unpublishedTargets(driver), target(keep, "pv-1")) {
		t.Error("the volume of a pod still there was unpublished")
	}
	for _, p := range []*corev1.Pod{goneWithSandbox, goneWithout} {
		dir := filepath.Join(root, "pods", string(p.UID))
		h.eventually("directory of "+p.Name+" removed", func() bool { _, err := os.Stat(dir); return os.IsNotExist(err) })
	}
	if _, err := os.Stat(filepath.Join(target(keep, "pv-1"), fakecsi.Marker)); err != nil {
		t.Errorf("kept pod's volume: %v", err)
	}
}

// TestCSIStatsAndExpansion: a published claim's usage comes from NodeGetVolumeStats into the
// summary, and a pending node expansion calls NodeExpandVolume and records the size in the claim.
func TestCSIStatsAndExpansion(t *testing.T) {
	driver := csiTestDriver()
	driver.Stats = []*csipb.VolumeUsage{{Unit: csipb.VolumeUsage_BYTES, Total: 1 << 30, Used: 1 << 20, Available: 1<<30 - 1<<20}, {Unit: csipb.VolumeUsage_INODES, Total: 100, Used: 1, Available: 99}}
	csiDriver := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "fake.csi.test"}, Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}}
	expandSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "expand", Namespace: "storage"}, Data: map[string][]byte{"password": []byte("t0p-Secret")}}
	pv := csiTestPV("pv-1", func(pv *corev1.PersistentVolume) {
		pv.Spec.CSI.NodeExpandSecretRef = &corev1.SecretReference{Namespace: "storage", Name: "expand"}
	})
	h, _ := csiHarness(t, driver, append(csiClaimObjects(pv), csiDriver, expandSecret)...)
	ctx := context.Background()
	created := h.create(csiPod("web"))
	h.waitPodStepping("default", "web", "running", podRunning)

	summary, err := h.kubelet.server.summary(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, ps := range summary.Pods {
		for _, vs := range ps.VolumeStats {
			if vs.Name == "data" {
				found = true
				if vs.PVCRef == nil || vs.PVCRef.Name != "data" || *vs.UsedBytes != 1<<20 || *vs.CapacityBytes != 1<<30 || *vs.InodesFree != 99 {
					t.Errorf("volume stats = %+v", vs)
				}
			}
		}
	}
	if !found || !slices.Contains(driver.Methods(), "NodeGetVolumeStats") {
		t.Fatalf("no CSI volume stats in the summary: %+v", summary.Pods)
	}
	rec := httptest.NewRecorder()
	h.kubelet.server.serveMetrics(rec, httptest.NewRequest("GET", "/metrics", nil))
	mustContainAll(t, rec.Body.String(), `kubelet_volume_stats_used_bytes{namespace="default",persistentvolumeclaim="data"} 1.048576e+06`,
		`kubelet_volume_stats_inodes_free{namespace="default",persistentvolumeclaim="data"} 99`)

	// The control plane grew the volume and left the node's part pending.
	pv, _ = h.client.CoreV1().PersistentVolumes().Get(ctx, "pv-1", metav1.GetOptions{})
	pv.Spec.Capacity[corev1.ResourceStorage] = quantity("2Gi")
	if _, err := h.client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	claim, _ := h.client.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
	claim.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: corev1.PersistentVolumeClaimNodeResizePending}
	if _, err := h.client.CoreV1().PersistentVolumeClaims("default").UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("claim expanded", func() bool {
		h.step(h.cfg.SyncFrequency)
		c, _ := h.client.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
		size := c.Status.Capacity[corev1.ResourceStorage]
		return size.Cmp(quantity("2Gi")) == 0 && c.Status.AllocatedResourceStatuses == nil
	})
	var expand *csipb.NodeExpandVolumeRequest
	for _, c := range driver.Calls() {
		if r, ok := c.Request.(*csipb.NodeExpandVolumeRequest); ok {
			expand = r
		}
	}
	if expand.GetCapacityRange().GetRequiredBytes() != 2<<30 || !strings.Contains(expand.GetVolumePath(), string(created.UID)) || expand.GetStagingTargetPath() == "" ||
		expand.GetSecrets()["password"] != "t0p-Secret" {
		t.Errorf("expand request = %v", expand)
	}
}

// TestCSIBlockAndTokens: a Block volume is published to a file the container gets as a device,
// and a driver asking for tokens gets the pod's token for its audience in the volume context.
func TestCSIBlockAndTokens(t *testing.T) {
	driver := csiTestDriver()
	csiDriver := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "fake.csi.test"}, Spec: storagev1.CSIDriverSpec{
		AttachRequired: ptr.To(false), TokenRequests: []storagev1.TokenRequest{{Audience: "vault"}},
	}}
	pv := csiTestPV("pv-b", func(pv *corev1.PersistentVolume) { pv.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock) })
	h, root := csiHarness(t, driver, append(csiClaimObjects(pv), csiDriver)...)
	var mu sync.Mutex
	var audiences []string
	// The fake client's reactor chain is not safe to change while the kubelet calls it: stop it
	// for the change.
	h.stop()
	h.client.PrependReactor("create", "serviceaccounts", func(action k8stesting.Action) (bool, runtime.Object, error) {
		create, ok := action.(k8stesting.CreateAction)
		if !ok || action.GetSubresource() != "token" {
			return false, nil, nil
		}
		req := create.GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		mu.Lock()
		audiences = append(audiences, req.Spec.Audiences...)
		mu.Unlock()
		req.Status.Token = "token-for-" + strings.Join(req.Spec.Audiences, ",")
		return true, req, nil
	})
	h.start()
	pod := makePod("blk").container(corev1.Container{Name: "app", VolumeDevices: []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/xvda"}}}).obj()
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	created := h.create(pod)
	running := h.waitPodStepping("default", "blk", "running", podRunning)

	publishPath := filepath.Join(root, "plugins", "kubernetes.io", "csi", "volumeDevices", "publish", "pv-b", string(created.UID))
	config := h.runtime.ContainerConfig(h.runtime.RunningContainer(string(created.UID), "app"))
	if d := config.GetDevices(); len(d) != 1 || d[0].HostPath != publishPath || d[0].ContainerPath != "/dev/xvda" {
		t.Errorf("devices = %v", d)
	}
	for _, c := range driver.Calls() {
		if r, ok := c.Request.(*csipb.NodePublishVolumeRequest); ok {
			if r.GetVolumeCapability().GetBlock() == nil || !strings.Contains(r.GetVolumeContext()[csiTokensKey], `"vault":{"token":"token-for-vault"`) {
				t.Errorf("publish request = %v", r)
			}
		}
	}
	mu.Lock()
	if !slices.Equal(audiences, []string{"vault"}) {
		t.Errorf("token audiences = %v", audiences)
	}
	mu.Unlock()
	h.deletePod(running)
	if _, err := os.Stat(publishPath); !os.IsNotExist(err) {
		t.Errorf("publish path left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "pods", string(created.UID))); !os.IsNotExist(err) {
		t.Errorf("pod directory left: %v", err)
	}
}

func mustContainAll(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("missing %q in:\n%s", w, out)
		}
	}
}

// TestCSIFSGroupPolicyAndEphemeralClaim: a generic ephemeral volume's claim is mounted only when
// the pod controls it, and the published volume gets the pod's fsGroup where the driver's
// fsGroupPolicy says so (File) and not where it does not (None).
func TestCSIFSGroupPolicyAndEphemeralClaim(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving files a group needs root")
	}
	for _, tc := range []struct {
		policy    storagev1.FSGroupPolicy
		wantGroup bool
	}{{storagev1.FileFSGroupPolicy, true}, {storagev1.NoneFSGroupPolicy, false}} {
		t.Run(string(tc.policy), func(t *testing.T) {
			driver := csiTestDriver()
			csiDriver := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "fake.csi.test"}, Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false), FSGroupPolicy: ptr.To(tc.policy)}}
			pv := csiTestPV("pv-e", nil)
			objects := csiClaimObjects(pv)
			claim := objects[1].(*corev1.PersistentVolumeClaim)
			claim.Name = "eph-scratch" // <pod>-<volume>
			h, root := csiHarness(t, driver, append(objects, csiDriver)...)

			pod := makePod("eph").container(corev1.Container{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/s"}}}).obj()
			pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To[int64](4321)}
			pod.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
				VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}},
			}}}}
			created := h.create(pod)
			h.eventually("a claim the pod does not own refused", func() bool { return h.hasEvent("pod is not owner") })
			if slices.Contains(driver.Methods(), "NodePublishVolume") {
				t.Fatal("published a claim the pod does not own")
			}
			ctx := context.Background()
			owned, _ := h.client.CoreV1().PersistentVolumeClaims("default").Get(ctx, "eph-scratch", metav1.GetOptions{})
			owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "eph", UID: created.UID, Controller: ptr.To(true)}}
			if _, err := h.client.CoreV1().PersistentVolumeClaims("default").Update(ctx, owned, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			h.waitPodStepping("default", "eph", "running", podRunning)
			info, err := os.Stat(filepath.Join(root, "pods", string(created.UID), "volumes", "kubernetes.io~csi", "pv-e", "mount", fakecsi.Marker))
			if err != nil {
				t.Fatal(err)
			}
			gid := info.Sys().(*syscall.Stat_t).Gid
			if got := gid == 4321; got != tc.wantGroup {
				t.Errorf("fsGroupPolicy %s: the volume's file has group %d; fsGroup applied %v, want %v", tc.policy, gid, got, tc.wantGroup)
			}
		})
	}
}

func TestCSIHeldByOtherPod(t *testing.T) {
	rwop := csiTestPV("pv-1", func(pv *corev1.PersistentVolume) {
		pv.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}
	})
	rwopAndRWO := csiTestPV("pv-1", func(pv *corev1.PersistentVolume) {
		pv.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod, corev1.ReadWriteOnce}
	})
	published := csiVolData{DriverName: "fake.csi.test", VolumeHandle: "vol-1", Done: true}
	failed := csiVolData{DriverName: "fake.csi.test", VolumeHandle: "vol-1"}
	other := csiVolData{DriverName: "fake.csi.test", VolumeHandle: "vol-2", Done: true}
	for _, tc := range []struct {
		name string
		pv   *corev1.PersistentVolume
		held map[string][]csiVolData
		want bool
	}{
		{"published for another pod", rwop, map[string][]csiVolData{"uid-a": {published}}, true},
		{"published for this pod", rwop, map[string][]csiVolData{"uid-web": {published}}, false},
		{"another pod's publish failed for good", rwop, map[string][]csiVolData{"uid-a": {failed}}, false},
		{"another volume", rwop, map[string][]csiVolData{"uid-a": {other}}, false},
		{"several access modes: the pod's intent is unknown", rwopAndRWO, map[string][]csiVolData{"uid-a": {published}}, false},
		{"ReadWriteOnce", csiTestPV("pv-1", nil), map[string][]csiVolData{"uid-a": {published}}, false},
	} {
		if got := csiHeldByOtherPod(tc.pv, "uid-web", tc.held); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestCSIReadWriteOncePodOnTheNode: a second pod bound to the node (no scheduler) that names a
// ReadWriteOncePod volume a running pod holds gets FailedMount with Kubernetes' message and no
// driver call, and starts once the first pod is gone (the upstream csi-hostpath spec 'should
// block a second pod from using an in-use ReadWriteOncePod volume on the same node').
func TestCSIReadWriteOncePodOnTheNode(t *testing.T) {
	driver := csiTestDriver()
	csiDriver := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "fake.csi.test"}, Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}}
	pv := csiTestPV("pv-1", func(pv *corev1.PersistentVolume) {
		pv.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}
	})
	h, _ := csiHarness(t, driver, append(csiClaimObjects(pv), csiDriver)...)
	h.create(csiPod("first"))
	first := h.waitPodStepping("default", "first", "running", podRunning)
	publishes := func() int {
		n := 0
		for _, m := range driver.Methods() {
			if m == "NodePublishVolume" {
				n++
			}
		}
		return n
	}
	h.create(csiPod("second"))
	h.eventually("FailedMount for the second pod", func() bool {
		return h.hasEvent("volume uses the ReadWriteOncePod access mode and is already in use by another pod")
	})
	if n := publishes(); n != 1 {
		t.Fatalf("NodePublishVolume called %d times while the first pod holds the volume, want 1", n)
	}
	h.deletePod(first)
	h.waitPodStepping("default", "second", "running", podRunning)
	if n := publishes(); n != 2 {
		t.Errorf("NodePublishVolume called %d times, want 2", n)
	}
}

// TestCSIExpansionFailures are the CSI mock specs' expansion recovery cases on the node: the
// claim says NodeResizeInProgress while the node expands; a failed NodeExpandVolume leaves a
// NodeResizeError condition and is tried again, unless its error says the size is infeasible
// (NodeResizeInfeasible), which waits until the resizer marks another size pending; success
// clears the status and the conditions.
func TestCSIExpansionFailures(t *testing.T) {
	driver := csiTestDriver()
	csiDriver := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "fake.csi.test"}, Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}}
	h, _ := csiHarness(t, driver, append(csiClaimObjects(csiTestPV("pv-1", nil)), csiDriver)...)
	ctx := context.Background()
	h.create(csiPod("web"))
	h.waitPodStepping("default", "web", "running", podRunning)
	claim := func() *corev1.PersistentVolumeClaim {
		c, err := h.client.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	expands := func() int {
		n := 0
		for _, m := range driver.Methods() {
			if m == "NodeExpandVolume" {
				n++
			}
		}
		return n
	}
	// grow is what the resizer does: the PV's new size, the node's part pending.
	grow := func(size string) {
		pv, _ := h.client.CoreV1().PersistentVolumes().Get(ctx, "pv-1", metav1.GetOptions{})
		pv.Spec.Capacity[corev1.ResourceStorage] = quantity(size)
		if _, err := h.client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		c := claim()
		c.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: corev1.PersistentVolumeClaimNodeResizePending}
		if _, err := h.client.CoreV1().PersistentVolumeClaims("default").UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	hasNodeResizeError := func(c *corev1.PersistentVolumeClaim) bool {
		return slices.ContainsFunc(c.Status.Conditions, func(c corev1.PersistentVolumeClaimCondition) bool {
			return c.Type == corev1.PersistentVolumeClaimNodeResizeError
		})
	}

	driver.Fail("NodeExpandVolume", status.Error(codes.Internal, "fake final error"))
	grow("2Gi")
	h.eventually("NodeResizeError, still in progress", func() bool {
		h.step(h.cfg.SyncFrequency)
		c := claim()
		return hasNodeResizeError(c) && c.Status.AllocatedResourceStatuses[corev1.ResourceStorage] == corev1.PersistentVolumeClaimNodeResizeInProgress
	})
	retried := expands()
	h.eventually("the expansion tried again", func() bool {
		h.step(h.cfg.SyncFrequency)
		return expands() > retried
	})

	driver.Fail("NodeExpandVolume", status.Error(codes.OutOfRange, "fake infeasible error"))
	h.eventually("NodeResizeInfeasible", func() bool {
		h.step(h.cfg.SyncFrequency)
		c := claim()
		return hasNodeResizeError(c) && c.Status.AllocatedResourceStatuses[corev1.ResourceStorage] == corev1.PersistentVolumeClaimNodeResizeInfeasible
	})
	tried := expands()
	for range 3 {
		h.step(h.cfg.SyncFrequency)
	}
	if n := expands(); n != tried {
		t.Errorf("an infeasible expansion was tried again: %d calls, then %d", tried, n)
	}

	// The user asks for less; the resizer marks it pending, and the node expands to it.
	driver.Fail("NodeExpandVolume", nil)
	grow("1536Mi")
	h.eventually("claim expanded to the recovered size", func() bool {
		h.step(h.cfg.SyncFrequency)
		c := claim()
		size := c.Status.Capacity[corev1.ResourceStorage]
		return size.Cmp(quantity("1536Mi")) == 0 && c.Status.AllocatedResourceStatuses == nil && len(c.Status.Conditions) == 0
	})
}
