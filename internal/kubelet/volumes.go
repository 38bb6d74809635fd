package kubelet

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/kubelet/stats"
)

const (
	defaultVolumeMode = 0o644
	// atomicDataLink points at the current generation of a volume's files.
	atomicDataLink = "..data"
)

// volume is a pod volume prepared on the host.
type volume struct {
	hostPath string
	// readOnly volumes are mounted read-only whatever the mount says.
	readOnly bool
	// block volumes are a device at hostPath, given to containers through volumeDevices.
	block bool
}

type fileContent struct {
	data []byte
	mode os.FileMode
	// owner is the file's user when it is not root's: a service account token is given to the
	// pod's one user (tokenFile).
	owner *int64
}

// volumeSetupError is a volume that could not be prepared; the pod waits
// in ContainerCreating with a FailedMount event, as in Kubernetes.
type volumeSetupError struct {
	volume string
	err    error
}

func (e *volumeSetupError) Error() string {
	return fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", e.volume, e.err)
}

func (e *volumeSetupError) Unwrap() error { return e.err }

func (vm *volumeManager) volumesDir(pod *corev1.Pod) string {
	return filepath.Join(podDataDirIn(vm.dataDir, pod.UID), "volumes")
}

// hasRefreshedVolumes reports whether the pod has volumes whose contents
// follow API objects.
func hasRefreshedVolumes(pod *corev1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		// Claims are looked at again for expansion, CSI volumes for drivers that want to be called
		// on every sync (csivolume.go).
		if v.ConfigMap != nil || v.Secret != nil || v.DownwardAPI != nil || v.Projected != nil || v.PersistentVolumeClaim != nil || v.Ephemeral != nil || v.CSI != nil {
			return true
		}
	}
	return false
}

// setupVolumes prepares every volume a container of the pod mounts or maps on the host and
// returns them by name; it is idempotent and refreshes API-backed contents. A volume no
// container uses is left alone, as upstream's volume manager leaves it: a claim named only to
// keep it bound is not attached, staged or mapped for the pod.
func (vm *volumeManager) setupVolumes(ctx context.Context, pod *corev1.Pod, src *objectSource, in envInputs) (map[string]volume, error) {
	out := map[string]volume{}
	used := usedVolumes(pod)
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if !used[v.Name] {
			continue
		}
		vol, err := vm.setupVolume(ctx, pod, v, src, in)
		if err != nil {
			return nil, &volumeSetupError{volume: v.Name, err: err}
		}
		out[v.Name] = vol
	}
	return out, nil
}

// usedVolumes names the volumes some container of the pod (init and ephemeral ones too) mounts
// or maps as a device.
func usedVolumes(pod *corev1.Pod) map[string]bool {
	used := map[string]bool{}
	add := func(mounts []corev1.VolumeMount, devices []corev1.VolumeDevice) {
		for _, m := range mounts {
			used[m.Name] = true
		}
		for _, d := range devices {
			used[d.Name] = true
		}
	}
	for _, c := range pod.Spec.InitContainers {
		add(c.VolumeMounts, c.VolumeDevices)
	}
	for _, c := range pod.Spec.Containers {
		add(c.VolumeMounts, c.VolumeDevices)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		add(c.VolumeMounts, c.VolumeDevices)
	}
	return used
}

