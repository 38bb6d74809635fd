package daemonset

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "daemonset"

// RevisionHashLabel ties pods and ControllerRevisions to a template version.
const RevisionHashLabel = ctrlutil.RevisionHashLabel

func controllerKind() schema.GroupVersionKind { return appsv1.SchemeGroupVersion.WithKind("DaemonSet") }

// DaemonTolerations are added to every daemon pod, as Kubernetes does: a
// daemon stays on a node through not-ready, unreachable, pressure and
// cordoned states.
func DaemonTolerations(hostNetwork bool) []corev1.Toleration {
	t := []corev1.Toleration{
		{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: "node.kubernetes.io/disk-pressure", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: "node.kubernetes.io/memory-pressure", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: "node.kubernetes.io/pid-pressure", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: "node.kubernetes.io/unschedulable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}
	if hostNetwork {
		t = append(t, corev1.Toleration{Key: "node.kubernetes.io/network-unavailable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	}
	return t
}

// withDaemonTolerations returns tolerations plus the daemon ones it lacks.
func withDaemonTolerations(spec *corev1.PodSpec) []corev1.Toleration {
	out := append([]corev1.Toleration(nil), spec.Tolerations...)
	for _, d := range DaemonTolerations(spec.HostNetwork) {
		have := false
		for _, t := range out {
			have = have || (t.Key == d.Key && t.Effect == d.Effect)
		}
		if !have {
			out = append(out, d)
		}
	}
	return out
}

// ShouldRun reports whether ds wants a pod on node.
func ShouldRun(ds *appsv1.DaemonSet, node *corev1.Node) bool {
	if node.DeletionTimestamp != nil {
		return false
	}
	spec := &ds.Spec.Template.Spec
	return ctrlutil.MatchesNodeSelectorAndAffinity(spec, node) && ctrlutil.ToleratesNode(withDaemonTolerations(spec), node)
}

// Controller reconciles DaemonSets.
type Controller struct {
	client       kubernetes.Interface
	dsLister     appslisters.DaemonSetLister
	crLister     appslisters.ControllerRevisionLister
	podLister    corelisters.PodLister
	nodeLister   corelisters.NodeLister
	recorder     record.EventRecorder
	clock        clock.PassiveClock
	expectations *ctrlutil.Expectations
	loop         *ctrlutil.Loop
	synced       []cache.InformerSynced
}

// New builds the controller and registers its informers' handlers.
func New(deps ctrlutil.Deps) (*Controller, error) {
	dsInformer := deps.Informers.Apps().V1().DaemonSets()
	crInformer := deps.Informers.Apps().V1().ControllerRevisions()
	podInformer := deps.Informers.Core().V1().Pods()
	nodeInformer := deps.Informers.Core().V1().Nodes()
	c := &Controller{
		client:       deps.Client,
		dsLister:     dsInformer.Lister(),
		crLister:     crInformer.Lister(),
		podLister:    podInformer.Lister(),
		nodeLister:   nodeInformer.Lister(),
		recorder:     deps.Recorder,
		clock:        deps.Clock,
		expectations: ctrlutil.NewExpectations(deps.Clock),
	}
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	enqueueAll := func(any) {
		all, err := c.dsLister.List(labels.Everything())
		if err != nil {
			return
		}
		for _, ds := range all {
			c.loop.Enqueue(ds)
		}
	}
	// podEvent queues a daemon pod's DaemonSet, first telling the expectations what was seen.
	podEvent := func(observe func(key string, pod metav1.Object)) func(any) {
		return func(o any) {
			key, pod, ok := ctrlutil.OwnerKey(o, "DaemonSet")
			if !ok {
				return
			}
			if observe != nil {
				observe(key, pod)
			}
			c.loop.Queue.Add(key)
		}
	}
	dsHandlers := ctrlutil.On(ctrlutil.OnAdd|ctrlutil.OnUpdate, c.loop.Enqueue)
	dsHandlers.DeleteFunc = func(o any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(o); err == nil {
			c.expectations.Delete(key)
		}
	}
	var err error
	c.synced, err = ctrlutil.NewWiring(Name).
		Watch(dsInformer.Informer(), dsHandlers).
		Watch(crInformer.Informer(), nil).
		Watch(podInformer.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    podEvent(func(key string, _ metav1.Object) { c.expectations.CreationObserved(key) }),
			UpdateFunc: func(_, o any) { podEvent(nil)(o) },
			DeleteFunc: podEvent(func(key string, p metav1.Object) {
				c.expectations.DeletionObserved(key, p.GetNamespace()+"/"+p.GetName())
			}),
		}).
		// Node labels, taints and membership decide where daemons run.
		// A heartbeat changes none of it: at thousands of nodes, each one synced every DaemonSet.
		Watch(nodeInformer.Informer(), cache.ResourceEventHandlerFuncs{AddFunc: enqueueAll, UpdateFunc: ctrlutil.OnNodeUpdate(
			func(o, n *corev1.Node) bool { return !ctrlutil.NodeHeartbeatOnly(o, n) }, enqueueAll), DeleteFunc: enqueueAll}).
		Done()
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers, c.synced...) }

// Sync reconciles the DaemonSet with the given namespace/name key.
func (c *Controller) Sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.dsLister.DaemonSets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.expectations.Delete(key)
		return nil
	}
	if err != nil {
		return fmt.Errorf("get daemonset %s: %w", key, err)
	}
	ds := cached.DeepCopy()
	selector, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil || selector.Empty() {
		c.recorder.Eventf(ds, corev1.EventTypeWarning, "SelectingAll", "This daemon set is selecting all pods. A non-empty selector is required.")
		return nil
	}
	nodes, err := c.nodeLister.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	hash, err := c.syncRevisions(ctx, ds)
	if err != nil {
		return err
	}
	pods, err := c.claimPods(ctx, ds, selector)
	if err != nil {
		return err
	}
	podsByNode := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if node := nodeOf(p); node != "" {
			podsByNode[node] = append(podsByNode[node], p)
		}
	}
	var manageErr error
	if c.expectations.Satisfied(key) && ds.DeletionTimestamp == nil {
		manageErr = c.manage(ctx, key, ds, nodes, podsByNode, hash)
	}
	if err := c.updateStatus(ctx, ds, nodes, podsByNode, hash); err != nil {
		return errors.Join(manageErr, err)
	}
	return manageErr
}

