package kubelet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/skiff-sh/skiff/internal/kubelet/csi"
	"github.com/skiff-sh/skiff/internal/kubelet/stats"
)

// csiCallTimeout bounds one call to a driver: a driver that hangs fails the sync, which is retried.
const csiCallTimeout = 2 * time.Minute

// csiDriverFor returns the registered driver and its CSIDriver object (nil when there is none:
// Kubernetes' defaults apply).
func (vm *volumeManager) csiDriverFor(ctx context.Context, name string) (*csi.Driver, *storagev1.CSIDriver, csiCaps, error) {
	d, ok := vm.drivers.Get(name)
	if !ok {
		return nil, nil, csiCaps{}, fmt.Errorf("kubernetes.io/csi: driver name %s not found in the list of registered CSI drivers", name)
	}
	obj, err := vm.client.StorageV1().CSIDrivers().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		obj, err = nil, nil
	}
	if err != nil {
		return nil, nil, csiCaps{}, fmt.Errorf("get csidriver %s: %w", name, err)
	}
	caps := csiCaps{
		stage:       d.Has(csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME),
		multiWriter: d.Has(csipb.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER),
		mountGroup:  d.Has(csipb.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP),
	}
	return d, obj, caps, nil
}

// setupCSIClaim mounts a claim bound to a CSI persistent volume.
func (vm *volumeManager) setupCSIClaim(ctx context.Context, pod *corev1.Pod, podVolume string, ref *corev1.PersistentVolumeClaimVolumeSource, claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) (volume, error) {
	d, obj, caps, err := vm.csiDriverFor(ctx, pv.Spec.CSI.Driver)
	if err != nil {
		return volume{}, err
	}
	v := csiVolumeFromPV(pod, podVolume, ref, pv, obj, caps, vm.nodeName)
	if readWriteOncePodOnly(pv) && csiHeldByOtherPod(pv, string(pod.UID), vm.csiRecordsByPod()) {
		return volume{}, errors.New("volume uses the ReadWriteOncePod access mode and is already in use by another pod")
	}
	vol, err := vm.setupCSI(ctx, pod, d, v)
	if err != nil {
		return volume{}, err
	}
	if err := vm.expandCSI(ctx, pod, d, v, vol, claim, pv); err != nil {
		// The volume is usable at its old size; the expansion is tried again on the next sync.
		vm.recorder.Event(pod, corev1.EventTypeWarning, "FileSystemResizeFailed", err.Error())
	}
	return vol, nil
}

// setupCSIInline mounts an inline (ephemeral) CSI volume.
func (vm *volumeManager) setupCSIInline(ctx context.Context, pod *corev1.Pod, vol *corev1.Volume) (volume, error) {
	d, obj, caps, err := vm.csiDriverFor(ctx, vol.CSI.Driver)
	if err != nil {
		return volume{}, err
	}
	v, err := csiVolumeInline(pod, vol, obj, caps)
	if err != nil {
		return volume{}, err
	}
	return vm.setupCSI(ctx, pod, d, v)
}