func (vm *volumeManager) setupVolume(ctx context.Context, pod *corev1.Pod, v *corev1.Volume, src *objectSource, in envInputs) (volume, error) {
	dir := func(kind string) string { return filepath.Join(vm.volumesDir(pod), kind, v.Name) }
	fsGroup, _ := fsGroupOf(pod)
	// API-backed volumes are written by the kubelet and read-only to the
	// pod: their files get the fsGroup's read bits when written and the
	// group after each write.
	atomic := func(kind string, files map[string]fileContent) (volume, error) {
		path := dir(kind)
		if err := writeAtomicDir(path, withFSGroupModes(files, fsGroup)); err != nil {
			return volume{}, err
		}
		if fsGroup != nil {
			if err := setVolumeOwnership(path, *fsGroup, true, true); err != nil {
				return volume{}, err
			}
		}
		return volume{hostPath: path, readOnly: true}, nil
	}
	switch {
	case v.EmptyDir != nil:
		path := dir("empty-dir")
		_, statErr := os.Stat(path)
		created := os.IsNotExist(statErr)
		if err := os.MkdirAll(path, 0o777); err != nil {
			return volume{}, err
		}
		if created {
			if err := os.Chmod(path, 0o777); err != nil {
				return volume{}, err
			}
		}
		if v.EmptyDir.Medium == corev1.StorageMediumMemory && !mounted(path) {
			if err := mountTmpfs(path, v.EmptyDir.SizeLimit); err != nil {
				return volume{}, err
			}
			created = true
		}
		// Only a new emptyDir gets the fsGroup: afterwards its files are
		// the pod's, and walking them on every sync would undo its chmods.
		if created && fsGroup != nil {
			if err := setVolumeOwnership(path, *fsGroup, true, false); err != nil {
				return volume{}, err
			}
		}
		return volume{hostPath: path}, nil
	case v.HostPath != nil:
		return setupHostPath(v.HostPath)
	case v.ConfigMap != nil:
		files, err := configMapFiles(src, pod.Namespace, v.ConfigMap.Name, v.ConfigMap.Items, v.ConfigMap.DefaultMode, v.ConfigMap.Optional)
		if err != nil {
			return volume{}, err
		}
		return atomic("configmap", files)
	case v.Secret != nil:
		files, err := secretFiles(src, pod.Namespace, v.Secret.SecretName, v.Secret.Items, v.Secret.DefaultMode, v.Secret.Optional)
		if err != nil {
			return volume{}, err
		}
		return atomic("secret", files)
	case v.DownwardAPI != nil:
		files, err := downwardAPIFiles(in, v.DownwardAPI.Items, v.DownwardAPI.DefaultMode)
		if err != nil {
			return volume{}, err
		}
		return atomic("downward-api", files)
	case v.Projected != nil:
		files, err := vm.projectedFiles(ctx, pod, v.Projected, src, in)
		if err != nil {
			return volume{}, err
		}
		return atomic("projected", files)
	case v.CSI != nil:
		return vm.setupCSIInline(ctx, pod, v)
	case v.PersistentVolumeClaim != nil || v.Ephemeral != nil:
		ref := v.PersistentVolumeClaim
		if v.Ephemeral != nil {
			// A generic ephemeral volume is the claim <pod>-<volume> its controller made for the pod.
			ref = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pod.Name + "-" + v.Name}
		}
		vol, local, err := vm.setupClaim(ctx, pod, v.Name, ref, v.Ephemeral != nil)
		if err != nil || !local || fsGroup == nil {
			return vol, err
		}
		// Local volumes support ownership management (hostPath ones do not,
		// as upstream): once per pod, since walking a volume of user data on
		// every sync would be costly, with the pod's fsGroupChangePolicy.
		key := string(pod.UID) + "/" + v.Name
		vm.mu.Lock()
		done := vm.owned[key]
		vm.mu.Unlock()
		if !done {
			_, always := fsGroupOf(pod)
			if err := setVolumeOwnership(vol.hostPath, *fsGroup, always, vol.readOnly); err != nil {
				return volume{}, err
			}
			vm.mu.Lock()
			vm.owned[key] = true
			vm.mu.Unlock()
		}
		return vol, nil
	}
	return volume{}, fmt.Errorf("volume type not supported by skiff")
}

func mountTmpfs(path string, sizeLimit *resource.Quantity) error {
	if mounted(path) {
		return nil
	}
	// No mode: a tmpfs root is 1777, sticky as upstream's emptyDir leaves it (a subPath made in it
	// takes that mode, sticky bit and all, which the EmptyDir subPath spec reads).
	options := ""
	if sizeLimit != nil && sizeLimit.Value() > 0 {
		options = "size=" + strconv.FormatInt(sizeLimit.Value(), 10)
	}
	if err := syscall.Mount("tmpfs", path, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, options); err != nil {
		return fmt.Errorf("mount tmpfs at %s: %w", path, err)
	}
	return nil
}

