package localpath

import (
	"context"
	"fmt"
	"log/slog"
	"path"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

const (
	// Name is the controller's name in --controllers and in metrics.
	Name = "local-path-provisioner"
	// Provisioner is the provisioner name classes use to ask for local-path volumes. It is in
	// skiff's own domain, not rancher.io/local-path, so that a cluster that also installs rancher's
	// provisioner does not have two controllers answering the same claims.
	Provisioner = "skiff.dev/local-path"
	// ClassName is the built-in default StorageClass.
	ClassName = "local-path"

	// Kubernetes' annotations.
	AnnSelectedNode       = "volume.kubernetes.io/selected-node"
	AnnStorageProvisioner = "volume.kubernetes.io/storage-provisioner"
	AnnBetaProvisioner    = "volume.beta.kubernetes.io/storage-provisioner"
	AnnProvisionedBy      = "pv.kubernetes.io/provisioned-by"
	AnnDefaultClass       = "storageclass.kubernetes.io/is-default-class"

	// DefaultHelperImage runs the helper pod that removes a deleted volume's directory; any image
	// with a shell and rm will do (rancher's provisioner uses busybox too).
	DefaultHelperImage = "docker.io/library/busybox:1.36"

	helperPrefix = "helper-pod-delete-"
	// helperNamespace holds the helper pods, next to the other system workloads.
	helperNamespace = "kube-system"
	// helperMount is where the helper pod sees the storage directory.
	helperMount = "/data"
)

// DefaultStorageClass is the class the API server creates at its first start: the cluster default,
// provisioned on the node the scheduler picks for the first pod using the claim.
func DefaultStorageClass() *storagev1.StorageClass {
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	reclaim := corev1.PersistentVolumeReclaimDelete
	return &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: ClassName, Annotations: map[string]string{AnnDefaultClass: "true"}},
		Provisioner:       Provisioner,
		ReclaimPolicy:     &reclaim,
		VolumeBindingMode: &wffc,
	}
}

// Config is the provisioner's settings.
type Config struct {
	// Dir is the directory on every node under which volumes are created, one directory per volume
	// named after it (default /var/lib/skiff/storage).
	Dir string
	// HelperImage runs the pod that removes a deleted volume's directory (default DefaultHelperImage).
	HelperImage string
	Logger      *slog.Logger
}

// Controller provisions and deletes local-path volumes.
type Controller struct {
	cfg         Config
	client      kubernetes.Interface
	recorder    record.EventRecorder
	pvcLister   corelisters.PersistentVolumeClaimLister
	pvLister    corelisters.PersistentVolumeLister
	classLister storagelisters.StorageClassLister
	nodeLister  corelisters.NodeLister
	podLister   corelisters.PodLister
	claims      *ctrlutil.Loop
	volumes     *ctrlutil.Loop
	synced      []cache.InformerSynced
}

