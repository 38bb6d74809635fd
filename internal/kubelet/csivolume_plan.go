package kubelet

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/volumeutil"
)

// The CSI volume path's decisions (csivolume.go carries them out). Names, paths and volume
// context keys are Kubernetes' own, so drivers, their tests and operators find what they expect.
const (
	// csiPluginDir is the CSI volume plugin's name under the root's plugins/ and pods/<uid>/volumes/.
	csiPluginDir = "kubernetes.io/csi"
	csiPodDir    = "kubernetes.io~csi"
	// csiVolDataFile is the record kept beside each published volume, from which the kubelet
	// unpublishes and unstages it after a restart.
	csiVolDataFile = "vol_data.json"

	csiPodNameKey        = "csi.storage.k8s.io/pod.name"
	csiPodNamespaceKey   = "csi.storage.k8s.io/pod.namespace"
	csiPodUIDKey         = "csi.storage.k8s.io/pod.uid"
	csiServiceAccountKey = "csi.storage.k8s.io/serviceAccount.name"
	csiEphemeralKey      = "csi.storage.k8s.io/ephemeral"
	csiTokensKey         = "csi.storage.k8s.io/serviceAccount.tokens"
)

// csiVolume is everything the kubelet needs to make one pod volume out of a CSI driver.
type csiVolume struct {
	// podVolume is the pod's volume name; specName the name the paths use (the PV's name, or
	// the pod volume's for an inline volume).
	podVolume, specName string
	driver, handle      string
	// ephemeral is an inline volume (pod.spec.volumes[].csi): no attach, no stage.
	ephemeral  bool
	block      bool
	readOnly   bool
	fsType     string
	mountFlags []string
	accessMode csipb.VolumeCapability_AccessMode_Mode
	// volumeContext is the PV's (or inline volume's) attributes, with the pod's information when
	// the driver asks for it.
	volumeContext map[string]string
	// stageSecret and publishSecret name Secrets whose data goes to the calls.
	stageSecret, publishSecret *corev1.SecretReference
	// attachment is the VolumeAttachment to wait for; empty when the driver needs no attach.
	attachment string
	// fsGroup is the group the kubelet gives the volume's files after publishing (nil: none),
	// per the driver's fsGroupPolicy; mountGroup is the group the driver applies itself
	// (VOLUME_MOUNT_GROUP).
	fsGroup    *int64
	mountGroup string
	// tokenRequests are the audiences (and lifetimes) of service account tokens the driver wants;
	// republish that it wants NodePublishVolume again on every sync (fresh tokens).
	tokenRequests []storagev1.TokenRequest
	republish     bool
	// pvc names the claim (persistent volumes), for stats and expansion.
	pvc string
}

// csiDriverPolicy is what a CSIDriver object says, with Kubernetes' defaults when there is none.
type csiDriverPolicy struct {
	attachRequired bool
	podInfoOnMount bool
	fsGroupPolicy  storagev1.FSGroupPolicy
	ephemeralOK    bool
	tokenRequests  []storagev1.TokenRequest
	// republish makes the kubelet call NodePublishVolume again on every sync of the pod.
	republish bool
}

func policyOf(d *storagev1.CSIDriver) csiDriverPolicy {
	p := csiDriverPolicy{attachRequired: true, fsGroupPolicy: storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy}
	if d == nil {
		return p
	}
	if d.Spec.AttachRequired != nil {
		p.attachRequired = *d.Spec.AttachRequired
	}
	if d.Spec.PodInfoOnMount != nil {
		p.podInfoOnMount = *d.Spec.PodInfoOnMount
	}
	if d.Spec.FSGroupPolicy != nil {
		p.fsGroupPolicy = *d.Spec.FSGroupPolicy
	}
	p.ephemeralOK = slices.Contains(d.Spec.VolumeLifecycleModes, storagev1.VolumeLifecycleEphemeral)
	p.tokenRequests = d.Spec.TokenRequests
	p.republish = d.Spec.RequiresRepublish != nil && *d.Spec.RequiresRepublish
	return p
}

// csiInlineHandle is an inline volume's handle: unique per pod and volume.
func csiInlineHandle(podUID, volume string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(podUID+volume)))
}

