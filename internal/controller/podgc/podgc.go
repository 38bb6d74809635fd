package podgc

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/controller/ctrlutil"
)

// Name is the controller's name in --controllers and in metrics.
const Name = "podgc"

const (
	// GCPeriod is how often the collector runs.
	GCPeriod = 20 * time.Second
	// Quarantine is how long a node must have been missing from the cache
	// before its pods are collected (the cache may just lag).
	Quarantine = 40 * time.Second
	// syncKey is the single work item: the collector looks at all pods.
	syncKey = "podgc"
)

// Controller collects pods.
type Controller struct {
	client     kubernetes.Interface
	podLister  corelisters.PodLister
	nodeLister corelisters.NodeLister
	clock      clock.WithTicker
	threshold  int
	loop       *ctrlutil.Loop
	synced     []cache.InformerSynced

	mu           sync.Mutex
	missingSince map[string]time.Time
}

// New builds the collector; threshold is --terminated-pod-gc-threshold (0 disables that part).
func New(deps ctrlutil.Deps, threshold int) *Controller {
	podInformer := deps.Informers.Core().V1().Pods()
	nodeInformer := deps.Informers.Core().V1().Nodes()
	c := &Controller{
		client:       deps.Client,
		podLister:    podInformer.Lister(),
		nodeLister:   nodeInformer.Lister(),
		clock:        deps.Clock,
		threshold:    threshold,
		synced:       []cache.InformerSynced{podInformer.Informer().HasSynced, nodeInformer.Informer().HasSynced},
		missingSince: map[string]time.Time{},
	}
	c.loop = ctrlutil.NewLoop(Name, deps, c.Sync)
	return c
}

// Run collects every GCPeriod until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	go func() {
		ticker := c.clock.NewTicker(GCPeriod)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C():
				c.loop.Queue.Add(syncKey)
			}
		}
	}()
	c.loop.Run(ctx, 1, c.synced...)
}

// Sync runs one collection pass.
func (c *Controller) Sync(ctx context.Context, _ string) error {
	pods, err := c.podLister.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	return errors.Join(
		c.collectTerminated(ctx, pods),
		c.collectOrphaned(ctx, pods),
		c.collectUnscheduledTerminating(ctx, pods),
	)
}

func (c *Controller) forceDelete(ctx context.Context, pod *corev1.Pod) error {
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &pod.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

func (c *Controller) collectTerminated(ctx context.Context, pods []*corev1.Pod) error {
	if c.threshold <= 0 {
		return nil
	}
	var terminated []*corev1.Pod
	for _, p := range pods {
		if (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) && p.DeletionTimestamp == nil {
			terminated = append(terminated, p)
		}
	}
	excess := len(terminated) - c.threshold
	if excess <= 0 {
		return nil
	}
	sort.SliceStable(terminated, func(i, j int) bool {
		return terminated[i].CreationTimestamp.Before(&terminated[j].CreationTimestamp)
	})
	var errs []error
	for _, p := range terminated[:excess] {
		errs = append(errs, c.forceDelete(ctx, p))
	}
	return errors.Join(errs...)
}

// collectOrphaned deletes pods of nodes gone for longer than Quarantine.
func (c *Controller) collectOrphaned(ctx context.Context, pods []*corev1.Pod) error {
	now := c.clock.Now()
	byNode := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if p.Spec.NodeName == "" {
			continue
		}
		if _, err := c.nodeLister.Get(p.Spec.NodeName); err == nil {
			continue
		}
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
	}
	c.mu.Lock()
	for node := range c.missingSince {
		if _, ok := byNode[node]; !ok {
			delete(c.missingSince, node)
		}
	}
	var due []string
	for node := range byNode {
		since, ok := c.missingSince[node]
		if !ok {
			c.missingSince[node] = now
			since = now
		}
		if now.Sub(since) >= Quarantine {
			due = append(due, node)
		}
	}
	c.mu.Unlock()
	if len(byNode) > 0 {
		c.loop.EnqueueAfter(syncKey, Quarantine)
	}
	var errs []error
	for _, node := range due {
		// The cache may lag a re-registered node: ask the API.
		_, err := c.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err == nil {
			c.mu.Lock()
			delete(c.missingSince, node)
			c.mu.Unlock()
			continue
		}
		if !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("check node %s: %w", node, err))
			continue
		}
		for _, p := range byNode[node] {
			if err := c.markFailed(ctx, p, now); err != nil {
				errs = append(errs, err)
				continue
			}
			errs = append(errs, c.forceDelete(ctx, p))
		}
	}
	return errors.Join(errs...)
}

// markFailed records why the pod goes: phase Failed and a DisruptionTarget
// condition, so Job pod failure policies and users can tell.
func (c *Controller) markFailed(ctx context.Context, pod *corev1.Pod, now time.Time) error {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil
	}
	p := pod.DeepCopy()
	p.Status.Phase = corev1.PodFailed
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
		Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByPodGC",
		Message: "PodGC: node no longer exists", LastTransitionTime: metav1.NewTime(now),
	})
	if _, err := c.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("mark pod %s/%s failed: %w", p.Namespace, p.Name, err)
	}
	return nil
}

func (c *Controller) collectUnscheduledTerminating(ctx context.Context, pods []*corev1.Pod) error {
	var errs []error
	for _, p := range pods {
		if p.DeletionTimestamp != nil && p.Spec.NodeName == "" {
			errs = append(errs, c.forceDelete(ctx, p))
		}
	}
	return errors.Join(errs...)
}
