package attachdetach

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/internal/volumeutil"
)

// MaxWaitForUnmount is how long a volume the pods no longer need may stay mounted on a node that is
// not Ready before it is detached anyway (kube-controller-manager's maxWaitForUnmountDuration).
const MaxWaitForUnmount = 6 * time.Minute

// TaintOutOfService marks a node an operator has declared shut down: its volumes are detached at
// once, mounted or not.
const TaintOutOfService = "node.kubernetes.io/out-of-service"

// Volume is one CSI persistent volume that pods on a node need attached there.
type Volume struct {
	PV     string
	Driver string
	Handle string
	// MultiAttach: the volume may be attached to several nodes at once (it offers ReadWriteMany or
	// ReadOnlyMany, or names no access mode), as upstream's IsMultiAttachAllowed.
	MultiAttach bool
	// Pods are the pods on the node that use it (for the events of a Multi-Attach error).
	Pods []*corev1.Pod
}

// AttachmentName is the VolumeAttachment that attaches v to node.
func (v Volume) AttachmentName(node string) string {
	return volumeutil.AttachmentName(v.Handle, v.Driver, node)
}

// Lookup finds what DesiredVolumes resolves a pod's volumes through (the informers' caches).
type Lookup struct {
	Claim  func(namespace, name string) *corev1.PersistentVolumeClaim
	Volume func(name string) *corev1.PersistentVolume
	Driver func(name string) *storagev1.CSIDriver
}

// DesiredVolumes lists the CSI volumes the pods need attached, in the order the pods name them
// first: those of bound claims (a generic ephemeral volume's claim must be owned by its pod) whose
// volume is a CSI volume of a driver that requires attachment. Pods that have terminated hold none,
// as upstream's populator drops them. It is pure.
func DesiredVolumes(pods []*corev1.Pod, l Lookup) []Volume {
	var out []Volume
	index := map[string]int{}
	for _, pod := range pods {
		if podTerminated(pod) {
			continue
		}
		for i := range pod.Spec.Volumes {
			pv := podVolume(pod, &pod.Spec.Volumes[i], l)
			if pv == nil || pv.Spec.CSI == nil || !volumeutil.AttachRequired(l.Driver(pv.Spec.CSI.Driver)) {
				continue
			}
			if at, ok := index[pv.Name]; ok {
				if !slices.Contains(out[at].Pods, pod) {
					out[at].Pods = append(out[at].Pods, pod)
				}
				continue
			}
			index[pv.Name] = len(out)
			out = append(out, Volume{
				PV: pv.Name, Driver: pv.Spec.CSI.Driver, Handle: pv.Spec.CSI.VolumeHandle,
				MultiAttach: multiAttach(pv), Pods: []*corev1.Pod{pod},
			})
		}
	}
	return out
}

// podVolume is the bound persistent volume behind one of pod's volumes, or nil.
func podVolume(pod *corev1.Pod, v *corev1.Volume, l Lookup) *corev1.PersistentVolume {
	var claim *corev1.PersistentVolumeClaim
	switch {
	case v.PersistentVolumeClaim != nil:
		claim = l.Claim(pod.Namespace, v.PersistentVolumeClaim.ClaimName)
	case v.Ephemeral != nil:
		claim = l.Claim(pod.Namespace, volumeutil.EphemeralClaimName(pod, v))
		if claim != nil && !metav1.IsControlledBy(claim, pod) {
			// A claim of that name the pod does not own is not its volume (upstream refuses it).
			claim = nil
		}
	}
	if claim == nil || claim.Spec.VolumeName == "" || claim.Status.Phase != corev1.ClaimBound {
		return nil
	}
	pv := l.Volume(claim.Spec.VolumeName)
	if pv == nil || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != claim.UID {
		return nil
	}
	return pv
}

func multiAttach(pv *corev1.PersistentVolume) bool {
	if len(pv.Spec.AccessModes) == 0 {
		return true
	}
	return slices.Contains(pv.Spec.AccessModes, corev1.ReadWriteMany) || slices.Contains(pv.Spec.AccessModes, corev1.ReadOnlyMany)
}

// podTerminated: the pod will run no container again, so its volumes may go (upstream's
// IsPodTerminated): it succeeded or failed, or it is being deleted and none of its containers runs.
func podTerminated(pod *corev1.Pod) bool {
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		return true
	}
	if pod.DeletionTimestamp == nil {
		return false
	}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for _, cs := range list {
			if cs.State.Terminated == nil && cs.State.Waiting == nil {
				return false
			}
		}
	}
	return true
}

// Attachment is a VolumeAttachment to the node of a CSI persistent volume that exists: the
// controller's to keep or delete. (One whose volume is gone, or that names none, is left alone, as
// upstream leaves it.)
type Attachment struct {
	VA     *storagev1.VolumeAttachment
	Unique corev1.UniqueVolumeName
}

// NodeState is everything Decide reads about one node.
type NodeState struct {
	NodeName string
	// Node is nil once the node is deleted.
	Node        *corev1.Node
	Desired     []Volume
	Attachments []Attachment
	// Elsewhere lists, by volume, the other nodes a desired volume has a VolumeAttachment to.
	Elsewhere map[string][]string
	// DetachRequested is when each attachment (by name) was first found unneeded, from earlier
	// plans.
	DetachRequested map[string]time.Time
	Now             time.Time
}

// MultiAttachError is a volume that cannot be attached to the node because it is attached
// elsewhere and allows one node only.
type MultiAttachError struct {
	Volume Volume
	Nodes  []string
}

