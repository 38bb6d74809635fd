package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
)

// cgroupV1Root is where a hybrid layout mounts its cgroup v1 hierarchies, one directory per
// controller (systemd's place, and where runc and crun look for them).
const cgroupV1Root = "/sys/fs/cgroup"

// cgroupV1Lock is the file whose lock serializes the nodes of one machine that move controllers
// at the same moment, so the second sees the first's mount instead of stacking another on it.
func cgroupV1Lock() string { return filepath.Join(os.TempDir(), "skiff-cgroup-v1.lock") }

// mountCgroupV1 moves controller from a hybrid layout's cgroup2 hierarchy to a cgroup v1
// hierarchy of its own at /sys/fs/cgroup/<controller>, as systemd's hybrid layout has every
// controller (its cgroup2 hierarchy only tracks processes). The kernel binds a controller to one
// hierarchy at a time: mounting it as v1 takes it out of cgroup2's cgroup.controllers, which is
// what crun checks. It fails (EBUSY) where a cgroup2 group has the controller enabled, and where
// /sys/fs/cgroup is read-only. A controller already on a v1 hierarchy (another node moved it) is
// mounted only where this mount namespace has no mount of it (the same hierarchy, mounted again);
// one mounted here already is left.
func mountCgroupV1(controller string) error {
	lock, err := os.OpenFile(cgroupV1Lock(), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open the cgroup v1 lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	if !cgroupV1MountNeeded(controller) {
		return nil
	}
	dir := filepath.Join(cgroupV1Root, controller)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("make %s: %w", dir, err)
	}
	if err := syscall.Mount("cgroup", dir, "cgroup", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, controller); err != nil {
		return fmt.Errorf("mount -t cgroup -o %s cgroup %s: %w", controller, dir, err)
	}
	return nil
}

// cgroupV1MountNeeded: controller is in the cgroup2 hierarchy of a hybrid layout, or bound to a
// v1 hierarchy this mount namespace has no mount of; read under the lock, so a node that started
// beside another sees what the other did.
func cgroupV1MountNeeded(controller string) bool {
	host := realOCIHost()
	return slices.Contains(host.cgroup2ControllerList(), controller) || slices.Contains(host.unmountedV1(), controller)
}