// mounted reports whether path is a mount point.
func mounted(path string) bool {
	for _, m := range mountsUnder(filepath.Dir(path)) {
		if m == path {
			return true
		}
	}
	return false
}

// mountsUnder lists mount points at or below dir, deepest first.
func mountsUnder(dir string) []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			out = append(out, f[4])
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// teardownVolumes unmounts what the kubelet mounted for a pod.
func (vm *volumeManager) teardownVolumes(uid string) {
	for _, m := range mountsUnder(filepath.Join(vm.dataDir, "pod-data", uid)) {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			vm.log.Warn("unmount pod volume", "path", m, "err", err)
		}
	}
}

func setupHostPath(hp *corev1.HostPathVolumeSource) (volume, error) {
	path := hp.Path
	typ := corev1.HostPathUnset
	if hp.Type != nil {
		typ = *hp.Type
	}
	st, statErr := os.Stat(path)
	switch typ {
	case corev1.HostPathDirectoryOrCreate:
		if os.IsNotExist(statErr) {
			if err := os.MkdirAll(path, 0o755); err != nil {
				return volume{}, err
			}
			return volume{hostPath: path}, nil
		}
		if statErr == nil && !st.IsDir() {
			return volume{}, fmt.Errorf("hostPath type check failed: %s is not a directory", path)
		}
	case corev1.HostPathFileOrCreate:
		if os.IsNotExist(statErr) {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return volume{}, err
			}
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return volume{}, err
			}
			return volume{hostPath: path}, f.Close()
		}
		if statErr == nil && !st.Mode().IsRegular() {
			return volume{}, fmt.Errorf("hostPath type check failed: %s is not a file", path)
		}
	case corev1.HostPathDirectory:
		if statErr != nil || !st.IsDir() {
			return volume{}, fmt.Errorf("hostPath type check failed: %s is not a directory", path)
		}
	case corev1.HostPathFile:
		if statErr != nil || !st.Mode().IsRegular() {
			return volume{}, fmt.Errorf("hostPath type check failed: %s is not a file", path)
		}
	case corev1.HostPathSocket:
		if statErr != nil || st.Mode()&os.ModeSocket == 0 {
			return volume{}, fmt.Errorf("hostPath type check failed: %s is not a socket file", path)
		}
	case corev1.HostPathCharDev:
		if statErr != nil || st.Mode()&os.ModeCharDevice == 0 {
			return volume{}, fmt.Errorf("hostPath type check failed: %s is not a character device", path)
		}
	case corev1.HostPathBlockDev:
		if statErr != nil || st.Mode()&os.ModeDevice == 0 || st.Mode()&os.ModeCharDevice != 0 {
			return volume{}, fmt.Errorf("hostPath type check failed: %s is not a block device", path)
		}
	}
	return volume{hostPath: path}, nil
}

// setupClaim resolves a claim to the volume bound to it (hostPath, local or CSI);
// local tells a local one. An ephemeral claim must be the pod's own.
func (vm *volumeManager) setupClaim(ctx context.Context, pod *corev1.Pod, podVolume string, ref *corev1.PersistentVolumeClaimVolumeSource, ephemeral bool) (volume, bool, error) {
	claim, err := vm.client.CoreV1().PersistentVolumeClaims(pod.Namespace).Get(ctx, ref.ClaimName, metav1.GetOptions{})
	if err != nil {
		return volume{}, false, fmt.Errorf("get persistentvolumeclaim %q: %w", ref.ClaimName, err)
	}
	if ephemeral && !metav1.IsControlledBy(claim, pod) {
		return volume{}, false, fmt.Errorf("PVC %s/%s was not created for pod %s/%s (pod is not owner)", claim.Namespace, claim.Name, pod.Namespace, pod.Name)
	}
	if claim.Spec.VolumeName == "" || claim.Status.Phase != corev1.ClaimBound {
		return volume{}, false, fmt.Errorf("persistentvolumeclaim %q is not bound", ref.ClaimName)
	}
	pv, err := vm.client.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return volume{}, false, fmt.Errorf("get persistentvolume %q: %w", claim.Spec.VolumeName, err)
	}
	switch {
	case pv.Spec.HostPath != nil:
		vol, err := setupHostPath(pv.Spec.HostPath)
		vol.readOnly = ref.ReadOnly
		return vol, false, err
	case pv.Spec.Local != nil:
		// Ownership (fsGroup) is managed on a local filesystem, never on a device.
		vol, err := vm.setupLocal(ctx, pod.UID, pv, ref.ReadOnly)
		if err == nil {
			err = vm.expandLocal(ctx, claim, pv)
		}
		return vol, err == nil && !vol.block, err
	case pv.Spec.CSI != nil:
		vol, err := vm.setupCSIClaim(ctx, pod, podVolume, ref, claim, pv)
		return vol, false, err
	}
	return volume{}, false, fmt.Errorf("persistentvolume %q: only hostPath, local and CSI volumes are supported", pv.Name)
}

