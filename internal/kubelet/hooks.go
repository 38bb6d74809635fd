package kubelet

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// runHook runs a postStart or preStop handler against a running container
// and returns why it failed.
func (k *Kubelet) runHook(ctx context.Context, c *corev1.Container, containerID string, h *corev1.LifecycleHandler, podIPs []string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case h.Exec != nil:
		stdout, stderr, code, err := k.runtime.ExecSync(ctx, containerID, h.Exec.Command, timeout)
		if err != nil {
			return err
		}
		if code != 0 {
			return fmt.Errorf("command '%s' exited with %d: %s", strings.Join(h.Exec.Command, " "), code, truncate(string(stdout)+string(stderr), maxProbeOutput))
		}
		return nil
	case h.HTTPGet != nil:
		podIP := ""
		if len(podIPs) > 0 {
			podIP = podIPs[0]
		}
		if ok, out, _ := httpProbe(ctx, h.HTTPGet, c, podIP); !ok {
			return fmt.Errorf("%s", out)
		}
		return nil
	case h.Sleep != nil:
		select {
		case <-ctx.Done():
		case <-k.clock.After(time.Duration(h.Sleep.Seconds) * time.Second):
		}
		return nil
	}
	return fmt.Errorf("lifecycle handler has no action")
}

// currentPodIPs returns the IPs of the pod's newest ready sandbox.
func (k *Kubelet) currentPodIPs(ctx context.Context, pod *corev1.Pod, state *podRuntimeState) []string {
	sandbox := state.readySandbox()
	if sandbox == nil {
		return nil
	}
	status, err := k.runtime.PodSandboxStatus(ctx, sandbox.Id)
	if err != nil {
		return nil
	}
	return sandboxIPs(pod, status, k.nodes.currentHostIPs())
}

// stopContainer runs the container's preStop hook (within the grace
// period), then stops it with what is left of the grace period.
func (k *Kubelet) stopContainer(ctx context.Context, pod *corev1.Pod, c *corev1.Container, status *runtimeapi.ContainerStatus, podIPs []string, grace time.Duration) error {
	if pod != nil && c != nil && c.Lifecycle != nil && c.Lifecycle.PreStop != nil && running(status) {
		started := k.clock.Now()
		if err := k.runHook(ctx, c, status.Id, c.Lifecycle.PreStop, podIPs, grace); err != nil {
			k.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedPreStopHook", "PreStopHook failed: %v", err)
		}
		grace = max(grace-k.clock.Since(started), minimumGracePeriod)
	}
	return k.runtime.StopContainer(ctx, status.Id, grace)
}