// setupCSI waits for the attach, stages and publishes one volume; a volume published already
// (this kubelet's memory) is only looked at, unless its driver wants to be called again on every
// sync (requiresRepublish). Each step is recorded on disk before it is taken, and its outcome
// after: a call that failed for good owes no reverse call, one whose outcome is uncertain does.
func (vm *volumeManager) setupCSI(ctx context.Context, pod *corev1.Pod, d *csi.Driver, v csiVolume) (volume, error) {
	paths := csiPathsFor(vm.rootDir, string(pod.UID), v)
	out := volume{hostPath: paths.target, readOnly: v.readOnly, block: v.block}
	vm.mu.Lock()
	published := vm.csiPublished[paths.target]
	vm.mu.Unlock()
	if published && !v.republish {
		return out, nil
	}
	publishContext, err := vm.csiAttached(ctx, v)
	if err != nil {
		return volume{}, err
	}
	stageSecrets, err := vm.csiSecrets(ctx, v.stageSecret)
	if err != nil {
		return volume{}, err
	}
	publishSecrets, err := vm.csiSecrets(ctx, v.publishSecret)
	if err != nil {
		return volume{}, err
	}
	volumeContext, err := vm.csiTokens(ctx, pod, v)
	if err != nil {
		return volume{}, err
	}
	staged := !v.ephemeral && d.Has(csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	record := v.record(vm.nodeName, paths, staged)
	if previous, err := readVolData(filepath.Join(paths.dir, csiVolDataFile)); err == nil {
		record.Done = previous.Done
	}
	// The pod's record comes first: it says the staging path is in use before anything is staged.
	if err := writeVolData(paths.dir, record); err != nil {
		return volume{}, err
	}
	callCtx, cancel := context.WithTimeout(ctx, csiCallTimeout)
	defer cancel()
	if staged {
		if err := vm.csiStage(callCtx, d, v, paths, publishContext, stageSecrets); err != nil {
			return volume{}, err
		}
	}
	if err := os.MkdirAll(filepath.Dir(paths.target), 0o750); err != nil {
		return volume{}, fmt.Errorf("kubernetes.io/csi: target's parent: %w", err)
	}
	req := &csipb.NodePublishVolumeRequest{
		VolumeId: v.handle, PublishContext: publishContext, TargetPath: paths.target, VolumeCapability: v.capability(),
		Readonly: v.readOnly, Secrets: publishSecrets, VolumeContext: volumeContext,
	}
	if staged {
		req.StagingTargetPath = paths.staging
	}
	_, err = d.Node.NodePublishVolume(callCtx, req)
	if (err == nil || csiOutcomeUncertain(err)) && !record.Done {
		record.Done = true
		if werr := writeVolData(paths.dir, record); werr != nil {
			return volume{}, errors.Join(err, werr)
		}
	}
	if err != nil {
		return volume{}, fmt.Errorf("kubernetes.io/csi: mounter.SetUpAt failed to publish volume %s: %w", v.specName, err)
	}
	if v.fsGroup != nil && !v.readOnly && !published {
		_, always := fsGroupOf(pod)
		if err := setVolumeOwnership(paths.target, *v.fsGroup, always, false); err != nil {
			return volume{}, fmt.Errorf("kubernetes.io/csi: fsGroup of %s: %w", v.specName, err)
		}
	}
	vm.mu.Lock()
	vm.csiPublished[paths.target] = true
	vm.mu.Unlock()
	return out, nil
}

// csiStage stages a volume once per node (the drivers' NodeStageVolume is idempotent, so a
// restarted kubelet that stages again does no harm), under stageMu so that no unstage of the
// same volume runs meanwhile.
func (vm *volumeManager) csiStage(ctx context.Context, d *csi.Driver, v csiVolume, paths csiPaths, publishContext, secrets map[string]string) error {
	vm.stageMu.Lock()
	defer vm.stageMu.Unlock()
	vm.mu.Lock()
	done := vm.csiStaged[paths.staging]
	vm.mu.Unlock()
	if done {
		return nil
	}
	record := v.record(vm.nodeName, paths, true)
	record.TargetPath = paths.staging
	if previous, err := readVolData(paths.stagingRecord); err == nil {
		record.Done = previous.Done
	}
	if err := writeVolData(filepath.Dir(paths.stagingRecord), record); err != nil {
		return err
	}
	if err := os.MkdirAll(paths.staging, 0o750); err != nil {
		return fmt.Errorf("kubernetes.io/csi: staging path: %w", err)
	}
	if v.block {
		// A block volume's staging path is the driver's to create.
		_ = os.Remove(paths.staging)
	}
	_, err := d.Node.NodeStageVolume(ctx, &csipb.NodeStageVolumeRequest{
		VolumeId: v.handle, PublishContext: publishContext, StagingTargetPath: paths.staging, VolumeCapability: v.capability(),
		Secrets: secrets, VolumeContext: v.volumeContext,
	})
	if (err == nil || csiOutcomeUncertain(err)) && !record.Done {
		record.Done = true
		if werr := writeVolData(filepath.Dir(paths.stagingRecord), record); werr != nil {
			return errors.Join(err, werr)
		}
	}
	if err != nil {
		return fmt.Errorf("kubernetes.io/csi: attacher.MountDevice failed to stage volume %s: %w", v.specName, err)
	}
	vm.mu.Lock()
	vm.csiStaged[paths.staging] = true
	vm.mu.Unlock()
	return nil
}

// csiAttached returns the attachment's publish context once the VolumeAttachment says the volume
// is attached to this node.
func (vm *volumeManager) csiAttached(ctx context.Context, v csiVolume) (map[string]string, error) {
	if v.attachment == "" {
		return nil, nil
	}
	va, err := vm.client.StorageV1().VolumeAttachments().Get(ctx, v.attachment, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("kubernetes.io/csi: waiting for VolumeAttachment %s of volume %s to be attached to node %s", v.attachment, v.specName, vm.nodeName)
	}
	if err != nil {
		return nil, fmt.Errorf("get volumeattachment %s: %w", v.attachment, err)
	}
	if !va.Status.Attached {
		if e := va.Status.AttachError; e != nil {
			return nil, fmt.Errorf("kubernetes.io/csi: attachment for %s failed: %s", v.handle, e.Message)
		}
		return nil, fmt.Errorf("kubernetes.io/csi: waiting for VolumeAttachment %s of volume %s to be attached to node %s", v.attachment, v.specName, vm.nodeName)
	}
	return va.Status.AttachmentMetadata, nil
}

func (vm *volumeManager) csiSecrets(ctx context.Context, ref *corev1.SecretReference) (map[string]string, error) {
	if ref == nil {
		return nil, nil
	}
	s, err := vm.client.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("kubernetes.io/csi: failed to find the secret %s in the namespace %s: %w", ref.Name, ref.Namespace, err)
	}
	out := map[string]string{}
	for key, value := range s.Data {
		out[key] = string(value)
	}
	return out, nil
}