// csiAccessMode maps the PV's first access mode to CSI's; a driver with SINGLE_NODE_MULTI_WRITER
// gets the finer single-node modes.
func csiAccessMode(modes []corev1.PersistentVolumeAccessMode, multiWriter bool) csipb.VolumeCapability_AccessMode_Mode {
	mode := corev1.ReadWriteOnce
	if len(modes) > 0 {
		mode = modes[0]
	}
	switch mode {
	case corev1.ReadOnlyMany:
		return csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	case corev1.ReadWriteMany:
		return csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	case corev1.ReadWriteOncePod:
		if multiWriter {
			return csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER
		}
	case corev1.ReadWriteOnce:
		if multiWriter {
			return csipb.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER
		}
	}
	return csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
}

// csiAppliesFSGroup decides whether the kubelet gives a published volume the pod's fsGroup, per
// the driver's fsGroupPolicy: None never, File always, ReadWriteOnceWithFSType (the default) only
// for a volume with an fsType that one node writes (an inline volume is always mounted so).
func csiAppliesFSGroup(policy storagev1.FSGroupPolicy, fsType string, ephemeral bool, modes []corev1.PersistentVolumeAccessMode) bool {
	switch policy {
	case storagev1.NoneFSGroupPolicy:
		return false
	case storagev1.FileFSGroupPolicy:
		return true
	}
	if fsType == "" {
		return false
	}
	return ephemeral || slices.Contains(modes, corev1.ReadWriteOnce)
}

// csiPodInfo is the volume context a driver with podInfoOnMount gets.
func csiPodInfo(pod *corev1.Pod, ephemeral bool) map[string]string {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	return map[string]string{
		csiPodNameKey: pod.Name, csiPodNamespaceKey: pod.Namespace, csiPodUIDKey: string(pod.UID),
		csiServiceAccountKey: sa, csiEphemeralKey: strconv.FormatBool(ephemeral),
	}
}

// csiCaps are the driver capabilities the decisions depend on.
type csiCaps struct {
	stage, multiWriter, mountGroup bool
}

// csiVolumeFromPV decides how a pod mounts a CSI persistent volume through claim ref.
func csiVolumeFromPV(pod *corev1.Pod, podVolume string, ref *corev1.PersistentVolumeClaimVolumeSource, pv *corev1.PersistentVolume, d *storagev1.CSIDriver, caps csiCaps, node string) csiVolume {
	src := pv.Spec.CSI
	p := policyOf(d)
	v := csiVolume{
		podVolume: podVolume, specName: pv.Name, driver: src.Driver, handle: src.VolumeHandle,
		block:    pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == corev1.PersistentVolumeBlock,
		readOnly: ref.ReadOnly || src.ReadOnly, fsType: src.FSType, mountFlags: pv.Spec.MountOptions,
		accessMode:    csiAccessMode(pv.Spec.AccessModes, caps.multiWriter),
		volumeContext: map[string]string{}, stageSecret: src.NodeStageSecretRef, publishSecret: src.NodePublishSecretRef,
		tokenRequests: p.tokenRequests, republish: p.republish, pvc: ref.ClaimName,
	}
	for k, val := range src.VolumeAttributes {
		v.volumeContext[k] = val
	}
	if p.podInfoOnMount {
		for k, val := range csiPodInfo(pod, false) {
			v.volumeContext[k] = val
		}
	}
	if p.attachRequired {
		v.attachment = volumeutil.AttachmentName(src.VolumeHandle, src.Driver, node)
	}
	setCSIFSGroup(&v, pod, p, caps, pv.Spec.AccessModes)
	return v
}

// csiHeldByOtherPod decides whether Kubernetes' kubelet would refuse to mount pv for the pod
// podUID because another pod on the node holds it: pv's only access mode is ReadWriteOncePod (with
// several, the pod's intent is unknown) and another pod's record says the volume is published or
// may be (done). held maps the node's pod UIDs to their records. The scheduler enforces the same
// rule, but a pod bound to the node by name never meets it.
func csiHeldByOtherPod(pv *corev1.PersistentVolume, podUID string, held map[string][]csiVolData) bool {
	if !readWriteOncePodOnly(pv) || pv.Spec.CSI == nil {
		return false
	}
	for uid, records := range held {
		if uid == podUID {
			continue
		}
		for _, r := range records {
			if r.Done && r.DriverName == pv.Spec.CSI.Driver && r.VolumeHandle == pv.Spec.CSI.VolumeHandle {
				return true
			}
		}
	}
	return false
}

// readWriteOncePodOnly: ReadWriteOncePod is the volume's only access mode.
func readWriteOncePodOnly(pv *corev1.PersistentVolume) bool {
	return len(pv.Spec.AccessModes) == 1 && pv.Spec.AccessModes[0] == corev1.ReadWriteOncePod
}