// nodeOf is the node a daemon pod is for: where it is bound, else the node
// its affinity pins it to.
func nodeOf(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == "metadata.name" && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

func (c *Controller) claimPods(ctx context.Context, ds *appsv1.DaemonSet, selector labels.Selector) ([]*corev1.Pod, error) {
	all, err := c.podLister.Pods(ds.Namespace).List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list pods of daemonset %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	var owned []*corev1.Pod
	var errs []error
	for _, p := range all {
		decision := ctrlutil.DecideClaim(p, ds.UID, selector, ds.DeletionTimestamp != nil)
		mine, err := ctrlutil.ClaimPod(ctx, c.client, p, decision, ctrlutil.NewControllerRef(ds, controllerKind()))
		if err != nil {
			errs = append(errs, err)
		}
		if mine {
			owned = append(owned, p)
		}
	}
	return owned, errors.Join(errs...)
}

// syncRevisions records the current template in a ControllerRevision and
// returns its hash.
func (c *Controller) syncRevisions(ctx context.Context, ds *appsv1.DaemonSet) (string, error) {
	limit := 10
	if ds.Spec.RevisionHistoryLimit != nil {
		limit = int(*ds.Spec.RevisionHistoryLimit)
	}
	revs, err := ctrlutil.SyncRevisions(ctx, c.client, c.crLister, ds, controllerKind(), &ds.Spec.Template, ds.Status.CollisionCount, limit)
	if err != nil {
		return "", err
	}
	return revs.Update.Labels[RevisionHashLabel], nil
}

func maxUnavailable(ds *appsv1.DaemonSet, desired int) (unavailable, surge int) {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	u, s := intstr.FromInt32(1), intstr.FromInt32(0)
	if ru != nil && ru.MaxUnavailable != nil {
		u = *ru.MaxUnavailable
	}
	if ru != nil && ru.MaxSurge != nil {
		s = *ru.MaxSurge
	}
	uv, err := intstr.GetScaledValueFromIntOrPercent(&u, desired, true)
	if err != nil {
		uv = 1
	}
	sv, err := intstr.GetScaledValueFromIntOrPercent(&s, desired, true)
	if err != nil {
		sv = 0
	}
	if uv == 0 && sv == 0 {
		uv = 1
	}
	return uv, sv
}

// manage computes, node by node, which daemon pods to create and delete.
func (c *Controller) manage(ctx context.Context, key string, ds *appsv1.DaemonSet, nodes []*corev1.Node, podsByNode map[string][]*corev1.Pod, hash string) error {
	now := c.clock.Now()
	var createOn []string
	var remove []*corev1.Pod
	rolling := ds.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType
	desired := 0
	for _, n := range nodes {
		if ShouldRun(ds, n) {
			desired++
		}
	}
	maxUnav, maxSurge := maxUnavailable(ds, desired)
	unavailable := 0
	type oldOnNode struct {
		node      string
		pod       *corev1.Pod
		available bool
		newReady  bool // a new pod on the node is available (surge)
		hasNew    bool
	}
	var olds []oldOnNode
	for _, n := range nodes {
		var live []*corev1.Pod
		for _, p := range podsByNode[n.Name] {
			if p.DeletionTimestamp != nil {
				continue
			}
			if p.Status.Phase == corev1.PodFailed {
				remove = append(remove, p) // replaced on a later sync
				continue
			}
			live = append(live, p)
		}
		if !ShouldRun(ds, n) {
			remove = append(remove, live...)
			continue
		}
		var newPods, oldPods []*corev1.Pod
		for _, p := range live {
			if p.Labels[RevisionHashLabel] == hash {
				newPods = append(newPods, p)
			} else {
				oldPods = append(oldPods, p)
			}
		}
		if len(newPods) > 1 { // keep one
			sort.Slice(newPods, func(i, j int) bool { return newPods[i].CreationTimestamp.Before(&newPods[j].CreationTimestamp) })
			remove = append(remove, newPods[1:]...)
			newPods = newPods[:1]
		}
		switch {
		case len(live) == 0:
			createOn = append(createOn, n.Name)
			unavailable++
		case !rolling:
			// OnDelete: whatever runs stays.
			if !anyAvailable(live, ds.Spec.MinReadySeconds, now) {
				unavailable++
			}
		default:
			newAvailable := len(newPods) == 1 && ctrlutil.IsPodAvailable(newPods[0], ds.Spec.MinReadySeconds, now)
			if len(oldPods) == 0 {
				if !newAvailable {
					unavailable++
				}
				continue
			}
			oldAvailable := anyAvailable(oldPods, ds.Spec.MinReadySeconds, now)
			if !oldAvailable && !newAvailable {
				unavailable++
			}
			for _, p := range oldPods {
				olds = append(olds, oldOnNode{node: n.Name, pod: p, available: ctrlutil.IsPodAvailable(p, ds.Spec.MinReadySeconds, now),
					newReady: newAvailable, hasNew: len(newPods) == 1})
			}
		}
	}
	if rolling {
		budget := maxUnav - unavailable
		// Nodes whose new pod is still starting beside the old one are surging already: they
		// count against maxSurge as much as the surges this sync starts.
		surging := map[string]bool{}
		for _, o := range olds {
			if o.hasNew && !o.newReady {
				surging[o.node] = true
			}
		}
		surged := len(surging)
		for _, o := range olds {
			switch {
			case o.newReady: // surge finished on this node
				remove = append(remove, o.pod)
			case !o.available: // an unavailable old pod costs nothing to replace
				remove = append(remove, o.pod)
			case maxSurge > 0:
				if !o.hasNew && surged < maxSurge {
					createOn = append(createOn, o.node)
					surged++
				}
			case budget > 0:
				remove = append(remove, o.pod)
				budget--
			}
		}
	}
	return errors.Join(c.deletePods(ctx, key, ds, remove), c.createPods(ctx, key, ds, createOn, hash))
}

func anyAvailable(pods []*corev1.Pod, minReady int32, now time.Time) bool {
	for _, p := range pods {
		if ctrlutil.IsPodAvailable(p, minReady, now) {
			return true
		}
	}
	return false
}

// podForNode builds a daemon pod pinned to node through node affinity.
func podForNode(ds *appsv1.DaemonSet, node, hash string) *corev1.Pod {
	pod := ctrlutil.PodFromTemplate(&ds.Spec.Template, ds.Namespace, ds.Name, ctrlutil.NewControllerRef(ds, controllerKind()))
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[RevisionHashLabel] = hash
	pod.Spec.Tolerations = withDaemonTolerations(&pod.Spec)
	pin := corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &corev1.Affinity{}
	}
	if pod.Spec.Affinity.NodeAffinity == nil {
		pod.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	req := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if req == nil || len(req.NodeSelectorTerms) == 0 {
		pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{pin}}}}
		return pod
	}
	// Keep the user's expressions, replace any field terms with the pin.
	for i := range req.NodeSelectorTerms {
		req.NodeSelectorTerms[i].MatchFields = []corev1.NodeSelectorRequirement{pin}
	}
	return pod
}

