package kubelet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const (
	// resourcesCheckpoint is the file in a pod's data dir holding its podResources.
	resourcesCheckpoint = "resources.json"
	// deferredResizeRetry is how soon a resize that did not fit is tried again: a pod that left or
	// shrank may have made room. Kubernetes retries on such events and on its periodic resync.
	deferredResizeRetry = 5 * time.Second
)

// podResizeState is the kubelet's memory of a pod's resources beside their checkpoint.
type podResizeState struct {
	resources podResources
	// pending is the PodResizePending condition of the last decision.
	pending *resizeCondition
	// actuationErr is the last failed in-place update, reported in PodResizeInProgress.
	actuationErr string
}

// resizeState returns the pod's state, reading its checkpoint the first time (a restarted kubelet
// finds what it allocated and applied before).
func (k *Kubelet) resizeState(uid types.UID) *podResizeState {
	k.mu.Lock()
	s, ok := k.resize[uid]
	k.mu.Unlock()
	if ok {
		return s
	}
	loaded := &podResizeState{}
	data, err := os.ReadFile(filepath.Join(k.podDataDir(uid), resourcesCheckpoint))
	switch {
	case err == nil:
		if err := json.Unmarshal(data, &loaded.resources); err != nil {
			// An unreadable checkpoint is as good as none: the pod is allocated its spec again.
			k.log.Warn("pod resources checkpoint unreadable", "uid", uid, "err", err)
			loaded.resources = podResources{}
		}
	case !errors.Is(err, os.ErrNotExist):
		k.log.Warn("read pod resources checkpoint", "uid", uid, "err", err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if s, ok := k.resize[uid]; ok {
		return s
	}
	k.resize[uid] = loaded
	return loaded
}

// saveResources checkpoints a pod's resources (write to a temporary file, then rename, so a crash
// leaves the old or the new checkpoint, never half of one).
func (k *Kubelet) saveResources(uid types.UID, r podResources) error {
	dir := k.podDataDir(uid)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("pod resources checkpoint: %w", err)
	}
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("pod resources checkpoint: %w", err)
	}
	tmp := filepath.Join(dir, resourcesCheckpoint+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("pod resources checkpoint: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, resourcesCheckpoint)); err != nil {
		return fmt.Errorf("pod resources checkpoint: %w", err)
	}
	return nil
}

// allocate decides on the pod's desired resources (decideResize) and records the outcome. It
// returns the pod with its allocation applied, which is what the containers run with, and how soon
// to decide again (a Deferred resize).
func (k *Kubelet) allocate(pod *corev1.Pod) (*corev1.Pod, time.Duration, error) {
	s := k.resizeState(pod.UID)
	// The Node object also carries extended resources others advertise for the node.
	allocatable := k.nodes.nodeAllocatable()
	k.mu.Lock()
	_, static := pod.Annotations[annotationConfigMirror]
	in := resizeInput{desired: pod, static: static, allocatable: allocatable}
	if s.resources.Allocated != nil {
		in.allocated = s.resources.clone().Allocated
	}
	for _, other := range k.activeOthersLocked(pod.UID) {
		in.others = append(in.others, withAllocation(other, k.allocatedLocked(other.UID)))
	}
	k.mu.Unlock()

	decision := decideResize(in)
	allocated := in.allocated
	if decision.allocate {
		allocated = allocationOf(pod)
		k.mu.Lock()
		next := s.resources.clone()
		k.mu.Unlock()
		next.Allocated = allocated
		if err := k.saveResources(pod.UID, next); err != nil {
			return withAllocation(pod, in.allocated), 0, err
		}
		k.mu.Lock()
		s.resources = next
		k.mu.Unlock()
		if in.allocated != nil {
			k.log.Info("pod resize allocated", "pod", pod.Namespace+"/"+pod.Name)
		}
	}
	k.mu.Lock()
	if decision.pending != nil && (s.pending == nil || *s.pending != *decision.pending) {
		k.log.Info("pod resize pending", "pod", pod.Namespace+"/"+pod.Name, "reason", decision.pending.reason, "message", decision.pending.message)
	}
	s.pending = decision.pending
	k.mu.Unlock()
	var retry time.Duration
	if decision.deferred {
		retry = deferredResizeRetry
	}
	return withAllocation(pod, allocated), retry, nil
}

// allocatedPod is pod with the allocation the kubelet recorded for it applied.
func (k *Kubelet) allocatedPod(pod *corev1.Pod) *corev1.Pod {
	s := k.resizeState(pod.UID)
	k.mu.Lock()
	// An allocation is replaced whole, never changed in place: it may be read after the lock.
	allocated := s.resources.Allocated
	k.mu.Unlock()
	return withAllocation(pod, allocated)
}

// allocatedLocked is a pod's allocation, or nil when none is known (the pod's spec then counts).
// k.mu is held.
func (k *Kubelet) allocatedLocked(uid types.UID) map[string]corev1.ResourceRequirements {
	if s, ok := k.resize[uid]; ok {
		return s.resources.Allocated
	}
	return nil
}

// recordActuation notes what a container instance was given and checkpoints it.
func (k *Kubelet) recordActuation(uid types.UID, name, containerID string, res corev1.ResourceRequirements) error {
	s := k.resizeState(uid)
	k.mu.Lock()
	next := s.resources.clone()
	k.mu.Unlock()
	next.Actuated[name] = containerActuation{ContainerID: containerID, Resources: *res.DeepCopy()}
	if err := k.saveResources(uid, next); err != nil {
		return err
	}
	k.mu.Lock()
	s.resources = next
	k.mu.Unlock()
	return nil
}

// runningIn maps the pod's containers running in the sandbox to their instance IDs.
func runningIn(pod *corev1.Pod, state *podRuntimeState, sandboxID string) map[string]string {
	out := map[string]string{}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if cur := state.latest(cs[i].Name, sandboxID); running(cur) {
				out[cs[i].Name] = cur.Id
			}
		}
	}
	return out
}