// csiVolumeInline decides how a pod mounts an inline CSI volume; the driver must allow the
// Ephemeral lifecycle mode.
func csiVolumeInline(pod *corev1.Pod, vol *corev1.Volume, d *storagev1.CSIDriver, caps csiCaps) (csiVolume, error) {
	src := vol.CSI
	p := policyOf(d)
	if !p.ephemeralOK {
		return csiVolume{}, fmt.Errorf("volume mode \"Ephemeral\" not supported by driver %s (only supports [\"Persistent\"] or the CSIDriver object is missing)", src.Driver)
	}
	v := csiVolume{
		podVolume: vol.Name, specName: vol.Name, driver: src.Driver, handle: csiInlineHandle(string(pod.UID), vol.Name), ephemeral: true,
		readOnly: src.ReadOnly != nil && *src.ReadOnly, accessMode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER,
		volumeContext: map[string]string{}, tokenRequests: p.tokenRequests, republish: p.republish,
	}
	if src.FSType != nil {
		v.fsType = *src.FSType
	}
	if ref := src.NodePublishSecretRef; ref != nil {
		v.publishSecret = &corev1.SecretReference{Name: ref.Name, Namespace: pod.Namespace}
	}
	for k, val := range src.VolumeAttributes {
		v.volumeContext[k] = val
	}
	if p.podInfoOnMount {
		for k, val := range csiPodInfo(pod, true) {
			v.volumeContext[k] = val
		}
	}
	setCSIFSGroup(&v, pod, p, caps, nil)
	return v, nil
}

func setCSIFSGroup(v *csiVolume, pod *corev1.Pod, p csiDriverPolicy, caps csiCaps, modes []corev1.PersistentVolumeAccessMode) {
	fsGroup, _ := fsGroupOf(pod)
	if fsGroup == nil || v.block {
		return
	}
	if caps.mountGroup {
		// The driver applies the group at mount time; the kubelet walks nothing.
		v.mountGroup = strconv.FormatInt(*fsGroup, 10)
		return
	}
	if csiAppliesFSGroup(p.fsGroupPolicy, v.fsType, v.ephemeral, modes) {
		v.fsGroup = fsGroup
	}
}

// capability is the VolumeCapability of the stage and publish calls.
func (v csiVolume) capability() *csipb.VolumeCapability {
	c := &csipb.VolumeCapability{AccessMode: &csipb.VolumeCapability_AccessMode{Mode: v.accessMode}}
	if v.block {
		c.AccessType = &csipb.VolumeCapability_Block{Block: &csipb.VolumeCapability_BlockVolume{}}
		return c
	}
	c.AccessType = &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{
		FsType: v.fsType, MountFlags: v.mountFlags, VolumeMountGroup: v.mountGroup,
	}}
	return c
}

// csiPaths are where one pod's CSI volume lives on the node.
type csiPaths struct {
	// dir holds the record (vol_data.json) and, for a file system volume, the target.
	dir string
	// target is what NodePublishVolume publishes to: a directory (mount) or a file (block).
	target string
	// staging is NodeStageVolume's path, shared by the pods of the node that use the volume;
	// stagingRecord the record of the staged volume (Kubernetes keeps one there too), from which
	// it is unstaged once no pod uses it.
	staging, stagingRecord string
}

func csiPathsFor(root string, podUID string, v csiVolume) csiPaths {
	if v.block {
		base := filepath.Join(root, "plugins", csiPluginDir, "volumeDevices")
		return csiPaths{
			dir:           filepath.Join(root, "pods", podUID, "volumeDevices", csiPodDir, v.specName),
			target:        filepath.Join(base, "publish", v.specName, podUID),
			staging:       filepath.Join(base, "staging", v.specName),
			stagingRecord: filepath.Join(base, v.specName, "data", csiVolDataFile),
		}
	}
	dir := filepath.Join(root, "pods", podUID, "volumes", csiPodDir, v.specName)
	global := filepath.Join(root, "plugins", csiPluginDir, v.driver, fmt.Sprintf("%x", sha256.Sum256([]byte(v.handle))))
	return csiPaths{
		dir: dir, target: filepath.Join(dir, "mount"),
		staging: filepath.Join(global, "globalmount"), stagingRecord: filepath.Join(global, csiVolDataFile),
	}
}

