package kubelet

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// fsSize is the size of the filesystem mounted at dir.
func fsSize(t *testing.T, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Blocks) * st.Bsize
}

func localPV(path string, mode *corev1.PersistentVolumeMode, fsType *string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-local"}, Spec: corev1.PersistentVolumeSpec{
		VolumeMode:             mode,
		PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: path, FSType: fsType}},
	}}
}

// fakeInfo is what os.Stat says of a local volume's path.
type fakeInfo struct {
	os.FileInfo
	mode os.FileMode
}

func (f fakeInfo) Mode() os.FileMode { return f.mode }
func (f fakeInfo) IsDir() bool       { return f.mode.IsDir() }

func TestPlanLocalVolume(t *testing.T) {
	dir, device, file := fakeInfo{mode: os.ModeDir | 0o755}, fakeInfo{mode: os.ModeDevice | 0o660}, fakeInfo{mode: 0o644}
	chardev := fakeInfo{mode: os.ModeDevice | os.ModeCharDevice | 0o660}
	block, fs := ptr.To(corev1.PersistentVolumeBlock), ptr.To(corev1.PersistentVolumeFilesystem)
	mountDir := "/root/plugins/kubernetes.io/local-volume/mounts/pv-local"
	for _, tc := range []struct {
		name  string
		pv    *corev1.PersistentVolume
		info  os.FileInfo
		want  localVolumePlan
		wrong string
	}{
		{name: "a directory is bound as it is", pv: localPV("/mnt/disk", nil, nil), info: dir, want: localVolumePlan{path: "/mnt/disk"}},
		{name: "a device in Block mode goes to the containers", pv: localPV("/dev/loop3", block, nil), info: device, want: localVolumePlan{path: "/dev/loop3", block: true}},
		{name: "a device in Filesystem mode is mounted, ext4 by default", pv: localPV("/dev/loop3", fs, nil), info: device,
			want: localVolumePlan{path: "/dev/loop3", mountDir: mountDir, fsType: "ext4"}},
		{name: "with its fsType", pv: localPV("/dev/loop3", nil, ptr.To("xfs")), info: device,
			want: localVolumePlan{path: "/dev/loop3", mountDir: mountDir, fsType: "xfs"}},
		{name: "Block mode needs a device", pv: localPV("/mnt/disk", block, nil), info: dir, wrong: "needs a block device"},
		{name: "a character device is no block device", pv: localPV("/dev/null", block, nil), info: chardev, wrong: "needs a block device"},
		{name: "a plain file is neither", pv: localPV("/mnt/file", nil, nil), info: file, wrong: "neither a directory nor a block device"},
	} {
		got, err := planLocalVolume(tc.pv, tc.info, "/root")
		if tc.wrong != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wrong) {
				t.Errorf("%s: %+v %v, want an error about %q", tc.name, got, err, tc.wrong)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v %v, want %+v", tc.name, got, err, tc.want)
		}
	}
	if got := mkfsArgs("xfs", "/dev/x"); strings.Join(got, " ") != "-t xfs -f /dev/x" {
		t.Errorf("mkfs xfs: %v", got)
	}
}

