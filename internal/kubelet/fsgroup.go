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
