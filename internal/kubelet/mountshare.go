package kubelet

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// sharedMountPlan decides what makes dir a shared mount, from /proc/self/mountinfo: CSI node
// plugins mount the pods directory with mountPropagation Bidirectional, so the mounts they make
// under it must reach the host (and the pods' containers), which needs the mount holding dir
// to be shared. bind says dir must first become a mount point of its own (a bind mount onto
// itself), so that only it, not the file system it lives on, changes propagation.
func sharedMountPlan(mountinfo, dir string) (bind, makeShared bool) {
	best, shared := "", false
	for _, line := range strings.Split(mountinfo, "\n") {
		f := strings.Fields(line)
		if len(f) < 7 {
			continue
		}
		point := f[4]
		if point != dir && !strings.HasPrefix(dir, strings.TrimSuffix(point, "/")+"/") {
			continue
		}
		if len(point) < len(best) {
			continue
		}
		best, shared = point, false
		// Optional fields run from the 7th field to the "-" separator.
		for _, opt := range f[6:] {
			if opt == "-" {
				break
			}
			if strings.HasPrefix(opt, "shared:") {
				shared = true
			}
		}
	}
	if shared {
		return false, false
	}
	return best != dir, true
}

// ensureSharedMount makes dir (created if missing) a shared mount, as Kubernetes' kubelet makes
// its root directory rshared.
func ensureSharedMount(dir string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	bind, share := sharedMountPlan(string(info), resolved)
	if bind {
		if err := syscall.Mount(resolved, resolved, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return fmt.Errorf("bind mount %s onto itself: %w", resolved, err)
		}
	}
	if share {
		if err := syscall.Mount("none", resolved, "", syscall.MS_SHARED|syscall.MS_REC, ""); err != nil {
			return fmt.Errorf("make %s a shared mount: %w", resolved, err)
		}
	}
	return nil
}
