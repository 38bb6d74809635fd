package kubelet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/internal/kubelet/cri"
)

// Container waiting reasons as Kubernetes reports them.
const (
	reasonContainerCreating    = "ContainerCreating"
	reasonPodInitializing      = "PodInitializing"
	reasonCrashLoopBackOff     = "CrashLoopBackOff"
	reasonCreateConfigError    = "CreateContainerConfigError"
	reasonCreateContainerError = "CreateContainerError"
	reasonRunContainerError    = "RunContainerError"
	reasonErrImagePull         = "ErrImagePull"
	reasonImagePullBackOff     = "ImagePullBackOff"
	reasonErrImageNeverPull    = "ErrImageNeverPull"

	// minimumGracePeriod is the shortest time containers get to stop when
	// a pod is deleted, as in Kubernetes.
	minimumGracePeriod = 2 * time.Second
	defaultGracePeriod = 30 * time.Second
	// initPollInterval is how often a running init container is checked.
	initPollInterval = 200 * time.Millisecond
)

type syncResult struct {
	requeueAfter time.Duration
	finished     bool
	err          error
}

// errBackingOff marks a start that was deferred, not failed.
var errBackingOff = errors.New("backing off") //nolint:gochecknoglobals // sentinel error value.

// syncPod brings the runtime in line with the pod and writes its status.
func (k *Kubelet) syncPod(ctx context.Context, uid types.UID) syncResult {
	pod, deleted, known := k.podByUID(uid)
	state, err := runtimeState(ctx, k.runtime, uid)
	if err != nil {
		return syncResult{err: err}
	}
	if !known || deleted {
		if p := k.killProgress(uid); p.started && !p.done {
			// The object went (force-deleted) while its graceful kill runs: that kill's end
			// wakes the worker, which reclaims the pod then.
			return syncResult{}
		}
		k.forgetKill(uid)
		k.prober.removePod(uid)
		grace := minimumGracePeriod
		if pod != nil {
			grace = gracePeriod(pod)
		}
		if err := k.killPod(ctx, pod, state, grace); err != nil {
			return syncResult{err: err}
		}
		if err := k.removePod(ctx, pod, uid, state); err != nil {
			return syncResult{err: err}
		}
		return syncResult{finished: true}
	}
	if pod.DeletionTimestamp != nil {
		return k.terminatePod(ctx, pod, state)
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		// A finished pod keeps its containers for logs but not its sandbox.
		return syncResult{err: k.killPod(ctx, pod, state, gracePeriod(pod))}
	}
	if message, evicted := k.evictionOf(uid); evicted {
		// As upstream's eviction manager: no grace period beyond the minimum.
		return k.failPod(ctx, pod, state, reasonEvicted, message, minimumGracePeriod)
	}
	exceeded, left := activeDeadline(pod, k.clock.Now())
	if exceeded {
		return k.failPastDeadline(ctx, pod, state)
	}
	if admitted, err := k.admit(ctx, pod, state); err != nil || !admitted {
		return syncResult{err: err}
	}
	// From here on the pod carries its allocated resources: a resize that does not fit yet must not
	// reach a container that (re)starts.
	pod, retryResize, err := k.allocate(pod)
	if err != nil {
		return syncResult{err: err}
	}
	result := k.runPod(ctx, pod, state)
	for _, after := range []time.Duration{left, retryResize} {
		// Come back when the deadline passes (a changed deadline syncs the pod anyway), or to try a
		// deferred resize again.
		if after > 0 && (result.requeueAfter == 0 || after < result.requeueAfter) {
			result.requeueAfter = after
		}
	}
	return result
}