// actuateResize brings the running containers of pod (its allocation applied) to their allocation:
// in place through the runtime's UpdateContainerResources, or by a restart where the resize policy
// asks for one (restart stops the container and starts it again). It reports whether a container
// was restarted.
func (k *Kubelet) actuateResize(ctx context.Context, pod *corev1.Pod, state *podRuntimeState, sandboxID string,
	restart func(c *corev1.Container, cur *runtimeapi.ContainerStatus) error,
) (bool, error) {
	s := k.resizeState(pod.UID)
	k.mu.Lock()
	actuated := s.resources.clone().Actuated
	k.mu.Unlock()
	restarted := false
	var errs []error
	for _, step := range planActuation(pod, actuated, runningIn(pod, state, sandboxID)) {
		c := findContainer(pod, step.name)
		cur := state.latest(step.name, sandboxID)
		if step.restart {
			k.recorder.Eventf(pod, corev1.EventTypeNormal, "Killing", "Container %s resize requires a restart, will be restarted", c.Name)
			if err := restart(c, cur); err != nil {
				errs = append(errs, err)
			}
			restarted = true
			continue
		}
		if err := k.runtime.UpdateContainerResources(ctx, cur.Id, linuxResources(pod, c, k.memoryCapacity)); err != nil {
			errs = append(errs, fmt.Errorf("resize container %s: %w", c.Name, err))
			continue
		}
		if err := k.recordActuation(pod.UID, c.Name, cur.Id, c.Resources); err != nil {
			errs = append(errs, err)
		}
	}
	err := errors.Join(errs...)
	k.mu.Lock()
	s.actuationErr = ""
	if err != nil {
		s.actuationErr = err.Error()
	}
	k.mu.Unlock()
	return restarted, err
}

// resizeReport is what a pod's status says about its resources.
type resizeReport struct {
	allocated map[string]corev1.ResourceRequirements
	actuated  map[string]containerActuation
	pending   *resizeCondition
	// actuationErr is the last failed in-place update.
	actuationErr string
}

func (k *Kubelet) resizeReport(uid types.UID) resizeReport {
	s := k.resizeState(uid)
	k.mu.Lock()
	defer k.mu.Unlock()
	r := s.resources.clone()
	return resizeReport{allocated: r.Allocated, actuated: r.Actuated, pending: s.pending, actuationErr: s.actuationErr}
}

// containerResources fills a container status's allocatedResources and resources (Kubernetes
// reports them for every container the runtime has an instance of).
func (r resizeReport) containerResources(cs *corev1.ContainerStatus, c *corev1.Container, cur *runtimeapi.ContainerStatus) {
	if cur == nil {
		return
	}
	allocated, ok := r.allocated[c.Name]
	if !ok {
		allocated = c.Resources
	}
	if len(allocated.Requests) > 0 {
		cs.AllocatedResources = allocated.Requests.DeepCopy()
	}
	runningID := ""
	if running(cur) {
		runningID = cur.Id
	}
	var act *containerActuation
	if a, ok := r.actuated[c.Name]; ok {
		act = &a
	}
	cs.Resources = statusResources(allocated, act, runningID)
}

// conditions are the PodResizePending and PodResizeInProgress conditions to report for pod (its
// allocation applied) with the given running containers.
func (r resizeReport) conditions(pod *corev1.Pod, running map[string]string) (pending, inProgress *resizeCondition) {
	if r.actuationErr != "" {
		inProgress = &resizeCondition{corev1.PodReasonError, r.actuationErr}
	} else if resizeInProgress(pod, r.actuated, running) {
		inProgress = &resizeCondition{}
	}
	return r.pending, inProgress
}