// csiTokens returns the volume context with the pod's service account tokens for the audiences
// the driver asked for (CSIDriver tokenRequests), as a JSON object keyed by audience.
func (vm *volumeManager) csiTokens(ctx context.Context, pod *corev1.Pod, v csiVolume) (map[string]string, error) {
	if len(v.tokenRequests) == 0 {
		return v.volumeContext, nil
	}
	type token struct {
		Token               string      `json:"token"`
		ExpirationTimestamp metav1.Time `json:"expirationTimestamp"`
	}
	tokens := map[string]token{}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	for _, tr := range v.tokenRequests {
		req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: tr.ExpirationSeconds,
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
		}}
		if tr.Audience != "" {
			req.Spec.Audiences = []string{tr.Audience}
		}
		resp, err := vm.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("kubernetes.io/csi: token for audience %q: %w", tr.Audience, err)
		}
		tokens[tr.Audience] = token{Token: resp.Status.Token, ExpirationTimestamp: resp.Status.ExpirationTimestamp}
	}
	raw, err := json.Marshal(tokens)
	if err != nil {
		return nil, err
	}
	out := map[string]string{csiTokensKey: string(raw)}
	for key, value := range v.volumeContext {
		out[key] = value
	}
	return out, nil
}

func readVolData(path string) (csiVolData, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return csiVolData{}, err
	}
	return parseVolData(raw)
}

func writeVolData(dir string, r csiVolData) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("kubernetes.io/csi: %w", err)
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+csiVolDataFile)
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return fmt.Errorf("kubernetes.io/csi: %w", err)
	}
	return os.Rename(tmp, filepath.Join(dir, csiVolDataFile))
}

// csiRecords reads the records of a pod's CSI volumes on this node.
func (vm *volumeManager) csiRecords(uid string) []csiVolData {
	var out []csiVolData
	for _, kind := range []string{"volumes", "volumeDevices"} {
		base := filepath.Join(vm.rootDir, "pods", uid, kind, csiPodDir)
		entries, err := os.ReadDir(base)
		if err != nil {
			continue
		}
		for _, e := range entries {
			raw, err := os.ReadFile(filepath.Join(base, e.Name(), csiVolDataFile))
			if err != nil {
				continue
			}
			r, err := parseVolData(raw)
			if err != nil {
				vm.log.Warn("unreadable CSI volume record", "pod", uid, "volume", e.Name(), "err", err)
				continue
			}
			if r.NodeName == vm.nodeName {
				out = append(out, r)
			}
		}
	}
	return out
}

// csiRecordsByPod reads the records of the CSI volumes of every pod on this node, by pod UID.
func (vm *volumeManager) csiRecordsByPod() map[string][]csiVolData {
	out := map[string][]csiVolData{}
	for _, uid := range vm.csiPodUIDs() {
		out[uid] = vm.csiRecords(uid)
	}
	return out
}

// csiPodUIDs lists the pods with CSI volume records on this node.
func (vm *volumeManager) csiPodUIDs() []string {
	entries, err := os.ReadDir(filepath.Join(vm.rootDir, "pods"))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && len(vm.csiRecords(e.Name())) > 0 {
			out = append(out, e.Name())
		}
	}
	return out
}