func (c *Controller) createPods(ctx context.Context, key string, ds *appsv1.DaemonSet, nodes []string, hash string) error {
	if len(nodes) == 0 {
		return nil
	}
	nodes = nodes[:min(len(nodes), 250)]
	c.expectations.ExpectCreations(key, len(nodes))
	var mu sync.Mutex
	next := 0
	successes, err := ctrlutil.SlowStartBatch(len(nodes), 1, func() error {
		mu.Lock()
		node := nodes[next]
		next++
		mu.Unlock()
		created, err := c.client.CoreV1().Pods(ds.Namespace).Create(ctx, podForNode(ds, node, hash), metav1.CreateOptions{})
		if err != nil {
			c.recorder.Eventf(ds, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
			return err
		}
		c.recorder.Eventf(ds, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %s", created.Name)
		return nil
	})
	if skipped := len(nodes) - successes; skipped > 0 {
		c.expectations.LowerCreations(key, skipped)
	}
	if err != nil {
		return fmt.Errorf("create daemon pods for %s: %w", key, err)
	}
	return nil
}

func (c *Controller) deletePods(ctx context.Context, key string, ds *appsv1.DaemonSet, pods []*corev1.Pod) error {
	if len(pods) == 0 {
		return nil
	}
	keys := make([]string, len(pods))
	for i, p := range pods {
		keys[i] = p.Namespace + "/" + p.Name
	}
	c.expectations.ExpectDeletions(key, keys)
	var errs []error
	for _, p := range pods {
		err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
		if err != nil {
			c.expectations.DeletionObserved(key, p.Namespace+"/"+p.Name)
			if !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete pod %s/%s: %w", p.Namespace, p.Name, err))
			}
			continue
		}
		c.recorder.Eventf(ds, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %s", p.Name)
	}
	return errors.Join(errs...)
}

func (c *Controller) updateStatus(ctx context.Context, ds *appsv1.DaemonSet, nodes []*corev1.Node, podsByNode map[string][]*corev1.Pod, hash string) error {
	now := c.clock.Now()
	var desired, current, misscheduled, ready, available, updated int32
	for _, n := range nodes {
		var live []*corev1.Pod
		for _, p := range podsByNode[n.Name] {
			if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded {
				live = append(live, p)
			}
		}
		should := ShouldRun(ds, n)
		if !should {
			if len(live) > 0 {
				misscheduled++
			}
			continue
		}
		desired++
		if len(live) == 0 {
			continue
		}
		current++
		sort.Slice(live, func(i, j int) bool { return live[i].CreationTimestamp.After(live[j].CreationTimestamp.Time) })
		p := live[0]
		for _, q := range live {
			if q.Labels[RevisionHashLabel] == hash {
				p = q
				updated++
				break
			}
		}
		if ctrlutil.IsPodReady(p) {
			ready++
			if ctrlutil.IsPodAvailable(p, ds.Spec.MinReadySeconds, now) {
				available++
			}
		}
	}
	status := ds.Status
	status.DesiredNumberScheduled = desired
	status.CurrentNumberScheduled = current
	status.NumberMisscheduled = misscheduled
	status.NumberReady = ready
	status.NumberAvailable = available
	status.NumberUnavailable = max(desired-available, 0)
	status.UpdatedNumberScheduled = updated
	status.ObservedGeneration = ds.Generation
	if reflect.DeepEqual(status, ds.Status) {
		return nil
	}
	ds.Status = status
	if _, err := c.client.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, ds, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update status of daemonset %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	if ds.Spec.MinReadySeconds > 0 && ready != available {
		c.loop.EnqueueAfter(ds.Namespace+"/"+ds.Name, time.Duration(ds.Spec.MinReadySeconds)*time.Second)
	}
	return nil
}