// AttachError is a wanted volume whose VolumeAttachment carries the attacher's attachError.
type AttachError struct {
	Volume     Volume
	Attachment string
	Message    string
}

// Plan is what Decide wants done for a node.
type Plan struct {
	Create []*storagev1.VolumeAttachment
	// Delete names the attachments to delete (detach).
	Delete []string
	// VolumesAttached is the node's status.volumesAttached; nil with Node nil.
	VolumesAttached []corev1.AttachedVolume
	// DetachRequested is the next NodeState's DetachRequested: attachments waiting for their volume
	// to be unmounted, since when.
	DetachRequested map[string]time.Time
	MultiAttach     []MultiAttachError
	// AttachErrors are the wanted volumes whose attacher reports it could not attach them.
	AttachErrors []AttachError
	// RequeueAfter, when positive, is when a waiting detach may be forced.
	RequeueAfter time.Duration
}

// Decide plans one node's attachments. Detaches come first, as upstream's reconciler orders them:
// an unneeded attachment is deleted once the kubelet no longer reports its volume in use, or at once
// on an out-of-service node, or after MaxWaitForUnmount on a node that is not Ready (or is gone).
// Then every desired volume without an attachment gets one, unless it allows one node only and is
// attached elsewhere (a Multi-Attach error). An attachment being deleted is waited for. It is pure.
func Decide(s NodeState) Plan {
	plan := Plan{DetachRequested: map[string]time.Time{}}
	managed := s.Node != nil && s.Node.Annotations[volumeutil.AnnControllerManagedAttachDetach] != ""
	want := map[string]*Volume{}
	if managed {
		for i := range s.Desired {
			v := &s.Desired[i]
			want[v.AttachmentName(s.NodeName)] = v
		}
	}
	mounted, healthy, outOfService := nodeVolumeState(s.Node)
	existing := map[string]bool{}
	deleted := map[string]bool{}
	for _, a := range s.Attachments {
		name := a.VA.Name
		existing[name] = true
		if v := want[name]; v != nil {
			if e := a.VA.Status.AttachError; e != nil && !a.VA.Status.Attached && a.VA.DeletionTimestamp == nil {
				plan.AttachErrors = append(plan.AttachErrors, AttachError{Volume: *v, Attachment: name, Message: e.Message})
			}
			continue
		}
		if a.VA.DeletionTimestamp != nil {
			continue
		}
		since, ok := s.DetachRequested[name]
		if !ok {
			since = s.Now
		}
		expired := s.Now.Sub(since) > MaxWaitForUnmount
		force := !healthy && expired
		if mounted(a.Unique) && !force && !outOfService {
			plan.DetachRequested[name] = since
			if !healthy {
				plan.RequeueAfter = earliest(plan.RequeueAfter, since.Add(MaxWaitForUnmount).Sub(s.Now)+time.Second)
			}
			continue
		}
		plan.Delete = append(plan.Delete, name)
		deleted[name] = true
	}
	for i := range s.Desired {
		v := &s.Desired[i]
		name := v.AttachmentName(s.NodeName)
		if !managed || existing[name] {
			continue
		}
		if others := s.Elsewhere[v.PV]; !v.MultiAttach && len(others) > 0 {
			plan.MultiAttach = append(plan.MultiAttach, MultiAttachError{Volume: *v, Nodes: others})
			continue
		}
		pv := v.PV
		plan.Create = append(plan.Create, &storagev1.VolumeAttachment{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: storagev1.VolumeAttachmentSpec{
				Attacher: v.Driver, NodeName: s.NodeName,
				Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv},
			},
		})
	}
	if s.Node != nil {
		plan.VolumesAttached = volumesAttached(s.Attachments, deleted)
	}
	return plan
}

// nodeVolumeState reads what the node says: which volumes its kubelet has mounted, whether it is
// Ready, whether it is out of service. A deleted node is not Ready, and its volumes count as still
// mounted (nobody can say otherwise), so they go after MaxWaitForUnmount.
func nodeVolumeState(node *corev1.Node) (mounted func(corev1.UniqueVolumeName) bool, healthy, outOfService bool) {
	if node == nil {
		return func(corev1.UniqueVolumeName) bool { return true }, false, false
	}
	inUse := map[corev1.UniqueVolumeName]bool{}
	for _, v := range node.Status.VolumesInUse {
		inUse[v] = true
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			healthy = c.Status == corev1.ConditionTrue
		}
	}
	for _, t := range node.Spec.Taints {
		if t.Key == TaintOutOfService {
			outOfService = true
		}
	}
	return func(v corev1.UniqueVolumeName) bool { return inUse[v] }, healthy, outOfService
}

// volumesAttached is the node's status.volumesAttached: the attachments the attacher reported
// attached that are neither being deleted nor about to be (the kubelet must not mount those),
// sorted by name. CSI volumes have no device path.
func volumesAttached(attachments []Attachment, deleted map[string]bool) []corev1.AttachedVolume {
	out := []corev1.AttachedVolume{}
	for _, a := range attachments {
		if a.VA.Status.Attached && a.VA.DeletionTimestamp == nil && !deleted[a.VA.Name] {
			out = append(out, corev1.AttachedVolume{Name: a.Unique})
		}
	}
	slices.SortFunc(out, func(a, b corev1.AttachedVolume) int { return strings.Compare(string(a.Name), string(b.Name)) })
	return slices.CompactFunc(out, func(a, b corev1.AttachedVolume) bool { return a.Name == b.Name })
}

func earliest(cur, d time.Duration) time.Duration {
	if cur == 0 || d < cur {
		return d
	}
	return cur
}
