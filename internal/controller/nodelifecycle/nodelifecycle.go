package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "nodelifecycle"

// MonitorPeriod is how often every node's health is re-evaluated.
const MonitorPeriod = 5 * time.Second

// LeaseNamespace holds the nodes' heartbeat Leases.
const LeaseNamespace = corev1.NamespaceNodeLease

// Work items are "node/<name>" and "pod/<namespace>/<name>".
const (
	nodePrefix = "node/"
	podPrefix  = "pod/"
)

const podNodeIndex = "spec.nodeName"

// Controller watches node health and evicts pods from NoExecute-tainted nodes.
type Controller struct {
	client      kubernetes.Interface
	nodeLister  corelisters.NodeLister
	leaseLister coordinationlisters.LeaseLister
	podLister   corelisters.PodLister
	podIndexer  cache.Indexer
	recorder    record.EventRecorder
	clock       clock.WithTicker
	grace       time.Duration
	loop        *ctrlutil.Loop
	synced      []cache.InformerSynced
}

// New builds the controller; grace is --node-monitor-grace-period.
func New(deps ctrlutil.Deps, grace time.Duration) (*Controller, error) {
	nodeInformer := deps.Informers.Core().V1().Nodes()
	leaseInformer := deps.Informers.Coordination().V1().Leases()
	podInformer := deps.Informers.Core().V1().Pods()
	if err := podInformer.Informer().AddIndexers(cache.Indexers{podNodeIndex: func(o any) ([]string, error) {
		if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, fmt.Errorf("index pods by node: %w", err)
	}
	c := &Controller{
		client:      deps.Client,
		nodeLister:  nodeInformer.Lister(),
		leaseLister: leaseInformer.Lister(),
		podLister:   podInformer.Lister(),
		podIndexer:  podInformer.Informer().GetIndexer(),
		recorder:    deps.Recorder,
		clock:       deps.Clock,
		grace:       grace,
		synced:      []cache.InformerSynced{nodeInformer.Informer().HasSynced, leaseInformer.Informer().HasSynced, podInformer.Informer().HasSynced},
	}
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	enqueueNode := func(o any) {
		if n, ok := o.(*corev1.Node); ok {
			c.loop.Queue.Add(nodePrefix + n.Name)
		}
	}
	enqueuePod := func(o any) {
		if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			c.loop.Queue.Add(podPrefix + p.Namespace + "/" + p.Name)
		}
	}
	for _, h := range []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandlerFuncs
	}{
		{nodeInformer.Informer(), cache.ResourceEventHandlerFuncs{AddFunc: enqueueNode, UpdateFunc: func(_, o any) { enqueueNode(o) }}},
		{podInformer.Informer(), cache.ResourceEventHandlerFuncs{AddFunc: enqueuePod, UpdateFunc: func(_, o any) { enqueuePod(o) }}},
	} {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			return nil, fmt.Errorf("nodelifecycle handler: %w", err)
		}
	}
	return c, nil
}

// Run monitors nodes every MonitorPeriod until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	go func() {
		ticker := c.clock.NewTicker(MonitorPeriod)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C():
				nodes, err := c.nodeLister.List(labels.Everything())
				if err != nil {
					continue
				}
				for _, n := range nodes {
					c.loop.Queue.Add(nodePrefix + n.Name)
				}
			}
		}
	}()
	c.loop.Run(ctx, workers, c.synced...)
}

// Sync handles one work item: a node's health or a pod's eviction.
func (c *Controller) Sync(ctx context.Context, key string) error {
	switch {
	case strings.HasPrefix(key, nodePrefix):
		return c.syncNode(ctx, strings.TrimPrefix(key, nodePrefix))
	case strings.HasPrefix(key, podPrefix):
		ns, name, err := cache.SplitMetaNamespaceKey(strings.TrimPrefix(key, podPrefix))
		if err != nil {
			return nil
		}
		return c.syncPod(ctx, ns, name)
	}
	return nil
}

func (c *Controller) syncNode(ctx context.Context, name string) error {
	cached, err := c.nodeLister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get node %s: %w", name, err)
	}
	lease, err := c.leaseLister.Leases(LeaseNamespace).Get(name)
	if err != nil {
		lease = nil
	}
	now := c.clock.Now()
	plan := Evaluate(cached, lease, now, c.grace)
	node := cached.DeepCopy()
	if plan.Conditions != nil {
		node.Status.Conditions = plan.Conditions
		updated, err := c.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("update conditions of node %s: %w", name, err)
		}
		node = updated
		c.recorder.Eventf(node, corev1.EventTypeNormal, "NodeNotReady", "Node %s status is now: NodeNotReady", name)
	}
	if plan.Taints != nil {
		node.Spec.Taints = plan.Taints
		if _, err := c.client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update taints of node %s: %w", name, err)
		}
	}
	pods, err := c.podIndexer.ByIndex(podNodeIndex, name)
	if err != nil {
		return fmt.Errorf("pods of node %s: %w", name, err)
	}
	var errs []error
	for _, o := range pods {
		pod := o.(*corev1.Pod)
		if plan.NotReady {
			errs = append(errs, c.markPodNotReady(ctx, pod, now))
		}
		c.loop.Queue.Add(podPrefix + pod.Namespace + "/" + pod.Name)
	}
	return errors.Join(errs...)
}

func (c *Controller) markPodNotReady(ctx context.Context, pod *corev1.Pod, now time.Time) error {
	if pod.DeletionTimestamp != nil || !ctrlutil.IsPodReady(pod) {
		return nil
	}
	p := pod.DeepCopy()
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			p.Status.Conditions[i].Status = corev1.ConditionFalse
			p.Status.Conditions[i].LastTransitionTime = metav1.NewTime(now)
		}
	}
	if _, err := c.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("mark pod %s/%s not ready: %w", p.Namespace, p.Name, err)
	}
	return nil
}

func (c *Controller) syncPod(ctx context.Context, namespace, name string) error {
	pod, err := c.podLister.Pods(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get pod %s/%s: %w", namespace, name, err)
	}
	if pod.DeletionTimestamp != nil || pod.Spec.NodeName == "" {
		return nil
	}
	node, err := c.nodeLister.Get(pod.Spec.NodeName)
	if err != nil {
		return nil // a pod of a missing node is podgc's
	}
	now := c.clock.Now()
	at, evict := EvictionTime(pod, node.Spec.Taints, now)
	if !evict {
		return nil
	}
	if at.After(now) {
		c.loop.EnqueueAfter(podPrefix+namespace+"/"+name, at.Sub(now))
		return nil
	}
	c.recorder.Eventf(pod, corev1.EventTypeNormal, "TaintManagerEviction", "Marking for deletion Pod %s", namespace+"/"+name)
	p := pod.DeepCopy()
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: "DeletionByTaintManager", Message: "Taint manager: deleting due to NoExecute taint", LastTransitionTime: metav1.NewTime(now)})
	if _, err := c.client.CoreV1().Pods(namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("mark pod %s/%s for eviction: %w", namespace, name, err)
	}
	err = c.client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("evict pod %s/%s: %w", namespace, name, err)
	}
	return nil
}