// New builds the controller.
func New(deps ctrlutil.Deps, cfg Config) (*Controller, error) {
	if cfg.Dir == "" {
		cfg.Dir = "/var/lib/skiff/storage"
	}
	if cfg.HelperImage == "" {
		cfg.HelperImage = DefaultHelperImage
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	pvcInf := deps.Informers.Core().V1().PersistentVolumeClaims()
	pvInf := deps.Informers.Core().V1().PersistentVolumes()
	classInf := deps.Informers.Storage().V1().StorageClasses()
	nodeInf := deps.Informers.Core().V1().Nodes()
	podInf := deps.Informers.Core().V1().Pods()
	c := &Controller{
		cfg: cfg, client: deps.Client, recorder: deps.Recorder,
		pvcLister: pvcInf.Lister(), pvLister: pvInf.Lister(), classLister: classInf.Lister(),
		nodeLister: nodeInf.Lister(), podLister: podInf.Lister(),
		synced: []cache.InformerSynced{pvcInf.Informer().HasSynced, pvInf.Informer().HasSynced,
			classInf.Informer().HasSynced, nodeInf.Informer().HasSynced, podInf.Informer().HasSynced},
	}
	c.claims = ctrlutil.NewLoop(Name, deps, c.SyncClaim)
	c.volumes = ctrlutil.NewLoop(Name+"-delete", deps, c.SyncVolume)
	if _, err := pvcInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.claims.Enqueue, UpdateFunc: func(_, o any) { c.claims.Enqueue(o) },
	}); err != nil {
		return nil, fmt.Errorf("claim informer handler: %w", err)
	}
	if _, err := pvInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.volumes.Enqueue, UpdateFunc: func(_, o any) { c.volumes.Enqueue(o) },
	}); err != nil {
		return nil, fmt.Errorf("volume informer handler: %w", err)
	}
	// A helper pod that finished lets its volume go.
	if _, err := podInf.Informer().AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: func(o any) bool {
			pod, ok := o.(*corev1.Pod)
			return ok && pod.Namespace == helperNamespace && pod.Labels[helperLabel] != ""
		},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { c.volumes.Queue.Add(o.(*corev1.Pod).Labels[helperLabel]) },
			UpdateFunc: func(_, o any) { c.volumes.Queue.Add(o.(*corev1.Pod).Labels[helperLabel]) },
		},
	}); err != nil {
		return nil, fmt.Errorf("pod informer handler: %w", err)
	}
	return c, nil
}

// helperLabel names, on a helper pod, the volume it cleans up.
const helperLabel = "skiff.dev/local-path-volume"

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	go c.volumes.Run(ctx, 1, c.synced...)
	c.claims.Run(ctx, workers, c.synced...)
}

// VolumeName is the name of the volume provisioned for a claim, as Kubernetes names them.
func VolumeName(claimUID types.UID) string { return "pvc-" + string(claimUID) }

// NeedsVolume reports whether this provisioner should create a volume for the claim now, and on
// which node: the claim is pending, of a class of this provisioner, and the scheduler has picked a
// node. It is pure.
func NeedsVolume(pvc *corev1.PersistentVolumeClaim, class *storagev1.StorageClass) (node string, ok bool) {
	if pvc.DeletionTimestamp != nil || pvc.Spec.VolumeName != "" || pvc.Status.Phase == corev1.ClaimBound {
		return "", false
	}
	if class == nil || class.Provisioner != Provisioner {
		return "", false
	}
	node = pvc.Annotations[AnnSelectedNode]
	return node, node != ""
}

// NewVolume is the volume provisioned for pvc on node: <dir>/<name> created by the kubelet
// (DirectoryOrCreate), reachable only on that node, pre-bound to the claim. hostname is the node's
// kubernetes.io/hostname label, the key node affinity of local volumes uses. It is pure.
func NewVolume(pvc *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, hostname, dir string) *corev1.PersistentVolume {
	name := VolumeName(pvc.UID)
	reclaim := corev1.PersistentVolumeReclaimDelete
	if class.ReclaimPolicy != nil {
		reclaim = *class.ReclaimPolicy
	}
	dirOrCreate := corev1.HostPathDirectoryOrCreate
	mode := corev1.PersistentVolumeFilesystem
	if pvc.Spec.VolumeMode != nil {
		mode = *pvc.Spec.VolumeMode
	}
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{AnnProvisionedBy: Provisioner}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: pvc.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   pvc.Spec.AccessModes,
			VolumeMode:                    &mode,
			StorageClassName:              class.Name,
			PersistentVolumeReclaimPolicy: reclaim,
			MountOptions:                  class.MountOptions,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: path.Join(dir, name), Type: &dirOrCreate},
			},
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: pvc.Namespace, Name: pvc.Name,
				UID: pvc.UID, ResourceVersion: pvc.ResourceVersion,
			},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{hostname}}},
			}}}},
		},
	}
}