func gracePeriod(pod *corev1.Pod) time.Duration {
	grace := defaultGracePeriod
	switch {
	case pod.DeletionGracePeriodSeconds != nil:
		grace = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		grace = time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return max(grace, minimumGracePeriod)
}

// runPod carries out computePodActions' plan for a live pod and writes its status.
func (k *Kubelet) runPod(ctx context.Context, pod *corev1.Pod, state *podRuntimeState) syncResult {
	var sandboxID string
	if sandbox := state.readySandbox(); sandbox != nil {
		sandboxID = sandbox.Id
	}
	plan := computePodActions(pod, state, k.podActionInputs(pod, sandboxID))
	// sandboxStatus is the sandbox's status; a sandbox created in this sync comes with it.
	var sandboxStatus *runtimeapi.PodSandboxStatus
	switch plan.sandbox {
	case sandboxEndNever:
		if err := k.killPod(ctx, pod, state, gracePeriod(pod)); err != nil {
			return syncResult{err: err}
		}
		return syncResult{err: k.writeStatus(ctx, pod, state, nil, true)}
	case sandboxCreate:
		var res *syncResult
		if pod, state, sandboxStatus, res = k.startSandbox(ctx, pod, state); res != nil {
			return *res
		}
		// A new sandbox holds no container yet: plan them in it.
		if sandbox := state.readySandbox(); sandbox != nil {
			plan = computePodActions(pod, state, k.podActionInputs(pod, sandbox.Id))
		}
	}
	return k.runContainers(ctx, pod, state, sandboxStatus, plan)
}

// podActionInputs reads what computePodActions needs beyond the pod and its runtime state.
func (k *Kubelet) podActionInputs(pod *corev1.Pod, sandboxID string) podActionInputs {
	return podActionInputs{
		sandboxID:           sandboxID,
		now:                 k.clock.Now(),
		crashLoopResetAfter: k.cfg.CrashLoopResetAfter,
		backoff:             k.backoff.inBackoff,
		startupDone: func(c *corev1.Container, id string) bool {
			return k.prober.started(pod.UID, c, id)
		},
	}
}

// startSandbox makes the pod's sandbox, saying first that the pod is being set up. It returns
// the pod (re-read after that first status), the state with the new sandbox and its status,
// or the result the sync ends with.
func (k *Kubelet) startSandbox(ctx context.Context, pod *corev1.Pod, state *podRuntimeState) (*corev1.Pod, *podRuntimeState, *runtimeapi.PodSandboxStatus, *syncResult) {
	if len(state.sandboxes) == 0 && pod.Status.StartTime == nil {
		// Like Kubernetes' kubelet, say the pod is being set up (startTime, containers waiting
		// in ContainerCreating) before the sandbox, the slowest step: a pod is not left without
		// status while its node works on it.
		if err := k.writeStatus(ctx, pod, state, nil, false); err != nil {
			return pod, state, nil, &syncResult{err: err}
		}
		if current, deleted, known := k.podByUID(pod.UID); known && !deleted {
			pod = k.allocatedPod(current)
		}
	}
	_, sandboxStatus, state, err := k.createSandbox(ctx, pod, state)
	if err != nil {
		_ = k.writeStatus(ctx, pod, state, nil, false)
		return pod, state, nil, &syncResult{err: err}
	}
	return pod, state, sandboxStatus, nil
}

// runContainers carries out the container steps of plan in the pod's ready sandbox, then
// probes and writes the pod's status.
func (k *Kubelet) runContainers(ctx context.Context, pod *corev1.Pod, state *podRuntimeState, sandboxStatus *runtimeapi.PodSandboxStatus, plan podActions) syncResult {
	result := syncResult{requeueAfter: plan.requeueAfter}
	requeue := func(d time.Duration) {
		if d > 0 && (result.requeueAfter == 0 || d < result.requeueAfter) {
			result.requeueAfter = d
		}
	}
	sandbox := state.readySandbox()
	if sandbox == nil {
		return syncResult{err: fmt.Errorf("pod %s has no ready sandbox after it was made", podDescription(pod))}
	}
	sandboxConfig := k.sandboxConfig(pod, sandbox.Metadata.GetAttempt())
	if sandboxStatus == nil {
		var err error
		if sandboxStatus, err = k.runtime.PodSandboxStatus(ctx, sandbox.Id); err != nil {
			return syncResult{err: err}
		}
	}
	podIPs := sandboxIPs(pod, sandboxStatus, k.nodes.currentHostIPs())
	src := newObjectSource(ctx, k.client)
	volumes, err := k.volumes.setupVolumes(ctx, pod, src, k.envInputs(pod, podIPs))
	if err != nil {
		k.recorder.Event(pod, corev1.EventTypeWarning, "FailedMount", err.Error())
		if werr := k.writeStatus(ctx, pod, state, sandboxStatus, false); werr != nil {
			return syncResult{err: werr}
		}
		return syncResult{requeueAfter: 2 * time.Second}
	}
	if hasRefreshedVolumes(pod) {
		requeue(k.cfg.SyncFrequency)
	}
	start := func(c *corev1.Container, kind string) {
		if err := k.startContainer(ctx, pod, c, kind, sandbox.Id, sandboxConfig, podIPs, state, src, volumes); err != nil {
			if errors.Is(err, errBackingOff) {
				return
			}
			k.log.Warn("container start failed", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "err", err)
			_, period := k.backoff.inBackoff(backoffKey(pod.UID, "start", c.Name))
			requeue(max(period, time.Second))
		}
	}

	// A running container whose allocation changed is resized in place, or restarted where its
	// resize policy says so.
	restartForResize := func(c *corev1.Container, cur *runtimeapi.ContainerStatus) error {
		if err := k.stopContainer(ctx, pod, c, cur, podIPs, gracePeriod(pod)); err != nil {
			return fmt.Errorf("restart container %s for its resize: %w", c.Name, err)
		}
		kind := containerKindRegular
		if slices.ContainsFunc(pod.Spec.InitContainers, func(ic corev1.Container) bool { return ic.Name == c.Name }) {
			kind = containerKindInit
		}
		start(c, kind)
		// A restart asked for by a resize is no crash: it must not lengthen a later back-off.
		k.backoff.reset(backoffKey(pod.UID, kind, c.Name))
		return nil
	}
	changed, err := k.actuateResize(ctx, pod, state, sandbox.Id, restartForResize)
	if err != nil {
		k.log.Warn("pod resize not carried out", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		requeue(time.Second)
	}
	for _, step := range plan.steps {
		if err := k.runContainerStep(ctx, pod, step, podIPs, start); err != nil {
			return syncResult{err: err}
		}
	}
	if changed || plan.changesContainers() {
		// This sync created no sandbox after the one above: only the containers need a fresh
		// look.
		fresh, err := refreshContainers(ctx, k.runtime, pod.UID, state)
		if err != nil {
			return syncResult{err: err}
		}
		state = fresh
	}
	k.prober.syncPod(pod, state, podIPs)
	result.err = k.writeStatus(ctx, pod, state, sandboxStatus, false)
	if result.err == nil && k.terminalPhase(pod) {
		// A pod that finished (Never/OnFailure) keeps no sandbox.
		result.err = k.killPod(ctx, pod, state, gracePeriod(pod))
	}
	return result
}

// runContainerStep carries out one step of a pod's plan; start creates and starts a container.
func (k *Kubelet) runContainerStep(ctx context.Context, pod *corev1.Pod, step containerStep, podIPs []string, start func(*corev1.Container, string)) error {
	c := step.container
	key := backoffKey(pod.UID, step.kind, c.Name)
	switch step.op {
	case opStart:
		if step.resetBackoff {
			k.backoff.reset(key)
		}
		start(c, step.kind)
	case opStartCreated:
		if err := k.runtime.StartContainer(ctx, step.current.Id); err != nil {
			k.log.Warn("start created container", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "kind", step.kind, "err", err)
		}
	case opRestart:
		k.recorder.Eventf(pod, corev1.EventTypeNormal, "Killing", "Container %s definition changed, will be restarted", c.Name)
		if err := k.stopContainer(ctx, pod, c, step.current, podIPs, gracePeriod(pod)); err != nil {
			return err
		}
		start(c, step.kind)
	case opBackOff:
		message := fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", step.backoffPeriod, c.Name, podDescription(pod))
		if k.setWaiting(pod.UID, c.Name, reasonCrashLoopBackOff, message) {
			k.recorder.Eventf(pod, corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", c.Name, podDescription(pod))
		}
	case opResetBackoff:
		k.backoff.reset(key)
	}
	return nil
}

// terminalPhase reports whether the last written status of pod is final.
func (k *Kubelet) terminalPhase(pod *corev1.Pod) bool {
	current, _, _ := k.podByUID(pod.UID)
	if current == nil {
		return false
	}
	return current.Status.Phase == corev1.PodSucceeded || current.Status.Phase == corev1.PodFailed
}

func shouldRestart(policy corev1.RestartPolicy, exitCode int32) bool {
	switch policy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return exitCode != 0
	}
	return true
}

func podDescription(pod *corev1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// setWaiting records why a container is not running; it reports whether
// the reason changed.
func (k *Kubelet) setWaiting(uid types.UID, name, reason, message string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	m := k.waiting[uid]
	if m == nil {
		m = map[string]corev1.ContainerStateWaiting{}
		k.waiting[uid] = m
	}
	old, had := m[name]
	m[name] = corev1.ContainerStateWaiting{Reason: reason, Message: message}
	return !had || old.Reason != reason
}

func (k *Kubelet) clearWaiting(uid types.UID, name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.waiting[uid], name)
}

func (k *Kubelet) waitingFor(uid types.UID, name string) (corev1.ContainerStateWaiting, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	w, ok := k.waiting[uid][name]
	return w, ok
}

func sandboxIPs(pod *corev1.Pod, status *runtimeapi.PodSandboxStatus, hostIPs []corev1.HostIP) []string {
	if pod.Spec.HostNetwork {
		var out []string
		for _, ip := range hostIPs {
			out = append(out, ip.IP)
		}
		return out
	}
	network := status.GetNetwork()
	if network.GetIp() == "" {
		return nil
	}
	out := []string{network.GetIp()}
	for _, extra := range network.GetAdditionalIps() {
		out = append(out, extra.GetIp())
	}
	return out
}

// createSandbox stops what is left of earlier sandboxes and runs a new one.
// It returns the new sandbox, its status and the pod's runtime state with it.
func (k *Kubelet) createSandbox(ctx context.Context, pod *corev1.Pod, state *podRuntimeState) (*runtimeapi.PodSandbox, *runtimeapi.PodSandboxStatus, *podRuntimeState, error) {
	if err := k.killPod(ctx, nil, state, gracePeriod(pod)); err != nil {
		return nil, nil, state, err
	}
	var attempt uint32
	if len(state.sandboxes) > 0 {
		attempt = state.sandboxes[0].Metadata.GetAttempt() + 1
	}
	// Old sandboxes beyond the previous one only hold containers nobody
	// needs: the previous one keeps restart counts and --previous logs.
	for i, s := range state.sandboxes {
		if i >= 1 {
			if err := k.runtime.RemovePodSandbox(ctx, s.Id); err != nil && !cri.IsNotFound(err) {
				k.log.Warn("remove old sandbox", "id", s.Id, "err", err)
			}
		}
	}
	if err := os.MkdirAll(k.podLogDir(pod), 0o755); err != nil {
		return nil, nil, state, fmt.Errorf("pod log dir: %w", err)
	}
	config := k.sandboxConfig(pod, attempt)
	// The runtime writes resolv.conf when it creates the sandbox: warn about
	// its DNS settings then, not on every sync.
	_, dnsEvents := k.podDNS(pod)
	for _, e := range dnsEvents {
		k.recorder.Event(pod, corev1.EventTypeWarning, e.reason, e.message)
	}
	id, err := k.runSandbox(ctx, config)
	if err != nil {
		k.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
		return nil, nil, state, err
	}
	status, err := k.runtime.PodSandboxStatus(ctx, id)
	if err != nil {
		return nil, nil, state, err
	}
	if status.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, nil, state, fmt.Errorf("pod %s: sandbox not ready right after creation", podDescription(pod))
	}
	sandbox := sandboxOf(status, k.cfg.RuntimeHandler)
	if len(state.sandboxes) == 0 && len(state.containers) == 0 {
		// A new pod: the runtime has nothing of it but this sandbox, no
		// need to list.
		return sandbox, status, &podRuntimeState{sandboxes: []*runtimeapi.PodSandbox{sandbox}}, nil
	}
	fresh, err := runtimeState(ctx, k.runtime, pod.UID)
	if err != nil {
		return nil, nil, state, err
	}
	if ready := fresh.readySandbox(); ready == nil || ready.Id != id {
		return nil, nil, fresh, fmt.Errorf("pod %s: sandbox not ready right after creation", podDescription(pod))
	}
	return fresh.readySandbox(), status, fresh, nil
}

// runSandbox runs a sandbox once one of the Config.MaxParallelSandboxes
// slots is free.
func (k *Kubelet) runSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig) (string, error) {
	select {
	case k.sandboxSlots <- struct{}{}:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	defer func() { <-k.sandboxSlots }()
	return k.runtime.RunPodSandbox(ctx, config, k.cfg.RuntimeHandler)
}

// sandboxOf is the list entry of a sandbox, from its status.
func sandboxOf(s *runtimeapi.PodSandboxStatus, handler string) *runtimeapi.PodSandbox {
	return &runtimeapi.PodSandbox{
		Id: s.Id, Metadata: s.Metadata, State: s.State, CreatedAt: s.CreatedAt,
		Labels: s.Labels, Annotations: s.Annotations, RuntimeHandler: handler,
	}
}

// startContainer pulls the image if needed, then creates and starts one
// container; failures are recorded as the container's waiting reason.
func (k *Kubelet) startContainer(ctx context.Context, pod *corev1.Pod, c *corev1.Container, kind, sandboxID string,
	sandboxConfig *runtimeapi.PodSandboxConfig, podIPs []string, state *podRuntimeState, src *objectSource, volumes map[string]volume,
) error {
	startKey := backoffKey(pod.UID, "start", c.Name)
	if wait, _ := k.backoff.inBackoff(startKey); wait > 0 {
		return errBackingOff
	}
	prev := state.latest(c.Name, "")
	restarts := int32(0)
	if prev != nil {
		restarts = restartCount(prev) + 1
	}
	imageRef, err := k.ensureImage(ctx, pod, c, sandboxConfig, src)
	if err != nil {
		return err
	}
	var user imageUser
	if needsImageUser(pod, c) {
		if user, err = k.imageUserOf(ctx, imageRef); err != nil {
			return err
		}
	}
	config, err := k.containerConfig(pod, c, kind, restarts, imageRef, user, podIPs, src, volumes)
	if err == nil && kind == containerKindEphemeral {
		config.Linux.SecurityContext.NamespaceOptions, err = ephemeralNamespaces(pod, c.Name, state)
	}
	if err != nil {
		k.backoff.restarted(startKey)
		k.setWaiting(pod.UID, c.Name, reasonCreateConfigError, err.Error())
		k.recorder.Eventf(pod, corev1.EventTypeWarning, "Failed", "Error: %v", err)
		return err
	}
	id, err := k.runtime.CreateContainer(ctx, sandboxID, config, sandboxConfig)
	if err != nil {
		k.backoff.restarted(startKey)
		k.setWaiting(pod.UID, c.Name, reasonCreateContainerError, err.Error())
		k.recorder.Eventf(pod, corev1.EventTypeWarning, "Failed", "Error: %v", err)
		return err
	}
	k.recorder.Eventf(pod, corev1.EventTypeNormal, "Created", "Created container %s", c.Name)
	if err := k.runtime.StartContainer(ctx, id); err != nil {
		k.backoff.restarted(startKey)
		k.setWaiting(pod.UID, c.Name, reasonRunContainerError, err.Error())
		k.recorder.Eventf(pod, corev1.EventTypeWarning, "Failed", "Error: %v", err)
		return err
	}
	k.recorder.Eventf(pod, corev1.EventTypeNormal, "Started", "Started container %s", c.Name)
	if kind != containerKindEphemeral {
		if err := k.recordActuation(pod.UID, c.Name, id, c.Resources); err != nil {
			// The next sync updates the container to its allocation, which it has already.
			k.log.Warn("record container resources", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "err", err)
		}
	}
	if c.Lifecycle != nil && c.Lifecycle.PostStart != nil {
		// Like Kubernetes, the container counts as started only once its
		// postStart hook returned; a failing hook kills it.
		if err := k.runHook(ctx, c, id, c.Lifecycle.PostStart, podIPs, gracePeriod(pod)); err != nil {
			k.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedPostStartHook", "PostStartHook failed: %v", err)
			if stopErr := k.runtime.StopContainer(ctx, id, gracePeriod(pod)); stopErr != nil {
				k.log.Warn("stop container after failed postStart hook", "err", stopErr)
			}
		}
	}
	k.backoff.reset(startKey)
	if prev != nil {
		k.backoff.restarted(backoffKey(pod.UID, kind, c.Name))
	}
	k.clearWaiting(pod.UID, c.Name)
	// Keep one exited instance per container (for lastState and logs of the
	// previous run); remove older ones.
	seenPrevious := false
	for _, old := range state.containers {
		if old.Metadata.GetName() != c.Name || !exited(old) {
			continue
		}
		if !seenPrevious {
			seenPrevious = true
			continue
		}
		if err := k.runtime.RemoveContainer(ctx, old.Id); err != nil && !cri.IsNotFound(err) {
			k.log.Warn("remove old container", "id", old.Id, "err", err)
		}
	}
	return nil
}

// containerConfig builds the CRI config of one container run.
func (k *Kubelet) envInputs(pod *corev1.Pod, podIPs []string) envInputs {
	var hostIPs []string
	for _, ip := range k.nodes.currentHostIPs() {
		hostIPs = append(hostIPs, ip.IP)
	}
	return envInputs{pod: pod, podIPs: podIPs, hostIPs: hostIPs, allocatable: k.nodes.currentAllocatable(), services: servicesFor(k.services, pod.Namespace)}
}

func (k *Kubelet) containerConfig(pod *corev1.Pod, c *corev1.Container, kind string, restarts int32, imageRef string, user imageUser, podIPs []string, src *objectSource, volumes map[string]volume) (*runtimeapi.ContainerConfig, error) {
	env, err := resolveEnv(src, k.envInputs(pod, podIPs), c)
	if err != nil {
		return nil, err
	}
	values := map[string]string{}
	envs := make([]*runtimeapi.KeyValue, 0, len(env))
	for _, e := range env {
		values[e.Name] = e.Value
		envs = append(envs, &runtimeapi.KeyValue{Key: e.Name, Value: []byte(e.Value)})
	}
	lookup := func(name string) (string, bool) {
		v, ok := values[name]
		return v, ok
	}
	expand := func(in []string) []string {
		out := make([]string, 0, len(in))
		for _, s := range in {
			out = append(out, expandVars(s, lookup))
		}
		return out
	}
	security, err := securityContext(pod, c, user)
	if err != nil {
		return nil, err
	}
	labels := podLabels(pod)
	labels[labelContainerName] = c.Name
	terminationPath := c.TerminationMessagePath
	if terminationPath == "" {
		terminationPath = defaultTerminationMessagePath
	}
	hostTermination, err := k.terminationLogFile(pod, c.Name, restarts)
	if err != nil {
		return nil, err
	}
	mounts, err := containerMounts(c, volumes, lookup)
	if err != nil {
		return nil, err
	}
	devices, err := containerDevices(c, volumes)
	if err != nil {
		return nil, err
	}
	mounts = append(mounts, &runtimeapi.Mount{ContainerPath: terminationPath, HostPath: hostTermination})
	hosts, err := k.etcHostsMount(pod, c, podIPs)
	if err != nil {
		return nil, err
	}
	if hosts != nil {
		mounts = append(mounts, hosts)
	}
	config := &runtimeapi.ContainerConfig{
		Metadata:   &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(restarts)},
		Image:      &runtimeapi.ImageSpec{Image: imageRef, UserSpecifiedImage: c.Image},
		Command:    expand(c.Command),
		Args:       expand(c.Args),
		WorkingDir: c.WorkingDir,
		Envs:       envs,
		Mounts:     mounts,
		Devices:    devices,
		Labels:     labels,
		Annotations: map[string]string{
			annotationRestartCount:       strconv.Itoa(int(restarts)),
			annotationHash:               containerHash(c),
			annotationSpecHash:           containerSpecHash(c),
			annotationTerminationMessage: hostTermination,
			annotationContainerKind:      kind,
			annotationTerminationGrace:   strconv.Itoa(int(gracePeriod(pod) / time.Second)),
		},
		LogPath:   filepath.Join(c.Name, strconv.Itoa(int(restarts))+".log"),
		Stdin:     c.Stdin,
		StdinOnce: c.StdinOnce,
		Tty:       c.TTY,
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources:       linuxResources(pod, c, k.memoryCapacity),
			SecurityContext: security,
		},
	}
	return config, nil
}