// csiVolData is the record kept beside a published volume: Kubernetes' vol_data.json keys, and
// the paths and mode the teardown needs.
type csiVolData struct {
	SpecVolID           string `json:"specVolID"`
	VolumeHandle        string `json:"volumeHandle"`
	DriverName          string `json:"driverName"`
	NodeName            string `json:"nodeName"`
	AttachmentID        string `json:"attachmentID,omitempty"`
	VolumeLifecycleMode string `json:"volumeLifecycleMode"`
	// PodVolume is the pod's name for the volume; TargetPath and StagingTargetPath are the
	// paths given to the driver (staging empty when the volume was not staged).
	PodVolume         string `json:"podVolume"`
	TargetPath        string `json:"targetPath"`
	StagingTargetPath string `json:"stagingTargetPath,omitempty"`
	Block             bool   `json:"block,omitempty"`
	PVC               string `json:"pvc,omitempty"`
	// Done says the driver may hold the volume at the path: its call succeeded, or failed in a
	// way that leaves that uncertain (a timeout), so the reverse call is owed. A pod's record is
	// done once published, a staging record once staged.
	Done bool `json:"done,omitempty"`
}

// record is the pod's record of the volume (staged says it goes through the staging path), or,
// with the staging record's paths, the node's record of the staged volume.
func (v csiVolume) record(node string, p csiPaths, staged bool) csiVolData {
	mode := string(storagev1.VolumeLifecyclePersistent)
	if v.ephemeral {
		mode = string(storagev1.VolumeLifecycleEphemeral)
	}
	r := csiVolData{SpecVolID: v.specName, VolumeHandle: v.handle, DriverName: v.driver, NodeName: node, AttachmentID: v.attachment,
		VolumeLifecycleMode: mode, PodVolume: v.podVolume, TargetPath: p.target, Block: v.block, PVC: v.pvc}
	if staged {
		r.StagingTargetPath = p.staging
	}
	return r
}

func parseVolData(data []byte) (csiVolData, error) {
	var r csiVolData
	if err := json.Unmarshal(data, &r); err != nil {
		return r, err
	}
	if r.VolumeHandle == "" || r.DriverName == "" || r.TargetPath == "" {
		return r, fmt.Errorf("incomplete record %s", data)
	}
	return r, nil
}

// planUnstage decides which staged volumes to unstage: those whose staging is done (or
// uncertain) and that no pod's record on the node uses any more. Staging records with nothing
// owed and unused are only removed (forget).
func planUnstage(staged []csiVolData, pods []csiVolData) (unstage, forget []csiVolData) {
	inUse := map[string]bool{}
	for _, r := range pods {
		if r.StagingTargetPath != "" {
			inUse[r.StagingTargetPath] = true
		}
	}
	for _, r := range staged {
		switch {
		case inUse[r.StagingTargetPath]:
		case r.Done:
			unstage = append(unstage, r)
		default:
			forget = append(forget, r)
		}
	}
	return unstage, forget
}

// csiOutcomeUncertain reports whether a failed call may still have done its work: a timeout, a
// cancellation or a driver that is unavailable or busy (gRPC codes, as Kubernetes tells final
// errors from transient ones), or an error that is not a gRPC status at all.
func csiOutcomeUncertain(err error) bool {
	st, ok := status.FromError(err)
	if !ok {
		return true
	}
	switch st.Code() {
	case codes.Canceled, codes.DeadlineExceeded, codes.Unavailable, codes.ResourceExhausted, codes.Aborted:
		return true
	}
	return false
}

// csiExpansion decides whether the node's part of a volume expansion is due, and to what size:
// the control plane grew the PV beyond the claim's status capacity and marked the node's part
// pending (allocatedResourceStatuses NodeResizePending, or the FileSystemResizePending condition),
// or the node's part is in progress (a call that failed is tried again). NodeResizeInfeasible is
// not retried: the user recovers by asking for another size, which the resizer marks pending.
func csiExpansion(claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) (resource.Quantity, bool) {
	want, ok := pv.Spec.Capacity[corev1.ResourceStorage]
	if !ok {
		return resource.Quantity{}, false
	}
	if have, ok := claim.Status.Capacity[corev1.ResourceStorage]; ok && have.Cmp(want) >= 0 {
		return resource.Quantity{}, false
	}
	resizeStatus := claim.Status.AllocatedResourceStatuses[corev1.ResourceStorage]
	pending := resizeStatus == corev1.PersistentVolumeClaimNodeResizePending || resizeStatus == corev1.PersistentVolumeClaimNodeResizeInProgress
	for _, c := range claim.Status.Conditions {
		if c.Type == corev1.PersistentVolumeClaimFileSystemResizePending && c.Status == corev1.ConditionTrue {
			pending = true
		}
	}
	return want, pending
}

