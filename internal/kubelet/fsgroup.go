package kubelet

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	corev1 "k8s.io/api/core/v1"
)

// Permission bits Kubernetes adds for a pod's fsGroup, so that the group can
// use the volume: read-write, or read-only for read-only volumes, and
// directories searchable and setgid (new files inherit the group).
const (
	fsGroupRW   os.FileMode = 0o660
	fsGroupRO   os.FileMode = 0o440
	fsGroupExec os.FileMode = 0o110
)

// fsGroupMode is the mode a volume file gets under an fsGroup: its own mode
// plus the group bits. Symlinks are left alone: a chmod would go to their
// target with the link's meaningless 0777.
func fsGroupMode(mode os.FileMode, readOnly bool) os.FileMode {
	if mode&os.ModeSymlink != 0 {
		return mode
	}
	mask := fsGroupRW
	if readOnly {
		mask = fsGroupRO
	}
	if mode.IsDir() {
		mask |= os.ModeSetgid | fsGroupExec
	}
	return mode | mask
}

// ownershipMatches reports whether a volume's root already has the fsGroup's
// group and bits: then fsGroupChangePolicy OnRootMismatch skips the walk.
func ownershipMatches(gid uint32, mode os.FileMode, fsGroup int64, readOnly bool) bool {
	return int64(gid) == fsGroup && fsGroupMode(mode, readOnly) == mode
}

// fsGroupOf returns the pod's fsGroup and whether every volume must be
// walked (policy Always, the default) or only those whose root does not
// match (OnRootMismatch).
func fsGroupOf(pod *corev1.Pod) (*int64, bool) {
	sc := pod.Spec.SecurityContext
	if sc == nil || sc.FSGroup == nil {
		return nil, false
	}
	always := sc.FSGroupChangePolicy == nil || *sc.FSGroupChangePolicy != corev1.FSGroupChangeOnRootMismatch
	return sc.FSGroup, always
}

// setVolumeOwnership gives everything under dir the group fsGroup and the
// fsGroup bits, as Kubernetes does for volumes that support ownership
// management. With always false, a root that matches already is taken as
// proof the rest does too.
func setVolumeOwnership(dir string, fsGroup int64, always, readOnly bool) error {
	root, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("fsGroup: %w", err)
	}
	if !always {
		if st, ok := root.Sys().(*syscall.Stat_t); ok && ownershipMatches(st.Gid, root.Mode(), fsGroup, readOnly) {
			return nil
		}
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); !ok || int64(st.Gid) != fsGroup {
			if err := os.Lchown(path, -1, int(fsGroup)); err != nil {
				return err
			}
		}
		if want := fsGroupMode(info.Mode(), readOnly); want != info.Mode() {
			if err := os.Chmod(path, want); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("fsGroup %d on %s: %w", fsGroup, dir, err)
	}
	return nil
}

// withFSGroupModes returns files with the fsGroup's read bits added, so the
// atomic writer creates them with their final modes (and sees them as
// unchanged on the next resync).
func withFSGroupModes(files map[string]fileContent, fsGroup *int64) map[string]fileContent {
	if fsGroup == nil {
		return files
	}
	out := make(map[string]fileContent, len(files))
	for name, f := range files {
		f.mode = fsGroupMode(f.mode, true)
		out[name] = f
	}
	return out
}

// fsUserOf is the one user every container of the pod runs as (its containers' runAsUser, or the
// pod's where a container sets none), nil when one runs without a runAsUser or two differ: the
// user Kubernetes gives a projected service account token to (its FsUserFrom).
func fsUserOf(pod *corev1.Pod) *int64 {
	var user *int64
	same := true
	visit := func(sc *corev1.SecurityContext) {
		effective := (*int64)(nil)
		if pod.Spec.SecurityContext != nil {
			effective = pod.Spec.SecurityContext.RunAsUser
		}
		if sc != nil && sc.RunAsUser != nil {
			effective = sc.RunAsUser
		}
		switch {
		case effective == nil || (user != nil && *user != *effective):
			same = false
		case user == nil:
			user = effective
		}
	}
	for i := range pod.Spec.InitContainers {
		visit(pod.Spec.InitContainers[i].SecurityContext)
	}
	for i := range pod.Spec.Containers {
		visit(pod.Spec.Containers[i].SecurityContext)
	}
	for i := range pod.Spec.EphemeralContainers {
		visit(pod.Spec.EphemeralContainers[i].SecurityContext)
	}
	if !same {
		return nil
	}
	return user
}

// tokenFile is a projected service account token's file. A token is a credential: where the pod
// names its user (one runAsUser for every container) or its group (fsGroup), the file is that
// user's alone, 0600 (an fsGroup then adds the group's read bit), instead of the volume's
// defaultMode, as Kubernetes' projected volume writes it.
func tokenFile(pod *corev1.Pod, token []byte, defaultMode *int32) fileContent {
	f := fileContent{data: token, mode: fileMode(nil, defaultMode), owner: fsUserOf(pod)}
	fsGroup, _ := fsGroupOf(pod)
	if f.owner != nil || fsGroup != nil {
		f.mode = 0o600
	}
	return f
}

// ownedBy reports whether a file belongs to owner; a file without one is the kubelet's, whoever
// runs it.
func ownedBy(info os.FileInfo, owner *int64) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return owner == nil || !ok || int64(st.Uid) == *owner
}
