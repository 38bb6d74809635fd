package kubelet

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestFSGroupMode(t *testing.T) {
	for _, tc := range []struct {
		mode     os.FileMode
		readOnly bool
		want     os.FileMode
	}{
		{0o644, false, 0o664},
		{0o644, true, 0o644},
		{0o400, true, 0o440},
		{0o600, false, 0o660},
		{os.ModeDir | 0o777, false, os.ModeDir | os.ModeSetgid | 0o777},
		{os.ModeDir | 0o755, true, os.ModeDir | os.ModeSetgid | 0o755},
		{os.ModeDir | 0o700, true, os.ModeDir | os.ModeSetgid | 0o750},
		{os.ModeSymlink | 0o777, false, os.ModeSymlink | 0o777},
	} {
		if got := fsGroupMode(tc.mode, tc.readOnly); got != tc.want {
			t.Errorf("fsGroupMode(%v, %v) = %v, want %v", tc.mode, tc.readOnly, got, tc.want)
		}
	}
	for _, tc := range []struct {
		gid  uint32
		mode os.FileMode
		want bool
	}{
		{1234, os.ModeDir | os.ModeSetgid | 0o777, true},
		{0, os.ModeDir | os.ModeSetgid | 0o777, false},
		{1234, os.ModeDir | 0o777, false},
		{1234, os.ModeDir | os.ModeSetgid | 0o707, false},
	} {
		if got := ownershipMatches(tc.gid, tc.mode, 1234, false); got != tc.want {
			t.Errorf("ownershipMatches(%d, %v) = %v", tc.gid, tc.mode, got)
		}
	}
	pod := makePod("p").obj()
	if g, _ := fsGroupOf(pod); g != nil {
		t.Error("fsGroup without security context")
	}
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To[int64](7)}
	if g, always := fsGroupOf(pod); g == nil || *g != 7 || !always {
		t.Error("default policy is Always")
	}
	pod.Spec.SecurityContext.FSGroupChangePolicy = ptr.To(corev1.FSGroupChangeOnRootMismatch)
	if _, always := fsGroupOf(pod); always {
		t.Error("OnRootMismatch walks only on a mismatch")
	}
}

func TestSetVolumeOwnershipOnRootMismatch(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing a file's group to an arbitrary gid needs root")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, -1, 1234); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, os.ModeSetgid|0o777); err != nil {
		t.Fatal(err)
	}
	// The root matches: OnRootMismatch leaves the file alone.
	if err := setVolumeOwnership(dir, 1234, false, false); err != nil {
		t.Fatal(err)
	}
	if gid, mode := owner(t, filepath.Join(dir, "f")); gid != 0 || mode != 0o600 {
		t.Errorf("file changed under OnRootMismatch: gid %d mode %v", gid, mode)
	}
	if err := setVolumeOwnership(dir, 1234, true, false); err != nil {
		t.Fatal(err)
	}
	if gid, mode := owner(t, filepath.Join(dir, "f")); gid != 1234 || mode != 0o660 {
		t.Errorf("file after Always: gid %d mode %v", gid, mode)
	}
}

func owner(t *testing.T, path string) (uint32, os.FileMode) {
	t.Helper()
	info, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Sys().(*syscall.Stat_t).Gid, info.Mode()
}

func TestFSGroupVolumes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing a file's group to an arbitrary gid needs root")
	}
	h := newHarness(t, nil)
	ctx := context.Background()
	if _, err := h.client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"}, Data: map[string]string{"a": "1"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "sec", Namespace: "default"}, Data: map[string][]byte{"k": []byte("v")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := makePod("grouped").obj()
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), FSGroup: ptr.To[int64](2345)}
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "sec", DefaultMode: ptr.To[int32](0o400)}}},
		{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "sub/name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
	}
	for _, v := range pod.Spec.Volumes {
		pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: v.Name, MountPath: "/" + v.Name})
	}
	h.create(pod)
	h.waitPod("default", "grouped", "running", podRunning)
	vols := h.kubelet.volumeManager.volumesDir(pod)
	for _, tc := range []struct {
		path string
		mode os.FileMode
	}{
		{"empty-dir/scratch", os.ModeDir | os.ModeSetgid | 0o777},
		{"configmap/cfg", os.ModeDir | os.ModeSetgid | 0o755},
		{"configmap/cfg/..data/a", 0o644},
		{"secret/sec/..data/k", 0o440},
		{"downward-api/info/..data", os.ModeDir | os.ModeSetgid | 0o755},
		{"downward-api/info/..data/sub", os.ModeDir | os.ModeSetgid | 0o755},
		{"downward-api/info/..data/sub/name", 0o644},
	} {
		path := filepath.Join(vols, tc.path)
		info, err := os.Stat(path)
		if err != nil {
			t.Errorf("%s: %v", tc.path, err)
			continue
		}
		if gid := info.Sys().(*syscall.Stat_t).Gid; gid != 2345 || info.Mode() != tc.mode {
			t.Errorf("%s: gid %d mode %v, want 2345 %v", tc.path, gid, info.Mode(), tc.mode)
		}
	}
	if gid, _ := owner(t, filepath.Join(vols, "configmap/cfg/..data")); gid != 2345 {
		t.Errorf("..data link gid %d", gid)
	}
}