// SyncClaim provisions a volume for the claim named by key ("namespace/name") when it needs one.
func (c *Controller) SyncClaim(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	pvc, err := c.pvcLister.PersistentVolumeClaims(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName == "" {
		return nil
	}
	class, err := c.classLister.Get(*pvc.Spec.StorageClassName)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if class.Provisioner != Provisioner {
		return nil
	}
	nodeName, ok := NeedsVolume(pvc, class)
	if !ok {
		if pvc.Spec.VolumeName == "" && pvc.Annotations[AnnSelectedNode] == "" && pvc.DeletionTimestamp == nil &&
			(class.VolumeBindingMode == nil || *class.VolumeBindingMode == storagev1.VolumeBindingImmediate) {
			// A local volume lives on one node, so it cannot be made before a pod picks that node.
			c.recorder.Event(pvc, corev1.EventTypeWarning, "ProvisioningFailed",
				fmt.Sprintf("%s provisions local volumes only for storage classes with volumeBindingMode WaitForFirstConsumer", Provisioner))
		}
		return nil
	}
	name = VolumeName(pvc.UID)
	if _, err := c.pvLister.Get(name); err == nil {
		return nil
	}
	node, err := c.nodeLister.Get(nodeName)
	if apierrors.IsNotFound(err) {
		// The node went away before its volume was made: hand the claim back to the scheduler, as
		// Kubernetes' external provisioners do, rather than pin its pod to a node that is gone.
		return c.reschedule(ctx, pvc, fmt.Sprintf("selected node %q not found", nodeName))
	}
	if err != nil {
		return err
	}
	hostname := nodeName
	if node.Labels[corev1.LabelHostname] != "" {
		hostname = node.Labels[corev1.LabelHostname]
	}
	pv := NewVolume(pvc, class, hostname, c.cfg.Dir)
	c.recorder.Event(pvc, corev1.EventTypeNormal, "Provisioning", fmt.Sprintf("External provisioner is provisioning volume for claim %q", key))
	if _, err := c.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		c.recorder.Event(pvc, corev1.EventTypeWarning, "ProvisioningFailed", fmt.Sprintf("failed to provision volume with StorageClass %q: %v", class.Name, err))
		return fmt.Errorf("provision %s for claim %s: %w", name, key, err)
	}
	c.cfg.Logger.Info("provisioned volume", "claim", key, "volume", name, "node", nodeName, "path", pv.Spec.HostPath.Path)
	c.recorder.Event(pvc, corev1.EventTypeNormal, "ProvisioningSucceeded", fmt.Sprintf("Successfully provisioned volume %s", name))
	return nil
}

// reschedule removes the claim's selected-node annotation so that the scheduler picks again.
func (c *Controller) reschedule(ctx context.Context, pvc *corev1.PersistentVolumeClaim, why string) error {
	next := pvc.DeepCopy()
	delete(next.Annotations, AnnSelectedNode)
	if _, err := c.client.CoreV1().PersistentVolumeClaims(pvc.Namespace).Update(ctx, next, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("reschedule claim %s/%s: %w", pvc.Namespace, pvc.Name, err)
	}
	c.recorder.Event(pvc, corev1.EventTypeWarning, "ProvisioningFailed", why+"; the claim goes back to the scheduler")
	return nil
}

// DeleteStep is what deleting a released volume needs next.
type DeleteStep int

const (
	// Keep: the volume is not ours to delete (yet).
	Keep DeleteStep = iota
	// StartHelper: create the helper pod that removes the directory.
	StartHelper
	// WaitHelper: the helper pod is still running.
	WaitHelper
	// RetryHelper: the helper pod failed; delete it so that the next sync starts another.
	RetryHelper
	// DeleteVolume: the directory is gone; delete the helper pod and the volume.
	DeleteVolume
)

// NextDeleteStep decides, for a volume and its helper pod (nil if none), what to do. Only
// volumes this provisioner made, Released, with reclaim policy Delete are deleted. It is pure.
func NextDeleteStep(pv *corev1.PersistentVolume, helper *corev1.Pod) DeleteStep {
	if pv.Annotations[AnnProvisionedBy] != Provisioner || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete ||
		pv.Status.Phase != corev1.VolumeReleased || pv.DeletionTimestamp != nil {
		return Keep
	}
	if helper == nil {
		return StartHelper
	}
	switch helper.Status.Phase {
	case corev1.PodSucceeded:
		return DeleteVolume
	case corev1.PodFailed:
		return RetryHelper
	}
	return WaitHelper
}