// teardownCSI unpublishes a pod's CSI volumes, from the records on disk, so it works the same
// after a restart; then the staged volumes no pod uses any more are unstaged (unstageUnused),
// whose failure does not hold the pod, as in Kubernetes: it is retried by housekeeping.
// Directories are removed one by one, never recursively: a target the driver failed to unmount
// must not have its data deleted.
func (vm *volumeManager) teardownCSI(ctx context.Context, uid string) error {
	records := vm.csiRecords(uid)
	if len(records) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, csiCallTimeout)
	defer cancel()
	var errs []error
	for _, r := range records {
		if r.Done {
			if err := vm.csiUnpublish(ctx, r); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		dir := filepath.Dir(r.TargetPath)
		if r.Block {
			dir = filepath.Join(vm.rootDir, "pods", uid, "volumeDevices", csiPodDir, r.SpecVolID)
			removeEmptyUpTo(filepath.Dir(r.TargetPath), filepath.Join(vm.rootDir, "plugins"))
		}
		_ = os.Remove(r.TargetPath)
		_ = os.Remove(filepath.Join(dir, csiVolDataFile))
		removeEmptyUpTo(dir, filepath.Join(vm.rootDir, "pods"))
		vm.mu.Lock()
		delete(vm.csiPublished, r.TargetPath)
		vm.mu.Unlock()
	}
	vm.unstageUnused(ctx)
	return errors.Join(errs...)
}

func (vm *volumeManager) csiUnpublish(ctx context.Context, r csiVolData) error {
	d, ok := vm.drivers.Get(r.DriverName)
	if !ok {
		return fmt.Errorf("kubernetes.io/csi: unpublish %s: driver name %s not found in the list of registered CSI drivers", r.SpecVolID, r.DriverName)
	}
	if _, err := d.Node.NodeUnpublishVolume(ctx, &csipb.NodeUnpublishVolumeRequest{VolumeId: r.VolumeHandle, TargetPath: r.TargetPath}); err != nil {
		return fmt.Errorf("kubernetes.io/csi: unpublish %s: %w", r.SpecVolID, err)
	}
	if mounted(r.TargetPath) {
		return fmt.Errorf("kubernetes.io/csi: unpublish %s: %s is still mounted", r.SpecVolID, r.TargetPath)
	}
	return nil
}

// csiVolumesInUse are the attachable CSI volumes this node holds or is about to, for
// node.status.volumesInUse: every volume with a pod's record (written before the volume is
// staged) or a staging record (removed only after it is unstaged), so the attach/detach
// controller never detaches a volume the node may still have mounted. Inline volumes are never
// attached and are left out.
func (vm *volumeManager) csiVolumesInUse() []corev1.UniqueVolumeName {
	records := vm.stagingRecords()
	for _, uid := range vm.csiPodUIDs() {
		records = append(records, vm.csiRecords(uid)...)
	}
	return volumesInUse(records)
}

// stagingRecords reads the node's records of staged volumes.
func (vm *volumeManager) stagingRecords() []csiVolData {
	// Globs, not a walk: a staging path is a mount of the volume, whose files are not the kubelet's.
	base := filepath.Join(vm.rootDir, "plugins", csiPluginDir)
	fsRecords, _ := filepath.Glob(filepath.Join(base, "*", "*", csiVolDataFile))
	blockRecords, _ := filepath.Glob(filepath.Join(base, "volumeDevices", "*", "data", csiVolDataFile))
	var out []csiVolData
	for _, path := range append(fsRecords, blockRecords...) {
		if r, err := readVolData(path); err == nil && r.NodeName == vm.nodeName {
			out = append(out, r)
		}
	}
	return out
}

// unstageUnused unstages the staged volumes no pod on the node uses any more. A failed unstage
// is tried again later; the kubelet forgets the volume was staged either way, so a pod that comes
// for it meanwhile stages it again.
func (vm *volumeManager) unstageUnused(ctx context.Context) {
	vm.stageMu.Lock()
	defer vm.stageMu.Unlock()
	var pods []csiVolData
	for _, uid := range vm.csiPodUIDs() {
		pods = append(pods, vm.csiRecords(uid)...)
	}
	unstage, forget := planUnstage(vm.stagingRecords(), pods)
	for _, r := range forget {
		vm.forgetStaged(r)
	}
	for _, r := range unstage {
		vm.mu.Lock()
		delete(vm.csiStaged, r.StagingTargetPath)
		vm.mu.Unlock()
		if err := vm.csiUnstage(ctx, r); err != nil {
			vm.log.Warn("unstage CSI volume", "volume", r.SpecVolID, "err", err)
			continue
		}
		vm.forgetStaged(r)
	}
}