// expandingClaim is the claim's status while the node expands it: allocatedResourceStatuses
// says NodeResizeInProgress (nil: it says so already), as Kubernetes' kubelet marks it before
// calling the driver.
func expandingClaim(claim *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
	if claim.Status.AllocatedResourceStatuses[corev1.ResourceStorage] == corev1.PersistentVolumeClaimNodeResizeInProgress {
		return nil
	}
	out := claim.DeepCopy()
	if out.Status.AllocatedResourceStatuses == nil {
		out.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{}
	}
	out.Status.AllocatedResourceStatuses[corev1.ResourceStorage] = corev1.PersistentVolumeClaimNodeResizeInProgress
	return out
}

// failedExpansionClaim is the claim's status after NodeExpandVolume to size failed, as Kubernetes'
// kubelet records it: a NodeResizeError condition with the error, and NodeResizeInfeasible, which
// stops the retries until the resizer marks another size pending, for an error saying the size
// can never be had (InvalidArgument, OutOfRange, NotFound) or for a failure again (the claim says
// NodeResizeError already) after the user asked for another size than size (recovery: the resizer
// then lets the volume have the size asked for); after any other error the expansion stays in
// progress and is tried again.
func failedExpansionClaim(claim *corev1.PersistentVolumeClaim, size resource.Quantity, err error, now metav1.Time) *corev1.PersistentVolumeClaim {
	out := claim.DeepCopy()
	infeasible := false
	if st, ok := status.FromError(err); ok {
		switch st.Code() {
		case codes.InvalidArgument, codes.OutOfRange, codes.NotFound:
			infeasible = true
		}
	}
	requested, asked := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	failedBefore := slices.ContainsFunc(claim.Status.Conditions, func(c corev1.PersistentVolumeClaimCondition) bool {
		return c.Type == corev1.PersistentVolumeClaimNodeResizeError
	})
	if asked && requested.Cmp(size) != 0 && failedBefore {
		infeasible = true
	}
	if infeasible {
		if out.Status.AllocatedResourceStatuses == nil {
			out.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{}
		}
		out.Status.AllocatedResourceStatuses[corev1.ResourceStorage] = corev1.PersistentVolumeClaimNodeResizeInfeasible
	}
	condition := corev1.PersistentVolumeClaimCondition{
		Type: corev1.PersistentVolumeClaimNodeResizeError, Status: corev1.ConditionTrue,
		LastTransitionTime: now, Message: fmt.Sprintf("failed to expand pvc with %v", err),
	}
	i := slices.IndexFunc(out.Status.Conditions, func(c corev1.PersistentVolumeClaimCondition) bool { return c.Type == condition.Type })
	if i < 0 {
		out.Status.Conditions = append(out.Status.Conditions, condition)
	} else {
		out.Status.Conditions[i] = condition
	}
	return out
}

// expandedClaim is the claim's status once the node expanded it: the new capacity, the
// pending markers and the resize conditions (errors of earlier tries among them) gone.
func expandedClaim(claim *corev1.PersistentVolumeClaim, size resource.Quantity) *corev1.PersistentVolumeClaim {
	out := claim.DeepCopy()
	if out.Status.Capacity == nil {
		out.Status.Capacity = corev1.ResourceList{}
	}
	out.Status.Capacity[corev1.ResourceStorage] = size
	delete(out.Status.AllocatedResourceStatuses, corev1.ResourceStorage)
	if len(out.Status.AllocatedResourceStatuses) == 0 {
		out.Status.AllocatedResourceStatuses = nil
	}
	out.Status.Conditions = slices.DeleteFunc(out.Status.Conditions, func(c corev1.PersistentVolumeClaimCondition) bool {
		switch c.Type {
		case corev1.PersistentVolumeClaimFileSystemResizePending, corev1.PersistentVolumeClaimResizing,
			corev1.PersistentVolumeClaimNodeResizeError, corev1.PersistentVolumeClaimControllerResizeError:
			return true
		}
		return false
	})
	return out
}

// volumesInUse are the unique names of the persistent (attachable) volumes among records,
// sorted, each once.
func volumesInUse(records []csiVolData) []corev1.UniqueVolumeName {
	var out []corev1.UniqueVolumeName
	for _, r := range records {
		if r.VolumeLifecycleMode == string(storagev1.VolumeLifecycleEphemeral) {
			continue
		}
		out = append(out, volumeutil.CSIUniqueVolumeName(r.DriverName, r.VolumeHandle))
	}
	slices.Sort(out)
	return slices.Compact(out)
}
