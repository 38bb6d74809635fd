package kubelet

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func readVolumeFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return string(data)
}

func TestWriteAtomicDirSwapsContents(t *testing.T) {
	dir := t.TempDir()
	if err := writeAtomicDir(dir, map[string]fileContent{"a": {data: []byte("1"), mode: 0o644}, "sub/b": {data: []byte("2"), mode: 0o600}}); err != nil {
		t.Fatal(err)
	}
	if got := readVolumeFile(t, filepath.Join(dir, "a")); got != "1" {
		t.Errorf("a = %q", got)
	}
	if got := readVolumeFile(t, filepath.Join(dir, "sub", "b")); got != "2" {
		t.Errorf("sub/b = %q", got)
	}
	st, _ := os.Stat(filepath.Join(dir, "sub", "b"))
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v", st.Mode())
	}
	firstGen, _ := os.Readlink(filepath.Join(dir, atomicDataLink))

	// Same contents: nothing is rewritten.
	if err := writeAtomicDir(dir, map[string]fileContent{"a": {data: []byte("1"), mode: 0o644}, "sub/b": {data: []byte("2"), mode: 0o600}}); err != nil {
		t.Fatal(err)
	}
	if gen, _ := os.Readlink(filepath.Join(dir, atomicDataLink)); gen != firstGen {
		t.Errorf("unchanged contents produced a new generation %s", gen)
	}

	// New contents: switched in one step, old generation and stale keys gone.
	if err := writeAtomicDir(dir, map[string]fileContent{"a": {data: []byte("updated"), mode: 0o644}}); err != nil {
		t.Fatal(err)
	}
	if got := readVolumeFile(t, filepath.Join(dir, "a")); got != "updated" {
		t.Errorf("a after update = %q", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, "sub")); !os.IsNotExist(err) {
		t.Errorf("stale key sub still present: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, firstGen)); !os.IsNotExist(err) {
		t.Errorf("old generation %s not removed", firstGen)
	}
	if err := writeAtomicDir(dir, map[string]fileContent{"../escape": {data: []byte("x"), mode: 0o644}}); err == nil {
		t.Error("path escaping the volume accepted")
	}
}

func TestHostPathTypes(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path    string
		typ     corev1.HostPathType
		wantErr bool
	}{
		{filepath.Join(dir, "new-dir"), corev1.HostPathDirectoryOrCreate, false},
		{filepath.Join(dir, "new", "file"), corev1.HostPathFileOrCreate, false},
		{dir, corev1.HostPathDirectory, false},
		{file, corev1.HostPathDirectory, true},
		{file, corev1.HostPathFile, false},
		{dir, corev1.HostPathFile, true},
		{filepath.Join(dir, "absent"), corev1.HostPathDirectory, true},
		{file, corev1.HostPathSocket, true},
		{filepath.Join(dir, "anything"), corev1.HostPathUnset, false},
	}
	for _, tc := range tests {
		_, err := setupHostPath(&corev1.HostPathVolumeSource{Path: tc.path, Type: ptr.To(tc.typ)})
		if (err != nil) != tc.wantErr {
			t.Errorf("%s %q: err = %v, wantErr %v", tc.typ, tc.path, err, tc.wantErr)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "new-dir")); err != nil || !st.IsDir() {
		t.Errorf("DirectoryOrCreate did not create the directory")
	}
}