func fileMode(itemMode, defaultMode *int32) os.FileMode {
	switch {
	case itemMode != nil:
		return os.FileMode(*itemMode)
	case defaultMode != nil:
		return os.FileMode(*defaultMode)
	}
	return defaultVolumeMode
}

// projectKeys turns object data into volume files: all keys, or only the
// listed items under their paths.
func projectKeys(kind, namespace, name string, data map[string][]byte, items []corev1.KeyToPath, defaultMode *int32, optional bool) (map[string]fileContent, error) {
	files := map[string]fileContent{}
	if len(items) == 0 {
		for key, value := range data {
			files[key] = fileContent{data: value, mode: fileMode(nil, defaultMode)}
		}
		return files, nil
	}
	for _, item := range items {
		value, ok := data[item.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("configuration error: key %q not found in %s %s/%s", item.Key, kind, namespace, name)
		}
		files[item.Path] = fileContent{data: value, mode: fileMode(item.Mode, defaultMode)}
	}
	return files, nil
}

func configMapFiles(src *objectSource, namespace, name string, items []corev1.KeyToPath, defaultMode *int32, optional *bool) (map[string]fileContent, error) {
	cm, err := src.configMap(namespace, name)
	if err != nil {
		if apierrors.IsNotFound(err) && optional != nil && *optional {
			return map[string]fileContent{}, nil
		}
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("configmap %q not found", name)
		}
		return nil, err
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	maps.Copy(data, cm.BinaryData)
	return projectKeys("ConfigMap", namespace, name, data, items, defaultMode, optional != nil && *optional)
}

func secretFiles(src *objectSource, namespace, name string, items []corev1.KeyToPath, defaultMode *int32, optional *bool) (map[string]fileContent, error) {
	sec, err := src.secret(namespace, name)
	if err != nil {
		if apierrors.IsNotFound(err) && optional != nil && *optional {
			return map[string]fileContent{}, nil
		}
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("secret %q not found", name)
		}
		return nil, err
	}
	return projectKeys("Secret", namespace, name, sec.Data, items, defaultMode, optional != nil && *optional)
}

func downwardAPIFiles(in envInputs, items []corev1.DownwardAPIVolumeFile, defaultMode *int32) (map[string]fileContent, error) {
	files := map[string]fileContent{}
	for _, item := range items {
		var value string
		var err error
		switch {
		case item.FieldRef != nil:
			value, err = podFieldValue(in, item.FieldRef.FieldPath)
		case item.ResourceFieldRef != nil:
			c := findContainer(in.pod, item.ResourceFieldRef.ContainerName)
			if c == nil {
				return nil, fmt.Errorf("downwardAPI %s: container %q not found", item.Path, item.ResourceFieldRef.ContainerName)
			}
			value, err = containerResourceValue(in.pod, c, in.allocatable, item.ResourceFieldRef)
		}
		if err != nil {
			return nil, fmt.Errorf("downwardAPI %s: %w", item.Path, err)
		}
		files[item.Path] = fileContent{data: []byte(value), mode: fileMode(item.Mode, defaultMode)}
	}
	return files, nil
}

func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}

