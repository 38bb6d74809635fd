package statefulset

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "statefulset"

// Labels Kubernetes puts on StatefulSet pods.
const (
	PodNameLabel  = appsv1.StatefulSetPodNameLabel
	PodIndexLabel = appsv1.PodIndexLabel
)

func controllerKind() schema.GroupVersionKind {
	return appsv1.SchemeGroupVersion.WithKind("StatefulSet")
}

// Controller reconciles StatefulSets.
type Controller struct {
	client    kubernetes.Interface
	setLister appslisters.StatefulSetLister
	crLister  appslisters.ControllerRevisionLister
	podLister corelisters.PodLister
	pvcLister corelisters.PersistentVolumeClaimLister
	recorder  record.EventRecorder
	clock     clock.PassiveClock
	loop      *ctrlutil.Loop
	synced    []cache.InformerSynced
}

// New builds the controller and registers its informers' handlers.
func New(deps ctrlutil.Deps) (*Controller, error) {
	setInformer := deps.Informers.Apps().V1().StatefulSets()
	crInformer := deps.Informers.Apps().V1().ControllerRevisions()
	podInformer := deps.Informers.Core().V1().Pods()
	pvcInformer := deps.Informers.Core().V1().PersistentVolumeClaims()
	c := &Controller{
		client:    deps.Client,
		setLister: setInformer.Lister(),
		crLister:  crInformer.Lister(),
		podLister: podInformer.Lister(),
		pvcLister: pvcInformer.Lister(),
		recorder:  deps.Recorder,
		clock:     deps.Clock,
	}
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	var err error
	c.synced, err = ctrlutil.NewWiring(Name).
		Watch(setInformer.Informer(), ctrlutil.On(ctrlutil.OnAdd|ctrlutil.OnUpdate, c.loop.Enqueue)).
		Watch(crInformer.Informer(), nil).
		Watch(podInformer.Informer(), c.podHandlers()).
		Watch(pvcInformer.Informer(), nil).
		Done()
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers, c.synced...) }

// ordinalOf parses a pod name "<set>-<ordinal>".
func ordinalOf(set *appsv1.StatefulSet, pod *corev1.Pod) (int, bool) {
	prefix, suffix, ok := strings.Cut(pod.Name, set.Name+"-")
	if !ok || prefix != "" || suffix == "" {
		return 0, false
	}
	for _, r := range suffix {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	i, err := strconv.Atoi(suffix)
	return i, err == nil
}

// PodName is the stable name of the pod with the given ordinal.
func PodName(set *appsv1.StatefulSet, ordinal int) string {
	return fmt.Sprintf("%s-%d", set.Name, ordinal)
}

// ClaimName is the stable name of a volumeClaimTemplate's claim for an ordinal.
func ClaimName(set *appsv1.StatefulSet, template string, ordinal int) string {
	return fmt.Sprintf("%s-%s-%d", template, set.Name, ordinal)
}

func startOrdinal(set *appsv1.StatefulSet) int {
	if set.Spec.Ordinals != nil {
		return int(set.Spec.Ordinals.Start)
	}
	return 0
}

func healthy(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodRunning && ctrlutil.IsPodReady(pod) && pod.DeletionTimestamp == nil
}

// Sync reconciles the StatefulSet with the given namespace/name key.
func (c *Controller) Sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.setLister.StatefulSets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get statefulset %s: %w", key, err)
	}
	set := cached.DeepCopy()
	selector, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil || selector.Empty() {
		c.recorder.Eventf(set, corev1.EventTypeWarning, "SelectingAll", "This statefulset is selecting all pods. A non-empty selector is required.")
		return nil
	}
	limit := int(ptr.Deref(set.Spec.RevisionHistoryLimit, 10))
	revs, err := ctrlutil.SyncRevisions(ctx, c.client, c.crLister, set, controllerKind(), &set.Spec.Template, set.Status.CollisionCount, limit, set.Status.CurrentRevision)
	if err != nil {
		return err
	}
	updateRevision := revs.Update.Name
	currentRevision := set.Status.CurrentRevision
	if currentRevision == "" || revs.ByHash(hashOfRevisionName(set, currentRevision)) == nil {
		currentRevision = updateRevision
	}

	pods, err := c.claimPods(ctx, set, selector)
	if err != nil {
		return err
	}
	var manageErr error
	if set.DeletionTimestamp == nil {
		// Claims' owners first: a pod manage deletes leaves its claims to the retention policy.
		manageErr = c.syncClaimOwners(ctx, set, pods)
		if manageErr == nil {
			manageErr = c.manage(ctx, set, pods, revs, currentRevision, updateRevision)
		}
	}
	return errors.Join(manageErr, c.updateStatus(ctx, set, pods, currentRevision, updateRevision))
}

// hashOfRevisionName recovers the hash from a revision name "<set>-<hash>".
func hashOfRevisionName(set *appsv1.StatefulSet, rev string) string {
	if len(rev) > len(set.Name)+1 {
		return rev[len(set.Name)+1:]
	}
	return ""
}