// TestLocalDeviceFormattedOnceMountedAndReleased: a loop device named by a local PV in
// Filesystem mode is formatted ext4 (it held nothing), mounted under the kubelet's root, mounted
// again without a second format after its pods went and it was unmounted, and refused when it
// holds another filesystem.
func TestLocalDeviceFormattedOnceMountedAndReleased(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("loop devices and mounts need root")
	}
	for _, tool := range []string{"losetup", "mkfs.ext4", "blkid"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	backing := filepath.Join(t.TempDir(), "disk")
	if err := os.WriteFile(backing, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(backing, 32<<20); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "-f", "--show", backing).Output()
	if err != nil {
		t.Skipf("no loop device here: %v", err)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", dev).Run() })
	vm := &volumeManager{rootDir: t.TempDir(), localDeviceUsers: map[string]map[types.UID]bool{}}
	t.Cleanup(func() { vm.unmountUnusedLocalDevices(func(types.UID) bool { return false }) })
	pv := localPV(dev, nil, nil)

	vol, err := vm.setupLocal(ctx, "pod-a", pv, false)
	if err != nil {
		t.Fatal(err)
	}
	if vol.hostPath != localDeviceMountDir(vm.rootDir, "pv-local") || vol.block || !mounted(vol.hostPath) {
		t.Fatalf("volume %+v, want the device mounted under the kubelet's root", vol)
	}
	if fsType, err := deviceFilesystem(ctx, dev); err != nil || fsType != "ext4" {
		t.Fatalf("device holds %q (%v), want ext4", fsType, err)
	}
	if err := os.WriteFile(filepath.Join(vol.hostPath, "data"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A second pod shares the mount; it stays while either is there.
	if _, err := vm.setupLocal(ctx, "pod-b", pv, false); err != nil {
		t.Fatal(err)
	}
	vm.unmountUnusedLocalDevices(func(uid types.UID) bool { return uid == "pod-b" })
	if !mounted(vol.hostPath) {
		t.Fatal("unmounted while pod-b uses it")
	}
	vm.unmountUnusedLocalDevices(func(types.UID) bool { return false })
	if mounted(vol.hostPath) {
		t.Fatal("still mounted with no pod using it")
	}
	// Mounted again: the same filesystem, not formatted anew.
	vol, err = vm.setupLocal(ctx, "pod-c", pv, false)
	if err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(vol.hostPath, "data")); err != nil || string(data) != "kept" {
		t.Fatalf("data after the second mount: %q %v (formatted again?)", data, err)
	}
	// The device grows (its backing file, then losetup -c) and so does its PV: the mounted
	// filesystem is grown and the claim's status says the new size.
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
		Status: corev1.PersistentVolumeClaimStatus{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("32Mi")}}}
	vm.client = fake.NewClientset(claim)
	vm.log = slog.New(slog.DiscardHandler)
	if err := os.Truncate(backing, 48<<20); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("losetup", "-c", dev).CombinedOutput(); err != nil {
		t.Fatalf("losetup -c: %v %s", err, out)
	}
	grown := pv.DeepCopy()
	grown.Spec.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("48Mi")}
	before := fsSize(t, vol.hostPath)
	err = vm.expandLocal(ctx, claim, grown)
	switch {
	case err != nil && !hasCapSysResource(t):
		// Growing a mounted ext4 takes CAP_SYS_RESOURCE, which this machine's root lacks.
		if !strings.Contains(err.Error(), "Permission denied to resize filesystem") {
			t.Fatalf("expansion without CAP_SYS_RESOURCE: %v, want resize2fs's refusal", err)
		}
		t.Logf("online resize refused here (no CAP_SYS_RESOURCE): %v", err)
	case err != nil:
		t.Fatal(err)
	default:
		checkExpanded(ctx, t, vm, vol.hostPath, before)
	}
	vm.unmountUnusedLocalDevices(func(types.UID) bool { return false })
	// A volume that says xfs over the ext4 the device holds is refused, and nothing is formatted.
	if _, err := vm.setupLocal(ctx, "pod-d", localPV(dev, nil, ptr.To("xfs")), false); err == nil || !strings.Contains(err.Error(), "holds ext4") {
		t.Fatalf("xfs over ext4: %v, want a refusal", err)
	}
}

// checkExpanded: the filesystem at dir grew past before by the 16 MiB the device grew, and the
// claim says 48Mi.
func checkExpanded(ctx context.Context, t *testing.T, vm *volumeManager, dir string, before int64) {
	t.Helper()
	if after := fsSize(t, dir); after <= before+8<<20 {
		t.Errorf("filesystem %d bytes after the expansion, was %d", after, before)
	}
	got, err := vm.client.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := got.Status.Capacity[corev1.ResourceStorage]; c.Cmp(resource.MustParse("48Mi")) != 0 {
		t.Errorf("claim capacity %s after the expansion, want 48Mi", c.String())
	}
}

// hasCapSysResource reports whether this process holds CAP_SYS_RESOURCE (capability 24).
func hasCapSysResource(t *testing.T) bool {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if hex, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			return err == nil && caps&(1<<24) != 0
		}
	}
	return false
}

func TestLocalExpansionDecision(t *testing.T) {
	claim := func(have string) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{}
		if have != "" {
			c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(have)}
		}
		return c
	}
	pv := func(size string) *corev1.PersistentVolume {
		p := localPV("/dev/loop3", nil, nil)
		if size != "" {
			p.Spec.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}
		}
		return p
	}
	for _, tc := range []struct {
		claim, pv string
		due       bool
	}{{"20Mi", "30Mi", true}, {"30Mi", "30Mi", false}, {"40Mi", "30Mi", false}, {"", "30Mi", false}, {"20Mi", "", false}} {
		if _, due := localExpansion(claim(tc.claim), pv(tc.pv)); due != tc.due {
			t.Errorf("claim %q pv %q: due %v, want %v", tc.claim, tc.pv, due, tc.due)
		}
	}
	if argv, err := growCommand("xfs", "/dev/x", "/m"); err != nil || strings.Join(argv, " ") != "xfs_growfs /m" {
		t.Errorf("xfs: %v %v", argv, err)
	}
	if _, err := growCommand("vfat", "/dev/x", "/m"); err == nil {
		t.Error("vfat grew")
	}
}