func TestFSGroupLocalPersistentVolume(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing a file's group to an arbitrary gid needs root")
	}
	local := t.TempDir()
	if err := os.Chmod(local, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(local, "data"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-local"}, Spec: corev1.PersistentVolumeSpec{
		PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: local}}}}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-local"}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
	h := newHarnessWithObjects(t, nil, pv, claim)
	pod := makePod("claimed").obj()
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To[int64](3456), FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeOnRootMismatch)}
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	h.create(pod)
	h.waitPod("default", "claimed", "running", podRunning)
	if gid, mode := owner(t, local); gid != 3456 || mode != os.ModeDir|os.ModeSetgid|0o770 {
		t.Errorf("local volume root: gid %d mode %v", gid, mode)
	}
	if gid, mode := owner(t, filepath.Join(local, "data")); gid != 3456 || mode != 0o660 {
		t.Errorf("local volume file: gid %d mode %v", gid, mode)
	}
}

// TestFsUserOf: the token's user is the one runAsUser every container runs as (a container's own
// over the pod's), none when a container runs without one or two differ.
func TestFsUserOf(t *testing.T) {
	user := func(id int64) *corev1.SecurityContext { return &corev1.SecurityContext{RunAsUser: ptr.To(id)} }
	for _, tc := range []struct {
		name       string
		podUser    *int64
		init       []*corev1.SecurityContext
		containers []*corev1.SecurityContext
		want       *int64
	}{
		{name: "none", containers: []*corev1.SecurityContext{nil}},
		{name: "the pod's", podUser: ptr.To[int64](1000), containers: []*corev1.SecurityContext{nil, {}}, want: ptr.To[int64](1000)},
		{name: "each container's, the same", containers: []*corev1.SecurityContext{user(7), user(7)}, init: []*corev1.SecurityContext{user(7)}, want: ptr.To[int64](7)},
		{name: "a container overrides the pod to the same", podUser: ptr.To[int64](7), containers: []*corev1.SecurityContext{user(7), nil}, want: ptr.To[int64](7)},
		{name: "two users", podUser: ptr.To[int64](1000), containers: []*corev1.SecurityContext{nil, user(1001)}},
		{name: "an init container differs", containers: []*corev1.SecurityContext{user(7)}, init: []*corev1.SecurityContext{user(0)}},
		{name: "one container without a user", containers: []*corev1.SecurityContext{user(7), nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{RunAsUser: tc.podUser}}}
			for _, sc := range tc.init {
				pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{SecurityContext: sc})
			}
			for _, sc := range tc.containers {
				pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{SecurityContext: sc})
			}
			got := fsUserOf(pod)
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Errorf("fsUserOf = %v, want %v", ptr.Deref(got, -1), ptr.Deref(tc.want, -1))
			}
		})
	}
}

// TestServiceAccountTokenFile writes a projected token the way setupVolume does (the file, then
// the fsGroup's bits and group) and checks it as the upstream spec "ServiceAccounts should set
// ownership and permission when RunAsUser or FsGroup is present" does.
func TestServiceAccountTokenFile(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user needs root")
	}
	for _, tc := range []struct {
		runAsUser, fsGroup bool
		wantMode           os.FileMode
		wantUID, wantGID   uint32
	}{
		{runAsUser: true, wantMode: 0o600, wantUID: 1000},
		{fsGroup: true, wantMode: 0o640, wantGID: 10000},
		{runAsUser: true, fsGroup: true, wantMode: 0o640, wantUID: 1000, wantGID: 10000},
		{wantMode: 0o644},
	} {
		pod := makePod("token").obj()
		pod.Spec.SecurityContext = &corev1.PodSecurityContext{}
		if tc.runAsUser {
			pod.Spec.SecurityContext.RunAsUser = ptr.To[int64](1000)
		}
		if tc.fsGroup {
			pod.Spec.SecurityContext.FSGroup = ptr.To[int64](10000)
		}
		dir := t.TempDir()
		fsGroup, _ := fsGroupOf(pod)
		files := map[string]fileContent{"token": tokenFile(pod, []byte("a.b.c"), ptr.To[int32](0o644))}
		if err := writeAtomicDir(dir, withFSGroupModes(files, fsGroup)); err != nil {
			t.Fatal(err)
		}
		if fsGroup != nil {
			if err := setVolumeOwnership(dir, *fsGroup, true, true); err != nil {
				t.Fatal(err)
			}
		}
		info, err := os.Stat(filepath.Join(dir, "token"))
		if err != nil {
			t.Fatal(err)
		}
		st := info.Sys().(*syscall.Stat_t)
		if info.Mode() != tc.wantMode || st.Uid != tc.wantUID || st.Gid != tc.wantGID {
			t.Errorf("runAsUser %v fsGroup %v: %v %d:%d, want %v %d:%d", tc.runAsUser, tc.fsGroup, info.Mode(), st.Uid, st.Gid, tc.wantMode, tc.wantUID, tc.wantGID)
		}
		// A second write of the same token leaves the generation alone (unchanged sees the owner).
		before, _ := os.Readlink(filepath.Join(dir, atomicDataLink))
		if err := writeAtomicDir(dir, withFSGroupModes(files, fsGroup)); err != nil {
			t.Fatal(err)
		}
		if after, _ := os.Readlink(filepath.Join(dir, atomicDataLink)); after != before {
			t.Errorf("runAsUser %v fsGroup %v: an unchanged token was written again (%s -> %s)", tc.runAsUser, tc.fsGroup, before, after)
		}
	}
}