func (c *Controller) claimPods(ctx context.Context, set *appsv1.StatefulSet, selector labels.Selector) ([]*corev1.Pod, error) {
	all, err := c.podLister.Pods(set.Namespace).List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list pods of statefulset %s/%s: %w", set.Namespace, set.Name, err)
	}
	var owned []*corev1.Pod
	var errs []error
	for _, p := range all {
		if _, ok := ordinalOf(set, p); !ok {
			continue // only pods named like ours can be ours
		}
		decision := ctrlutil.DecideClaim(p, set.UID, selector, set.DeletionTimestamp != nil)
		mine, err := ctrlutil.ClaimPod(ctx, c.client, p, decision, ctrlutil.NewControllerRef(set, controllerKind()))
		if err != nil {
			errs = append(errs, err)
		}
		if mine {
			owned = append(owned, p)
		}
	}
	return owned, errors.Join(errs...)
}

// manage brings pods towards the spec, in one of three phases per sync:
// replace failed pods and create missing ones, delete condemned ordinals,
// then roll updates.
func (c *Controller) manage(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod, revs ctrlutil.Revisions, currentRevision, updateRevision string) error {
	replicas := int(ptr.Deref(set.Spec.Replicas, 1))
	start := startOrdinal(set)
	parallel := set.Spec.PodManagementPolicy == appsv1.ParallelPodManagement
	byOrdinal := map[int]*corev1.Pod{}
	var condemned []*corev1.Pod
	for _, p := range pods {
		ord, _ := ordinalOf(set, p)
		if ord >= start && ord < start+replicas {
			byOrdinal[ord] = p
		} else {
			condemned = append(condemned, p)
		}
	}
	partition := 0
	if set.Spec.UpdateStrategy.RollingUpdate != nil {
		partition = int(ptr.Deref(set.Spec.UpdateStrategy.RollingUpdate.Partition, 0))
	}
	// Pods below the partition keep (or are recreated at) the current revision.
	revisionFor := func(ord int) string {
		if set.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType && ord-start < partition {
			return currentRevision
		}
		return updateRevision
	}

	for ord := start; ord < start+replicas; ord++ {
		pod := byOrdinal[ord]
		if pod != nil && pod.Status.Phase == corev1.PodFailed && pod.DeletionTimestamp == nil {
			// A failed pod is recreated under the same name.
			if err := c.deletePod(ctx, set, pod); err != nil {
				return err
			}
			if !parallel {
				return nil
			}
			continue
		}
		if pod == nil {
			if err := c.createPod(ctx, set, ord, revs, revisionFor(ord)); err != nil {
				return err
			}
			if !parallel {
				return nil // OrderedReady: one at a time
			}
			continue
		}
		if !parallel && !healthy(pod) {
			return nil // wait for it before touching later ordinals
		}
	}

	// Scale down: highest ordinal first; OrderedReady waits for health.
	sort.Slice(condemned, func(i, j int) bool {
		oi, _ := ordinalOf(set, condemned[i])
		oj, _ := ordinalOf(set, condemned[j])
		return oi > oj
	})
	for _, pod := range condemned {
		if pod.DeletionTimestamp != nil {
			if !parallel {
				return nil
			}
			continue
		}
		if !parallel && !allHealthy(pods, pod) {
			return nil
		}
		if err := c.deletePod(ctx, set, pod); err != nil {
			return err
		}
		if !parallel {
			return nil
		}
	}

	if set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return nil
	}
	// Rolling update: the highest ordinal at or above the partition that is
	// not at the update revision goes, once every pod is healthy.
	for ord := start + replicas - 1; ord >= start+partition; ord-- {
		pod := byOrdinal[ord]
		if pod == nil || pod.Labels[ctrlutil.RevisionHashLabel] == updateRevision {
			continue
		}
		if pod.DeletionTimestamp != nil || !allHealthy(pods, nil) {
			return nil
		}
		return c.deletePod(ctx, set, pod)
	}
	return nil
}

func allHealthy(pods []*corev1.Pod, except *corev1.Pod) bool {
	for _, p := range pods {
		if p != except && !healthy(p) {
			return false
		}
	}
	return true
}