func (vm *volumeManager) projectedFiles(ctx context.Context, pod *corev1.Pod, p *corev1.ProjectedVolumeSource, src *objectSource, in envInputs) (map[string]fileContent, error) {
	files := map[string]fileContent{}
	for _, s := range p.Sources {
		var part map[string]fileContent
		var err error
		switch {
		case s.ConfigMap != nil:
			part, err = configMapFiles(src, pod.Namespace, s.ConfigMap.Name, s.ConfigMap.Items, p.DefaultMode, s.ConfigMap.Optional)
		case s.Secret != nil:
			part, err = secretFiles(src, pod.Namespace, s.Secret.Name, s.Secret.Items, p.DefaultMode, s.Secret.Optional)
		case s.DownwardAPI != nil:
			part, err = downwardAPIFiles(in, s.DownwardAPI.Items, p.DefaultMode)
		case s.ServiceAccountToken != nil:
			var token string
			token, err = vm.serviceAccountToken(ctx, pod, s.ServiceAccountToken)
			part = map[string]fileContent{s.ServiceAccountToken.Path: tokenFile(pod, []byte(token), p.DefaultMode)}
		}
		if err != nil {
			return nil, err
		}
		maps.Copy(files, part)
	}
	return files, nil
}

// serviceAccountToken requests a token bound to the pod, reusing a cached
// one until 80% of its lifetime has passed.
func (vm *volumeManager) serviceAccountToken(ctx context.Context, pod *corev1.Pod, p *corev1.ServiceAccountTokenProjection) (string, error) {
	expiration := int64(3600)
	if p.ExpirationSeconds != nil {
		expiration = *p.ExpirationSeconds
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	key := fmt.Sprintf("%s/%s/%s/%d", pod.UID, sa, p.Audience, expiration)
	now := vm.clock.Now()
	vm.mu.Lock()
	cached, ok := vm.tokens[key]
	vm.mu.Unlock()
	if ok && now.Before(cached.refreshAt) {
		return cached.token, nil
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(expiration),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if p.Audience != "" {
		req.Spec.Audiences = []string{p.Audience}
	}
	resp, err := vm.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("failed to fetch token: %w", err)
	}
	lifetime := time.Duration(expiration) * time.Second
	if !resp.Status.ExpirationTimestamp.IsZero() {
		lifetime = resp.Status.ExpirationTimestamp.Sub(now)
	}
	vm.mu.Lock()
	vm.tokens[key] = cachedToken{token: resp.Status.Token, refreshAt: now.Add(lifetime * 8 / 10)}
	vm.mu.Unlock()
	return resp.Status.Token, nil
}

type cachedToken struct {
	token     string
	refreshAt time.Time
}

// writeAtomicDir makes dir hold exactly files, switching from the old
// contents to the new in one rename, so a container never sees a half
// written volume: files live in a timestamped directory that the "..data"
// symlink points to, and each top-level name links through "..data".
func writeAtomicDir(dir string, files map[string]fileContent) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if unchanged(dir, files) {
		return nil
	}
	generation, err := os.MkdirTemp(dir, "..gen_")
	if err != nil {
		return err
	}
	if err := os.Chmod(generation, 0o755); err != nil {
		return err
	}
	for _, rel := range sortedKeys(files) {
		clean := filepath.Clean(rel)
		if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || strings.HasPrefix(clean, "..") {
			return fmt.Errorf("invalid volume file path %q", rel)
		}
		path := filepath.Join(generation, clean)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		f := files[rel]
		if err := os.WriteFile(path, f.data, f.mode); err != nil {
			return err
		}
		if err := os.Chmod(path, f.mode); err != nil {
			return err
		}
		if f.owner != nil {
			if err := os.Lchown(path, int(*f.owner), -1); err != nil {
				return err
			}
		}
	}
	oldTarget, _ := os.Readlink(filepath.Join(dir, atomicDataLink))
	tmpLink := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmpLink)
	if err := os.Symlink(filepath.Base(generation), tmpLink); err != nil {
		return err
	}
	if err := os.Rename(tmpLink, filepath.Join(dir, atomicDataLink)); err != nil {
		return err
	}
	top := map[string]bool{}
	for rel := range files {
		top[strings.Split(filepath.Clean(rel), string(filepath.Separator))[0]] = true
	}
	for name := range top {
		link := filepath.Join(dir, name)
		if target, err := os.Readlink(link); err == nil && target == filepath.Join(atomicDataLink, name) {
			continue
		}
		_ = os.Remove(link)
		if err := os.Symlink(filepath.Join(atomicDataLink, name), link); err != nil {
			return err
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, "..") || top[name] {
			continue
		}
		_ = os.Remove(filepath.Join(dir, name))
	}
	if oldTarget != "" && oldTarget != filepath.Base(generation) {
		_ = os.RemoveAll(filepath.Join(dir, oldTarget))
	}
	return nil
}