// VolumeNode is the node a local volume's affinity pins it to: the value of its single hostname
// requirement, or "" when it has none.
func VolumeNode(pv *corev1.PersistentVolume) string {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return ""
	}
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, req := range term.MatchExpressions {
			if req.Key == corev1.LabelHostname && req.Operator == corev1.NodeSelectorOpIn && len(req.Values) == 1 {
				return req.Values[0]
			}
		}
	}
	return ""
}

// HelperPod is the pod that removes pv's directory on its node. It mounts the directory's parent
// and removes the one child, so a volume path outside dir is never touched. nodeName is the node
// object's name (the volume records the hostname label). It is pure.
func HelperPod(pv *corev1.PersistentVolume, nodeName, image string) *corev1.Pod {
	volPath := pv.Spec.HostPath.Path
	parent, base := path.Dir(volPath), path.Base(volPath)
	dirOrCreate := corev1.HostPathDirectoryOrCreate
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: helperPrefix + pv.Name, Namespace: helperNamespace,
			Labels: map[string]string{helperLabel: pv.Name},
		},
		Spec: corev1.PodSpec{
			NodeName:      nodeName,
			RestartPolicy: corev1.RestartPolicyNever,
			// A node that is tainted (even NoExecute) still has to get its disk back.
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{
				Name: "helper-pod", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
				Command:      []string{"rm", "-rf", path.Join(helperMount, base)},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: helperMount}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: parent, Type: &dirOrCreate},
			}}},
			AutomountServiceAccountToken: new(bool),
		},
	}
}

// SyncVolume deletes a released local-path volume with the Delete policy, its directory first.
func (c *Controller) SyncVolume(ctx context.Context, name string) error {
	pv, err := c.pvLister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	helper, err := c.podLister.Pods(helperNamespace).Get(helperPrefix + name)
	if apierrors.IsNotFound(err) {
		helper, err = nil, nil
	}
	if err != nil {
		return err
	}
	switch NextDeleteStep(pv, helper) {
	case StartHelper:
		if pv.Spec.HostPath == nil {
			return nil
		}
		node := c.nodeFor(pv)
		if node == "" {
			c.recorder.Event(pv, corev1.EventTypeWarning, "VolumeFailedDelete", "cannot tell which node holds the volume's directory")
			return nil
		}
		pod := HelperPod(pv, node, c.cfg.HelperImage)
		if _, err := c.client.CoreV1().Pods(helperNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("start helper pod to delete volume %s: %w", name, err)
		}
	case RetryHelper:
		c.recorder.Event(pv, corev1.EventTypeWarning, "VolumeFailedDelete", fmt.Sprintf("helper pod %s/%s failed to remove %s", helperNamespace, helper.Name, pv.Spec.HostPath.Path))
		if err := c.deletePod(ctx, helper); err != nil {
			return err
		}
		return fmt.Errorf("helper pod for volume %s failed; retrying", name)
	case DeleteVolume:
		if err := c.deletePod(ctx, helper); err != nil {
			return err
		}
		if err := c.client.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &pv.UID},
		}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete volume %s: %w", name, err)
		}
		c.cfg.Logger.Info("deleted volume", "volume", name, "path", pv.Spec.HostPath.Path)
	}
	return nil
}

func (c *Controller) deletePod(ctx context.Context, pod *corev1.Pod) error {
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete helper pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// nodeFor finds the node object whose hostname label the volume's affinity names (the label
// usually equals the name, which is the fallback).
func (c *Controller) nodeFor(pv *corev1.PersistentVolume) string {
	hostname := VolumeNode(pv)
	if hostname == "" {
		return ""
	}
	if _, err := c.nodeLister.Get(hostname); err == nil {
		return hostname
	}
	nodes, err := c.nodeLister.List(labels.SelectorFromSet(labels.Set{corev1.LabelHostname: hostname}))
	if err == nil && len(nodes) > 0 {
		return nodes[0].Name
	}
	return hostname
}
