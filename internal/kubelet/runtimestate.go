package kubelet

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiff-sh/skiff/internal/kubelet/cri"
)

// podRuntimeState is what the runtime has for one pod, read fresh at each
// sync.
type podRuntimeState struct {
	// sandboxes, newest first.
	sandboxes []*runtimeapi.PodSandbox
	// containers of all the pod's sandboxes, newest first.
	containers []*runtimeapi.ContainerStatus
}

func runtimeState(ctx context.Context, runtime cri.Runtime, uid types.UID) (*podRuntimeState, error) {
	selector := map[string]string{labelPodUID: string(uid)}
	sandboxes, err := runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(sandboxes, func(a, b *runtimeapi.PodSandbox) int { return compareNewest(a.CreatedAt, b.CreatedAt) })
	return refreshContainers(ctx, runtime, uid, &podRuntimeState{sandboxes: sandboxes})
}

// refreshContainers returns state with the pod's containers read again and
// its sandboxes as they were.
func refreshContainers(ctx context.Context, runtime cri.Runtime, uid types.UID, sandboxes *podRuntimeState) (*podRuntimeState, error) {
	selector := map[string]string{labelPodUID: string(uid)}
	containers, err := runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	state := &podRuntimeState{sandboxes: sandboxes.sandboxes}
	for _, c := range containers {
		status, err := runtime.ContainerStatus(ctx, c.Id)
		if cri.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("pod %s: %w", uid, err)
		}
		if status.Labels == nil {
			status.Labels = c.Labels
		}
		if status.Annotations == nil {
			status.Annotations = c.Annotations
		}
		state.containers = append(state.containers, withSandbox(status, c.PodSandboxId))
	}
	// Newest first; a container created in the same clock tick as its
	// previous run (a coarse or fake clock) is told apart by its attempt,
	// which counts a container's runs.
	slices.SortStableFunc(state.containers, func(a, b *runtimeapi.ContainerStatus) int {
		if c := compareNewest(a.CreatedAt, b.CreatedAt); c != 0 {
			return c
		}
		return compareNewest(int64(a.Metadata.GetAttempt()), int64(b.Metadata.GetAttempt()))
	})
	return state, nil
}

// sandboxOfContainer is recorded in the status labels' copy so the state
// can tell which sandbox a container belongs to without another lookup.
const sandboxIDKey = "skiff.sh/sandbox-id"

func withSandbox(s *runtimeapi.ContainerStatus, sandboxID string) *runtimeapi.ContainerStatus {
	labels := make(map[string]string, len(s.Labels)+1)
	for k, v := range s.Labels {
		labels[k] = v
	}
	labels[sandboxIDKey] = sandboxID
	s.Labels = labels
	return s
}

func compareNewest(a, b int64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// readySandbox returns the newest sandbox if it is ready.
func (s *podRuntimeState) readySandbox() *runtimeapi.PodSandbox {
	if len(s.sandboxes) == 0 || s.sandboxes[0].State != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil
	}
	return s.sandboxes[0]
}

// latest returns the newest container with this name, in sandboxID when
// sandboxID is not empty.
func (s *podRuntimeState) latest(name, sandboxID string) *runtimeapi.ContainerStatus {
	for _, c := range s.containers {
		if c.Metadata.GetName() == name && (sandboxID == "" || c.Labels[sandboxIDKey] == sandboxID) {
			return c
		}
	}
	return nil
}

// previous returns the newest container with this name older than current.
func (s *podRuntimeState) previous(current *runtimeapi.ContainerStatus) *runtimeapi.ContainerStatus {
	seen := false
	for _, c := range s.containers {
		if c == current {
			seen = true
			continue
		}
		if seen && c.Metadata.GetName() == current.Metadata.GetName() {
			return c
		}
	}
	return nil
}

func restartCount(c *runtimeapi.ContainerStatus) int32 {
	if c == nil {
		return 0
	}
	n, _ := strconv.Atoi(c.Annotations[annotationRestartCount])
	return int32(n)
}

func running(c *runtimeapi.ContainerStatus) bool {
	return c != nil && c.State == runtimeapi.ContainerState_CONTAINER_RUNNING
}

func exited(c *runtimeapi.ContainerStatus) bool {
	return c != nil && c.State == runtimeapi.ContainerState_CONTAINER_EXITED
}