func (vm *volumeManager) csiUnstage(ctx context.Context, r csiVolData) error {
	d, ok := vm.drivers.Get(r.DriverName)
	if !ok {
		return fmt.Errorf("kubernetes.io/csi: unstage %s: driver name %s not found in the list of registered CSI drivers", r.SpecVolID, r.DriverName)
	}
	if _, err := d.Node.NodeUnstageVolume(ctx, &csipb.NodeUnstageVolumeRequest{VolumeId: r.VolumeHandle, StagingTargetPath: r.StagingTargetPath}); err != nil {
		return fmt.Errorf("kubernetes.io/csi: unstage %s: %w", r.SpecVolID, err)
	}
	if mounted(r.StagingTargetPath) {
		return fmt.Errorf("kubernetes.io/csi: unstage %s: %s is still mounted", r.SpecVolID, r.StagingTargetPath)
	}
	return nil
}

// forgetStaged removes a staged volume's record and directories.
func (vm *volumeManager) forgetStaged(r csiVolData) {
	vm.mu.Lock()
	delete(vm.csiStaged, r.StagingTargetPath)
	vm.mu.Unlock()
	paths := csiPathsFor(vm.rootDir, "", csiVolume{specName: r.SpecVolID, driver: r.DriverName, handle: r.VolumeHandle, block: r.Block})
	_ = os.Remove(paths.stagingRecord)
	stop := filepath.Join(vm.rootDir, "plugins", csiPluginDir)
	removeEmptyUpTo(r.StagingTargetPath, stop)
	removeEmptyUpTo(filepath.Dir(paths.stagingRecord), stop)
}

// removeEmptyUpTo removes dir and its parents while they are empty, stopping below stop.
func removeEmptyUpTo(dir, stop string) {
	for dir != stop && len(dir) > len(stop) {
		if err := os.Remove(dir); err != nil && !os.IsNotExist(err) {
			return
		}
		dir = filepath.Dir(dir)
	}
}

// cleanupCSIOrphans tears down the CSI volumes of pods this kubelet no longer runs: pods removed
// while it was down, whose records it finds on disk.
// inUse says which pods are not its to clean: pods the API knows, pods with a worker, and pods
// with sandboxes, which their workers take down (containers first).
func (vm *volumeManager) cleanupCSIOrphans(ctx context.Context, inUse func(types.UID) bool) {
	for _, uid := range vm.csiPodUIDs() {
		if inUse(types.UID(uid)) {
			continue
		}
		if err := vm.teardownCSI(ctx, uid); err != nil {
			vm.log.Warn("CSI volumes of a pod that is gone", "uid", uid, "err", err)
		} else {
			vm.log.Info("CSI volumes of a pod that is gone torn down", "uid", uid)
		}
	}
	// Unstages that failed before are tried again.
	vm.unstageUnused(ctx)
}