// podDataDir holds a pod's kubelet-side files other than logs.
func (k *Kubelet) podDataDir(uid types.UID) string { return podDataDirIn(k.cfg.DataDir, uid) }

// podDataDirIn is podDataDir under the kubelet's data directory dataDir.
func podDataDirIn(dataDir string, uid types.UID) string {
	return filepath.Join(dataDir, "pod-data", string(uid))
}

func (k *Kubelet) terminationLogFile(pod *corev1.Pod, container string, restarts int32) (string, error) {
	dir := filepath.Join(k.podDataDir(pod.UID), "containers", container)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("termination log: %w", err)
	}
	path := filepath.Join(dir, fmt.Sprintf("termination-log-%d", restarts))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o666)
	if err != nil {
		return "", fmt.Errorf("termination log: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("termination log: %w", err)
	}
	// The umask took the group and world write bits: a container running as another user must
	// be able to write its message (upstream chmods the file to 0666 too).
	if err := os.Chmod(path, 0o666); err != nil {
		return "", fmt.Errorf("termination log: %w", err)
	}
	return path, nil
}

// killPod stops the pod's running containers in parallel, giving each the
// grace period, then stops its sandboxes. pod may be nil (no events then).
func (k *Kubelet) killPod(ctx context.Context, pod *corev1.Pod, state *podRuntimeState, grace time.Duration) error {
	var podIPs []string
	if pod != nil {
		podIPs = k.currentPodIPs(ctx, pod, state)
	}
	var all []error
	started := k.clock.Now()
	for i, wave := range stopWaves(pod, state.containers) {
		// Sidecars get what is left of the grace period once the containers
		// they serve stopped.
		waveGrace := grace
		if i > 0 {
			waveGrace = max(grace-k.clock.Since(started), minimumGracePeriod)
		}
		all = append(all, k.stopInParallel(ctx, pod, wave, podIPs, waveGrace)...)
	}
	for _, s := range state.sandboxes {
		if s.State != runtimeapi.PodSandboxState_SANDBOX_READY {
			continue
		}
		if err := k.runtime.StopPodSandbox(ctx, s.Id); err != nil && !cri.IsNotFound(err) {
			all = append(all, err)
		}
	}
	return errors.Join(all...)
}