// createPod creates the claims of ordinal ord (if missing) and then its pod
// from the template of the given revision.
func (c *Controller) createPod(ctx context.Context, set *appsv1.StatefulSet, ord int, revs ctrlutil.Revisions, revision string) error {
	template := &set.Spec.Template
	hash := hashOfRevisionName(set, revision)
	if cr := revs.ByHash(hash); cr != nil && revision != revs.Update.Name {
		t, err := ctrlutil.TemplateFromRevision(cr)
		if err != nil {
			return err
		}
		template = t
	}
	name := PodName(set, ord)
	pod := ctrlutil.PodFromTemplate(template, set.Namespace, set.Name, ctrlutil.NewControllerRef(set, controllerKind()))
	pod.GenerateName = ""
	pod.Name = name
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[PodNameLabel] = name
	pod.Labels[PodIndexLabel] = strconv.Itoa(ord)
	// Upstream labels a StatefulSet's pods with the revision's name ("<set>-<hash>"), the value
	// status.currentRevision/updateRevision hold, unlike a DaemonSet's pods (the bare hash).
	pod.Labels[ctrlutil.RevisionHashLabel] = revision
	pod.Spec.Hostname = name
	pod.Spec.Subdomain = set.Spec.ServiceName

	for _, tmpl := range set.Spec.VolumeClaimTemplates {
		claim := ClaimName(set, tmpl.Name, ord)
		if err := c.ensureClaim(ctx, set, &tmpl, claim, ord); err != nil {
			return err
		}
		volume := corev1.Volume{Name: tmpl.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
		replaced := false
		for i := range pod.Spec.Volumes {
			if pod.Spec.Volumes[i].Name == tmpl.Name {
				pod.Spec.Volumes[i] = volume
				replaced = true
			}
		}
		if !replaced {
			pod.Spec.Volumes = append(pod.Spec.Volumes, volume)
		}
	}
	_, err := c.client.CoreV1().Pods(set.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		c.recorder.Eventf(set, corev1.EventTypeWarning, "FailedCreate", "create Pod %s in StatefulSet %s failed error: %v", name, set.Name, err)
		return fmt.Errorf("create pod %s/%s: %w", set.Namespace, name, err)
	}
	c.recorder.Eventf(set, corev1.EventTypeNormal, "SuccessfulCreate", "create Pod %s in StatefulSet %s successful", name, set.Name)
	return nil
}

func (c *Controller) ensureClaim(ctx context.Context, set *appsv1.StatefulSet, tmpl *corev1.PersistentVolumeClaim, name string, ord int) error {
	if _, err := c.pvcLister.PersistentVolumeClaims(set.Namespace).Get(name); err == nil {
		return nil
	}
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: set.Namespace, Labels: maps.Clone(tmpl.Labels), Annotations: maps.Clone(tmpl.Annotations)},
		Spec:       *tmpl.Spec.DeepCopy(),
	}
	if claim.Labels == nil {
		claim.Labels = map[string]string{}
	}
	if set.Spec.Selector != nil {
		for k, v := range set.Spec.Selector.MatchLabels {
			claim.Labels[k] = v
		}
	}
	claim.OwnerReferences, _ = ClaimOwnerRefs(claim, set, newPodStub(set, ord))
	_, err := c.client.CoreV1().PersistentVolumeClaims(set.Namespace).Create(ctx, claim, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		c.recorder.Eventf(set, corev1.EventTypeWarning, "FailedCreate", "create Claim %s for Pod %s in StatefulSet %s failed error: %v", name, name, set.Name, err)
		return fmt.Errorf("create claim %s/%s: %w", set.Namespace, name, err)
	}
	c.recorder.Eventf(set, corev1.EventTypeNormal, "SuccessfulCreate", "create Claim %s in StatefulSet %s success", name, set.Name)
	return nil
}

func (c *Controller) deletePod(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		c.recorder.Eventf(set, corev1.EventTypeWarning, "FailedDelete", "delete Pod %s in StatefulSet %s failed error: %v", pod.Name, set.Name, err)
		return fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	c.recorder.Eventf(set, corev1.EventTypeNormal, "SuccessfulDelete", "delete Pod %s in StatefulSet %s successful", pod.Name, set.Name)
	return nil
}

func (c *Controller) updateStatus(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod, currentRevision, updateRevision string) error {
	now := c.clock.Now()
	status := set.Status
	status.ObservedGeneration = set.Generation
	status.Replicas, status.ReadyReplicas, status.AvailableReplicas, status.CurrentReplicas, status.UpdatedReplicas = 0, 0, 0, 0, 0
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		status.Replicas++
		if healthy(p) {
			status.ReadyReplicas++
			if ctrlutil.IsPodAvailable(p, set.Spec.MinReadySeconds, now) {
				status.AvailableReplicas++
			}
		}
		if p.Labels[ctrlutil.RevisionHashLabel] == currentRevision {
			status.CurrentReplicas++
		}
		if p.Labels[ctrlutil.RevisionHashLabel] == updateRevision {
			status.UpdatedReplicas++
		}
	}
	replicas := ptr.Deref(set.Spec.Replicas, 1)
	status.CurrentRevision = currentRevision
	status.UpdateRevision = updateRevision
	// The rollout is done: the update revision becomes the current one.
	if status.UpdatedReplicas == replicas && status.ReadyReplicas == replicas && status.Replicas == replicas {
		status.CurrentRevision = updateRevision
		status.CurrentReplicas = status.UpdatedReplicas
	}
	// Pods ready but not yet minReadySeconds old become available with no event to say so.
	if set.Spec.MinReadySeconds > 0 && status.ReadyReplicas != status.AvailableReplicas {
		if soonest := ctrlutil.SoonestAvailable(pods, set.Spec.MinReadySeconds, now); soonest > 0 {
			c.loop.EnqueueAfter(set.Namespace+"/"+set.Name, soonest)
		}
	}
	if reflect.DeepEqual(status, set.Status) {
		return nil
	}
	set.Status = status
	if _, err := c.client.AppsV1().StatefulSets(set.Namespace).UpdateStatus(ctx, set, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update status of statefulset %s/%s: %w", set.Namespace, set.Name, err)
	}
	return nil
}