// unchanged reports whether dir's current generation holds exactly files.
func unchanged(dir string, files map[string]fileContent) bool {
	current := filepath.Join(dir, atomicDataLink)
	if _, err := os.Stat(current); err != nil {
		return false
	}
	count := 0
	err := filepath.Walk(current+"/", func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		count++
		rel, _ := filepath.Rel(current, path)
		want, ok := files[rel]
		if !ok || info.Mode().Perm() != want.mode.Perm() || !ownedBy(info, want.owner) {
			return fmt.Errorf("differs")
		}
		data, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(data, want.data) {
			return fmt.Errorf("differs")
		}
		return nil
	})
	return err == nil && count == len(files)
}

// containerMounts turns a container's volumeMounts into CRI mounts.
func containerMounts(c *corev1.Container, volumes map[string]volume, lookup func(string) (string, bool)) ([]*runtimeapi.Mount, error) {
	var out []*runtimeapi.Mount
	for _, m := range c.VolumeMounts {
		vol, ok := volumes[m.Name]
		if !ok {
			return nil, fmt.Errorf("volume %q not found for mount %s", m.Name, m.MountPath)
		}
		host := vol.hostPath
		subPath := m.SubPath
		if m.SubPathExpr != "" {
			subPath = expandVars(m.SubPathExpr, lookup)
		}
		if subPath != "" {
			resolved, err := resolveSubPath(host, subPath)
			if err != nil {
				return nil, err
			}
			host = resolved
		}
		mount := &runtimeapi.Mount{ContainerPath: m.MountPath, HostPath: host, Readonly: m.ReadOnly || vol.readOnly}
		if m.MountPropagation != nil {
			switch *m.MountPropagation {
			case corev1.MountPropagationHostToContainer:
				mount.Propagation = runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER
			case corev1.MountPropagationBidirectional:
				mount.Propagation = runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL
			}
		}
		out = append(out, mount)
	}
	return out, nil
}

// volumeUsage measures the pods' volumes the kubelet keeps under their data directories, and
// asks the CSI drivers about theirs.
func (vm *volumeManager) volumeUsage(ctx context.Context, pods []*corev1.Pod) map[string][]stats.Volume {
	out := map[string][]stats.Volume{}
	for _, pod := range pods {
		if vols := vm.csiVolumeStats(ctx, pod); len(vols) > 0 {
			out[string(pod.UID)] = append(out[string(pod.UID)], vols...)
		}
		root := vm.volumesDir(pod)
		kinds, err := os.ReadDir(root)
		if err != nil {
			continue
		}
		claims := map[string]string{}
		for _, v := range pod.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				claims[v.Name] = v.PersistentVolumeClaim.ClaimName
			}
		}
		for _, kind := range kinds {
			vols, err := os.ReadDir(filepath.Join(root, kind.Name()))
			if err != nil {
				continue
			}
			for _, v := range vols {
				dir := filepath.Join(root, kind.Name(), v.Name())
				vol := stats.Volume{Name: v.Name(), Used: diskUsage(dir), Fs: statFs(dir)}
				if claim, ok := claims[v.Name()]; ok {
					vol.PVC = &statsv1alpha1.PVCReference{Name: claim, Namespace: pod.Namespace}
				}
				out[string(pod.UID)] = append(out[string(pod.UID)], vol)
			}
		}
	}
	return out
}