// stopWaves orders the containers to stop as Kubernetes does: every running
// (or created) container but the sidecars at once, then the sidecars one by
// one in reverse order of the spec, so the containers that use them stop
// first. Without the pod's spec everything stops at once.
func stopWaves(pod *corev1.Pod, containers []*runtimeapi.ContainerStatus) [][]*runtimeapi.ContainerStatus {
	var first []*runtimeapi.ContainerStatus
	sidecars := map[string][]*runtimeapi.ContainerStatus{}
	for _, c := range containers {
		if !running(c) && c.State != runtimeapi.ContainerState_CONTAINER_CREATED {
			continue
		}
		if pod != nil {
			if spec := findContainer(pod, c.Metadata.GetName()); spec != nil && isSidecar(spec) {
				sidecars[spec.Name] = append(sidecars[spec.Name], c)
				continue
			}
		}
		first = append(first, c)
	}
	waves := [][]*runtimeapi.ContainerStatus{first}
	if pod != nil {
		for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
			if wave := sidecars[pod.Spec.InitContainers[i].Name]; len(wave) > 0 {
				waves = append(waves, wave)
			}
		}
	}
	return waves
}

// stopInParallel stops containers at once, each with its preStop hook and
// the grace period.
func (k *Kubelet) stopInParallel(ctx context.Context, pod *corev1.Pod, containers []*runtimeapi.ContainerStatus, podIPs []string, grace time.Duration) []error {
	var wg sync.WaitGroup
	errs := make(chan error, len(containers))
	for _, c := range containers {
		var spec *corev1.Container
		if pod != nil {
			k.recorder.Eventf(pod, corev1.EventTypeNormal, "Killing", "Stopping container %s", c.Metadata.GetName())
			spec = findContainer(pod, c.Metadata.GetName())
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := k.stopContainer(ctx, pod, spec, c, podIPs, grace); err != nil && !cri.IsNotFound(err) {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return all
}

// removePod removes the pod's sandboxes (and with them its containers) and
// its directories.
// Its containers are stopped already; its volumes go first, so that a
// sandbox removal that fails (the kubelet shutting down, the runtime gone)
// leaves no mounts behind.
func (k *Kubelet) removePod(ctx context.Context, pod *corev1.Pod, uid types.UID, state *podRuntimeState) error {
	// CSI volumes go through their drivers; until each is unpublished the pod stays (its
	// removal is retried), as Kubernetes keeps a pod whose volumes are still mounted.
	if err := k.volumes.teardownPod(ctx, string(uid)); err != nil {
		return err
	}
	_ = os.RemoveAll(k.podDataDir(uid))
	if pod != nil {
		_ = os.RemoveAll(k.podLogDir(pod))
	}
	for _, s := range state.sandboxes {
		if err := k.runtime.RemovePodSandbox(ctx, s.Id); err != nil && !cri.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// podKill is a deleted pod's kill running in the background: its containers stopping within
// the grace period, preStop hooks first. done is closed once it returned; err is then set.
type podKill struct {
	done chan struct{}
	err  error
}

// killProgress reads the progress of the pod's background kill.
func (k *Kubelet) killProgress(uid types.UID) killProgress {
	k.mu.Lock()
	kill := k.kills[uid]
	k.mu.Unlock()
	if kill == nil {
		return killProgress{}
	}
	select {
	case <-kill.done:
		return killProgress{started: true, done: true, err: kill.err}
	default:
		return killProgress{started: true}
	}
}

// startKill stops the pod's containers in a goroutine owned by the workers' group, which wakes
// the pod's worker once it returns.
func (k *Kubelet) startKill(ctx context.Context, pod *corev1.Pod, state *podRuntimeState) {
	kill := &podKill{done: make(chan struct{})}
	k.mu.Lock()
	k.kills[pod.UID] = kill
	k.workerWG.Add(1)
	k.mu.Unlock()
	go func() {
		defer k.workerWG.Done()
		kill.err = k.killPod(ctx, pod, state, gracePeriod(pod))
		close(kill.done)
		k.enqueue(pod.UID)
	}()
}

func (k *Kubelet) forgetKill(uid types.UID) {
	k.mu.Lock()
	delete(k.kills, uid)
	k.mu.Unlock()
}

// terminatePod runs a deleted pod's graceful termination as computeTermination decides: stop
// its containers within the grace period in the background while its status keeps being
// written (readiness probes go on: a container that stops serving, or stopped, is not ready),
// then write the final status, reclaim its sandbox and volumes, and delete the pod object for
// good (grace period 0, guarded by its UID). As in Kubernetes, the object goes only once
// nothing of the pod is left on the node, so a client that saw it go may stop the node at once.
func (k *Kubelet) terminatePod(ctx context.Context, pod *corev1.Pod, state *podRuntimeState) syncResult {
	switch computeTermination(k.killProgress(pod.UID)) {
	case terminationStartKill:
		k.startKill(ctx, pod, state)
		return k.reportTerminating(ctx, pod, state)
	case terminationReport:
		return k.reportTerminating(ctx, pod, state)
	case terminationRetry:
		err := k.killProgress(pod.UID).err
		k.forgetKill(pod.UID)
		return syncResult{err: err}
	}
	k.forgetKill(pod.UID)
	k.prober.removePod(pod.UID)
	fresh, err := runtimeState(ctx, k.runtime, pod.UID)
	if err != nil {
		return syncResult{err: err}
	}
	// An empty runtime state is a retry after the pod was reclaimed: its final
	// status is written already, and computing it again would lose it.
	if len(fresh.sandboxes) > 0 || len(fresh.containers) > 0 {
		if err := k.writeStatus(ctx, pod, fresh, nil, true); err != nil && !apierrors.IsNotFound(err) {
			return syncResult{err: err}
		}
	}
	if err := k.removePod(ctx, pod, pod.UID, fresh); err != nil {
		return syncResult{err: err}
	}
	err = k.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &pod.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return syncResult{err: fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err)}
	}
	// The object is gone: the sync its delete event brings finishes the
	// worker, and no late update may start the termination over.
	k.mu.Lock()
	if entry, ok := k.pods[pod.UID]; ok {
		entry.deleted = true
	}
	k.mu.Unlock()
	return syncResult{}
}

// reportTerminating writes a terminating pod's status as its containers are now: its probes
// are narrowed to readiness (probedKinds), a container that stopped is not ready.
func (k *Kubelet) reportTerminating(ctx context.Context, pod *corev1.Pod, state *podRuntimeState) syncResult {
	k.prober.syncPod(pod, state, k.currentPodIPs(ctx, pod, state))
	if err := k.writeStatus(ctx, pod, state, nil, false); err != nil && !apierrors.IsNotFound(err) {
		return syncResult{err: err}
	}
	return syncResult{}
}

// cleanupOrphans stops and removes runtime pods that no API pod accounts
// for: pods deleted while the kubelet was down, or left by a crash.
func (k *Kubelet) cleanupOrphans(ctx context.Context) {
	sandboxes, err := k.runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{labelManagedBy: managedByKubelet}})
	if err != nil {
		k.log.Error("list sandboxes for cleanup", "err", err)
		return
	}
	known := k.knownPodUIDs()
	k.mu.Lock()
	workers := map[types.UID]bool{}
	for uid := range k.workers {
		workers[uid] = true
	}
	k.mu.Unlock()
	orphans := map[types.UID]bool{}
	for _, s := range sandboxes {
		uid := types.UID(s.Labels[labelPodUID])
		if uid != "" && !known[uid] && !workers[uid] {
			orphans[uid] = true
		}
	}
	sandboxed := map[types.UID]bool{}
	for _, s := range sandboxes {
		sandboxed[types.UID(s.Labels[labelPodUID])] = true
	}
	k.volumes.cleanupOrphans(ctx, func(uid types.UID) bool { return known[uid] || workers[uid] || sandboxed[uid] })
	for uid := range orphans {
		k.log.Info("cleaning up pod unknown to the API", "uid", uid)
		k.mu.Lock()
		if _, ok := k.pods[uid]; !ok {
			k.pods[uid] = &podEntry{deleted: true}
		}
		k.mu.Unlock()
		k.enqueue(uid)
	}
}