// expandCSI carries out the node's part of an expansion of a published volume (NodeExpandVolume,
// where the driver has it) and records the new size in the claim's status.
func (vm *volumeManager) expandCSI(ctx context.Context, pod *corev1.Pod, d *csi.Driver, v csiVolume, vol volume, claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) error {
	size, due := csiExpansion(claim, pv)
	if !due {
		return nil
	}
	if d.Has(csipb.NodeServiceCapability_RPC_EXPAND_VOLUME) {
		if next := expandingClaim(claim); next != nil {
			updated, err := vm.client.CoreV1().PersistentVolumeClaims(claim.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
			if err != nil {
				return fmt.Errorf("persistentvolumeclaim %s/%s: mark node expansion in progress: %w", claim.Namespace, claim.Name, err)
			}
			claim = updated
		}
		secrets, err := vm.csiSecrets(ctx, pv.Spec.CSI.NodeExpandSecretRef)
		if err != nil {
			return err
		}
		paths := csiPathsFor(vm.rootDir, string(pod.UID), v)
		req := &csipb.NodeExpandVolumeRequest{
			VolumeId: v.handle, VolumePath: vol.hostPath, CapacityRange: &csipb.CapacityRange{RequiredBytes: size.Value()},
			VolumeCapability: v.capability(), Secrets: secrets,
		}
		if d.Has(csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME) {
			req.StagingTargetPath = paths.staging
		}
		callCtx, cancel := context.WithTimeout(ctx, csiCallTimeout)
		defer cancel()
		if _, err := d.Node.NodeExpandVolume(callCtx, req); err != nil {
			failed := failedExpansionClaim(claim, size, err, metav1.NewTime(vm.clock.Now()))
			if _, uerr := vm.client.CoreV1().PersistentVolumeClaims(claim.Namespace).UpdateStatus(ctx, failed, metav1.UpdateOptions{}); uerr != nil {
				err = errors.Join(err, fmt.Errorf("persistentvolumeclaim %s/%s: record the failed expansion: %w", claim.Namespace, claim.Name, uerr))
			}
			return fmt.Errorf("kubernetes.io/csi: NodeExpandVolume of %s: %w", v.specName, err)
		}
	}
	if _, err := vm.client.CoreV1().PersistentVolumeClaims(claim.Namespace).UpdateStatus(ctx, expandedClaim(claim, size), metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("persistentvolumeclaim %s/%s status after expansion: %w", claim.Namespace, claim.Name, err)
	}
	vm.log.Info("volume expanded on the node", "pv", pv.Name, "claim", claim.Namespace+"/"+claim.Name, "size", size.String())
	return nil
}

// csiVolumeStats asks the drivers of a pod's CSI volumes that report usage
// (GET_VOLUME_STATS) for it, as Kubernetes' kubelet does for /stats/summary.
func (vm *volumeManager) csiVolumeStats(ctx context.Context, pod *corev1.Pod) []stats.Volume {
	var out []stats.Volume
	for _, r := range vm.csiRecords(string(pod.UID)) {
		d, ok := vm.drivers.Get(r.DriverName)
		if !ok || !d.Has(csipb.NodeServiceCapability_RPC_GET_VOLUME_STATS) {
			continue
		}
		callCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := d.Node.NodeGetVolumeStats(callCtx, &csipb.NodeGetVolumeStatsRequest{VolumeId: r.VolumeHandle, VolumePath: r.TargetPath, StagingTargetPath: r.StagingTargetPath})
		cancel()
		if err != nil {
			vm.log.Debug("csi volume stats", "pod", pod.Namespace+"/"+pod.Name, "volume", r.PodVolume, "err", err)
			continue
		}
		vol := csiUsage(r.PodVolume, resp.GetUsage())
		if r.PVC != "" {
			vol.PVC = &statsv1alpha1.PVCReference{Name: r.PVC, Namespace: pod.Namespace}
		}
		out = append(out, vol)
	}
	return out
}

// csiUsage turns a driver's usage report into a volume's stats.
func csiUsage(name string, usage []*csipb.VolumeUsage) stats.Volume {
	vol := stats.Volume{Name: name, Fs: &stats.FsInfo{}}
	for _, u := range usage {
		switch u.GetUnit() {
		case csipb.VolumeUsage_BYTES:
			vol.Used = uint64(max(u.GetUsed(), 0))
			vol.Fs.Capacity, vol.Fs.Available, vol.Fs.Used = uint64(max(u.GetTotal(), 0)), uint64(max(u.GetAvailable(), 0)), vol.Used
		case csipb.VolumeUsage_INODES:
			vol.Fs.Inodes, vol.Fs.InodesFree = uint64(max(u.GetTotal(), 0)), uint64(max(u.GetAvailable(), 0))
		}
	}
	return vol
}

// containerDevices turns a container's volumeDevices (block volumes) into CRI devices.
func containerDevices(c *corev1.Container, volumes map[string]volume) ([]*runtimeapi.Device, error) {
	var out []*runtimeapi.Device
	for _, d := range c.VolumeDevices {
		vol, ok := volumes[d.Name]
		if !ok || !vol.block {
			return nil, fmt.Errorf("volume %q for device %s is not a block volume of the pod", d.Name, d.DevicePath)
		}
		perms := "mrw"
		if vol.readOnly {
			perms = "mr"
		}
		out = append(out, &runtimeapi.Device{ContainerPath: d.DevicePath, HostPath: vol.hostPath, Permissions: perms})
	}
	return out, nil
}