func TestPodVolumes(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	if _, err := h.client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "site", Namespace: "default"},
		Data:       map[string]string{"index.html": "v1", "other": "o"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "tls", Namespace: "default"}, Data: map[string][]byte{"key": []byte("k3y")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hostDir := t.TempDir()
	pod := makePod("vols").container(corev1.Container{
		Name: "app",
		VolumeMounts: []corev1.VolumeMount{
			{Name: "site", MountPath: "/www"},
			{Name: "tls", MountPath: "/tls"},
			{Name: "info", MountPath: "/info"},
			{Name: "all", MountPath: "/all"},
			{Name: "scratch", MountPath: "/scratch"},
			{Name: "scratch", MountPath: "/logs", SubPathExpr: "$(POD_NAME)"},
			{Name: "host", MountPath: "/host", ReadOnly: true},
		},
		Env: []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
	}).obj()
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "site", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "site"},
			Items:                []corev1.KeyToPath{{Key: "index.html", Path: "index.html", Mode: ptr.To[int32](0o600)}},
		}}},
		{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls", DefaultMode: ptr.To[int32](0o400)}}},
		{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
			{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
		}}}},
		{Name: "all", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "site"}, Items: []corev1.KeyToPath{{Key: "other", Path: "cm-other"}}}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "tls"}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "ns", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
		}}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostDir}}},
	}
	h.create(pod)
	h.waitPod("default", "vols", "running", podRunning)
	cfg := h.runtime.ContainerConfig(h.runtime.RunningContainer("uid-vols", "app"))
	mounts := map[string]string{}
	readOnly := map[string]bool{}
	for _, m := range cfg.Mounts {
		mounts[m.ContainerPath], readOnly[m.ContainerPath] = m.HostPath, m.Readonly
	}
	files := []struct{ mount, file, want string }{
		{"/www", "index.html", "v1"},
		{"/tls", "key", "k3y"},
		{"/info", "name", "vols"},
		{"/info", "labels", `app="vols"`},
		{"/all", "cm-other", "o"},
		{"/all", "key", "k3y"},
		{"/all", "ns", "default"},
	}
	for _, f := range files {
		if got := readVolumeFile(t, filepath.Join(mounts[f.mount], f.file)); got != f.want {
			t.Errorf("%s/%s = %q, want %q", f.mount, f.file, got, f.want)
		}
	}
	if _, err := os.Stat(filepath.Join(mounts["/www"], "other")); !os.IsNotExist(err) {
		t.Errorf("configMap key outside items projected: %v", err)
	}
	if st, _ := os.Stat(filepath.Join(mounts["/tls"], "key")); st.Mode().Perm() != 0o400 {
		t.Errorf("secret mode = %v", st.Mode())
	}
	for path, want := range map[string]bool{"/www": true, "/tls": true, "/scratch": false, "/host": true} {
		if readOnly[path] != want {
			t.Errorf("%s read-only = %v, want %v", path, readOnly[path], want)
		}
	}
	if mounts["/host"] != hostDir || !strings.HasSuffix(mounts["/logs"], filepath.Join("scratch", "vols")) {
		t.Errorf("host %s logs %s", mounts["/host"], mounts["/logs"])
	}
	if _, ok := mounts["/dev/termination-log"]; !ok {
		t.Errorf("no termination log mount in %v", mounts)
	}

	// A changed ConfigMap reaches the mounted file at the next resync.
	cm, _ := h.client.CoreV1().ConfigMaps("default").Get(ctx, "site", metav1.GetOptions{})
	cm.Data["index.html"] = "v2"
	if _, err := h.client.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.step(time.Minute) // the default SyncFrequency
	h.eventually("configmap update in the volume", func() bool {
		data, _ := os.ReadFile(filepath.Join(mounts["/www"], "index.html"))
		return string(data) == "v2"
	})

	// Removing the pod removes its volumes (but never a hostPath).
	if err := h.client.CoreV1().Pods("default").Delete(ctx, "vols", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	h.eventually("volumes removed", func() bool {
		_, err := os.Stat(mounts["/scratch"])
		return os.IsNotExist(err)
	})
	if _, err := os.Stat(hostDir); err != nil {
		t.Errorf("hostPath removed with the pod: %v", err)
	}
}

func TestMissingVolumeSourceKeepsPodCreating(t *testing.T) {
	h := newHarness(t, nil)
	pod := makePod("nomount").obj()
	pod.Spec.Volumes = []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "later"}}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}}
	h.create(pod)
	h.eventually("FailedMount event", func() bool {
		return h.hasEvent(`Warning FailedMount MountVolume.SetUp failed for volume "cfg" : configmap "later" not found`)
	})
	got := h.waitPod("default", "nomount", "pending status", func(p *corev1.Pod) bool { return statusOf(p, "app") != nil })
	if s := statusOf(got, "app"); got.Status.Phase != corev1.PodPending || s.State.Waiting == nil || s.State.Waiting.Reason != "ContainerCreating" {
		t.Errorf("phase %s state %+v", got.Status.Phase, s.State)
	}
	if _, err := h.client.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "later", Namespace: "default"}, Data: map[string]string{"k": "v"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.step(2 * time.Second)
	h.waitPod("default", "nomount", "running", podRunning)
}

// TestUnusedVolumesAreLeftAlone: a volume no container mounts or maps is not set up, as upstream's
// volume manager skips it: a pod naming a missing ConfigMap only as a volume runs, and nothing is
// written for it; the same volume once an ephemeral container mounts it is set up.
func TestUnusedVolumesAreLeftAlone(t *testing.T) {
	h := newHarness(t, nil)
	pod := makePod("unused").obj()
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "missing", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nowhere"}}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	created := h.create(pod)
	h.waitPod("default", "unused", "running", podRunning)
	if h.hasEvent("FailedMount") {
		t.Errorf("an unused volume was set up: %v", h.drainEvents())
	}
	for _, dir := range []string{"configmap/missing", "empty-dir/scratch"} {
		if _, err := os.Stat(filepath.Join(podDataDirIn(h.cfg.DataDir, created.UID), "volumes", dir)); !os.IsNotExist(err) {
			t.Errorf("%s exists (%v): an unused volume was set up", dir, err)
		}
	}
	if got := usedVolumes(&corev1.Pod{Spec: corev1.PodSpec{
		InitContainers:      []corev1.Container{{VolumeMounts: []corev1.VolumeMount{{Name: "a"}}}},
		Containers:          []corev1.Container{{VolumeDevices: []corev1.VolumeDevice{{Name: "b"}}}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{VolumeMounts: []corev1.VolumeMount{{Name: "c"}}}}},
	}}); len(got) != 3 || !got["a"] || !got["b"] || !got["c"] {
		t.Errorf("usedVolumes = %v, want a, b and c", got)
	}
}
