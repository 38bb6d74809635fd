package kubelet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A local PersistentVolume names a directory or a block device on the node. A device in
// volumeMode Block goes to containers as a device (volumeDevices). A device in Filesystem mode
// is formatted when it holds no filesystem (spec.local.fsType, ext4 by default) and mounted once
// per node under the kubelet's root, as upstream's local volume plugin does; pods bind that
// mount. Nothing is ever formatted that already holds a filesystem or anything blkid knows.

// localVolumePlan is what setting up a local volume needs: a plain path, a device handed over,
// or a device to format (when empty) and mount at mountDir.
type localVolumePlan struct {
	path     string
	block    bool   // the device itself, through volumeDevices
	mountDir string // set: mount the device here (its filesystem type fsType)
	fsType   string
}

// planLocalVolume decides how pv's local path is served, given what is at it (pure).
func planLocalVolume(pv *corev1.PersistentVolume, info os.FileInfo, rootDir string) (localVolumePlan, error) {
	path := pv.Spec.Local.Path
	isDevice := info.Mode()&os.ModeDevice != 0 && info.Mode()&os.ModeCharDevice == 0
	blockMode := pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == corev1.PersistentVolumeBlock
	switch {
	case blockMode && !isDevice:
		return localVolumePlan{}, fmt.Errorf("local volume %q: volumeMode Block needs a block device, %s is not one", pv.Name, path)
	case blockMode:
		return localVolumePlan{path: path, block: true}, nil
	case isDevice:
		fsType := "ext4"
		if pv.Spec.Local.FSType != nil && *pv.Spec.Local.FSType != "" {
			fsType = *pv.Spec.Local.FSType
		}
		return localVolumePlan{path: path, mountDir: localDeviceMountDir(rootDir, pv.Name), fsType: fsType}, nil
	case !info.IsDir():
		return localVolumePlan{}, fmt.Errorf("local volume %q: %s is neither a directory nor a block device", pv.Name, path)
	}
	return localVolumePlan{path: path}, nil
}

// localDeviceMountDir is where a local volume's device is mounted on the node, upstream's path.
func localDeviceMountDir(rootDir, pvName string) string {
	return filepath.Join(rootDir, "plugins", "kubernetes.io", "local-volume", "mounts", pvName)
}

// setupLocal carries out planLocalVolume's plan: the volume the pod's containers get. A device
// mount records pod as one of its users (unmountUnusedLocalDevices).
func (vm *volumeManager) setupLocal(ctx context.Context, pod types.UID, pv *corev1.PersistentVolume, readOnly bool) (volume, error) {
	info, err := os.Stat(pv.Spec.Local.Path)
	if err != nil {
		return volume{}, fmt.Errorf("local volume %q: %w", pv.Name, err)
	}
	plan, err := planLocalVolume(pv, info, vm.rootDir)
	if err != nil {
		return volume{}, err
	}
	if plan.mountDir == "" {
		return volume{hostPath: plan.path, block: plan.block, readOnly: readOnly}, nil
	}
	vm.mu.Lock()
	defer vm.mu.Unlock()
	if err := mountLocalDevice(ctx, plan); err != nil {
		return volume{}, fmt.Errorf("local volume %q: %w", pv.Name, err)
	}
	if vm.localDeviceUsers[plan.mountDir] == nil {
		vm.localDeviceUsers[plan.mountDir] = map[types.UID]bool{}
	}
	vm.localDeviceUsers[plan.mountDir][pod] = true
	return volume{hostPath: plan.mountDir, readOnly: readOnly}, nil
}

// mountLocalDevice formats plan's device when blkid finds nothing on it, then mounts it at
// plan.mountDir unless it is mounted there already.
func mountLocalDevice(ctx context.Context, plan localVolumePlan) error {
	if mounted(plan.mountDir) {
		return nil
	}
	if err := os.MkdirAll(plan.mountDir, 0o750); err != nil {
		return err
	}
	existing, err := deviceFilesystem(ctx, plan.path)
	if err != nil {
		return err
	}
	switch {
	case existing == "":
		if out, err := exec.CommandContext(ctx, "mkfs", mkfsArgs(plan.fsType, plan.path)...).CombinedOutput(); err != nil {
			return fmt.Errorf("format %s as %s: %w: %s", plan.path, plan.fsType, err, bytes.TrimSpace(out))
		}
	case existing != plan.fsType:
		return fmt.Errorf("%s holds %s, not the volume's %s: not formatted again", plan.path, existing, plan.fsType)
	}
	if out, err := exec.CommandContext(ctx, "mount", "-t", plan.fsType, plan.path, plan.mountDir).CombinedOutput(); err != nil {
		return fmt.Errorf("mount %s at %s: %w: %s", plan.path, plan.mountDir, err, bytes.TrimSpace(out))
	}
	return nil
}

// localExpansion decides whether a device-backed local volume's filesystem is to grow: its PV
// was made larger (by hand, after the device grew: local volumes have no controller that
// expands them) than the claim's status says (pure).
func localExpansion(claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) (resource.Quantity, bool) {
	want, ok := pv.Spec.Capacity[corev1.ResourceStorage]
	if !ok {
		return resource.Quantity{}, false
	}
	have, ok := claim.Status.Capacity[corev1.ResourceStorage]
	return want, ok && have.Cmp(want) < 0
}

// growCommand is the command that grows fsType's filesystem on dev mounted at dir to fill dev.
func growCommand(fsType, dev, dir string) ([]string, error) {
	switch {
	case strings.HasPrefix(fsType, "ext"):
		return []string{"resize2fs", dev}, nil
	case fsType == "xfs":
		return []string{"xfs_growfs", dir}, nil
	}
	return nil, fmt.Errorf("growing a %s filesystem is not supported", fsType)
}

// expandLocal grows the mounted filesystem of a device-backed local volume whose PV grew, then
// records the new size in the claim's status, as upstream's kubelet expands a local volume.
func (vm *volumeManager) expandLocal(ctx context.Context, claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) error {
	size, due := localExpansion(claim, pv)
	if !due || pv.Spec.Local == nil {
		return nil
	}
	info, err := os.Stat(pv.Spec.Local.Path)
	if err != nil {
		return fmt.Errorf("local volume %q: %w", pv.Name, err)
	}
	plan, err := planLocalVolume(pv, info, vm.rootDir)
	if err != nil || plan.mountDir == "" {
		return err // a directory or a raw device: nothing of the kubelet's to grow
	}
	argv, err := growCommand(plan.fsType, plan.path, plan.mountDir)
	if err != nil {
		return fmt.Errorf("local volume %q: %w", pv.Name, err)
	}
	if out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput(); err != nil {
		return fmt.Errorf("local volume %q: %s: %w: %s", pv.Name, strings.Join(argv, " "), err, bytes.TrimSpace(out))
	}
	if _, err := vm.client.CoreV1().PersistentVolumeClaims(claim.Namespace).UpdateStatus(ctx, expandedClaim(claim, size), metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("persistentvolumeclaim %s/%s status after expansion: %w", claim.Namespace, claim.Name, err)
	}
	vm.log.Info("local volume expanded on the node", "pv", pv.Name, "claim", claim.Namespace+"/"+claim.Name, "size", size.String())
	return nil
}

// mkfsArgs are mkfs's arguments for fsType on dev, forced (the device holds nothing blkid knows,
// and an ext4 mkfs would otherwise ask about a whole device).
func mkfsArgs(fsType, dev string) []string {
	args := []string{"-t", fsType}
	switch {
	case strings.HasPrefix(fsType, "ext"):
		args = append(args, "-F")
	case fsType == "xfs":
		args = append(args, "-f")
	}
	return append(args, dev)
}

// deviceFilesystem is what blkid says the device holds ("" for nothing it knows).
func deviceFilesystem(ctx context.Context, dev string) (string, error) {
	out, err := exec.CommandContext(ctx, "blkid", "-p", "-s", "TYPE", "-s", "PTTYPE", "-o", "export", dev).Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 2 {
		return "", nil // blkid -p: nothing found
	}
	if err != nil {
		return "", fmt.Errorf("blkid %s: %w", dev, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "TYPE="); ok {
			return v, nil
		}
		if v, ok := strings.CutPrefix(line, "PTTYPE="); ok {
			return "partition table " + v, nil
		}
	}
	return "", nil
}

// unmountUnusedLocalDevices unmounts the local volumes' device mounts whose pods are all gone
// (inUse says which pods the kubelet still has); a mount no pod of this kubelet's life used (one
// from before a restart) goes once its pods have come back or not.
func (vm *volumeManager) unmountUnusedLocalDevices(inUse func(types.UID) bool) []error {
	dirs, _ := filepath.Glob(localDeviceMountDir(vm.rootDir, "*"))
	vm.mu.Lock()
	defer vm.mu.Unlock()
	var errs []error
	for _, dir := range dirs {
		used := false
		for uid := range vm.localDeviceUsers[dir] {
			if inUse(uid) {
				used = true
			} else {
				delete(vm.localDeviceUsers[dir], uid)
			}
		}
		if used || !mounted(dir) {
			continue
		}
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("unmount %s: %w: %s", dir, err, bytes.TrimSpace(out)))
			continue
		}
		delete(vm.localDeviceUsers, dir)
		_ = os.Remove(dir)
	}
	return errs
}
