package kubelet

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// sandboxAction is what a sync does about a live pod's sandbox.
type sandboxAction int

const (
	// sandboxKeep: the pod has a ready sandbox; its containers are planned in it.
	sandboxKeep sandboxAction = iota
	// sandboxCreate: the pod has no ready sandbox and gets a new one (a first start, or a
	// sandbox that died under a pod that restarts).
	sandboxCreate
	// sandboxEndNever: the sandbox died after containers ran in it and the pod's restart
	// policy is Never: the pod is not started again and ends with what its containers reached.
	sandboxEndNever
)

// containerOp is one thing a sync does to one container.
type containerOp int

const (
	// opStart creates and starts a new container.
	opStart containerOp = iota
	// opStartCreated starts a container the runtime created but did not start (a sync that
	// ended between CreateContainer and StartContainer).
	opStartCreated
	// opRestart stops a running container whose definition changed and starts a new one.
	opRestart
	// opBackOff records that an exited container waits out its crash-loop back-off.
	opBackOff
	// opResetBackoff forgets a container's back-off: it has run long enough.
	opResetBackoff
)

func (o containerOp) String() string {
	switch o {
	case opStart:
		return "start"
	case opStartCreated:
		return "start-created"
	case opRestart:
		return "restart"
	case opBackOff:
		return "back-off"
	case opResetBackoff:
		return "reset-back-off"
	}
	return fmt.Sprintf("containerOp(%d)", int(o))
}

// containerStep is one step of a pod's plan, with the reason it is taken.
type containerStep struct {
	op        containerOp
	container *corev1.Container
	// kind is containerKindInit, containerKindRegular or containerKindEphemeral.
	kind string
	// current is the container's latest instance in the sandbox, nil if it has none.
	current *runtimeapi.ContainerStatus
	// resetBackoff (opStart) forgets the back-off before the start: the instance that
	// exited had run long enough.
	resetBackoff bool
	// backoffPeriod (opBackOff) is the current back-off delay, for the CrashLoopBackOff message.
	backoffPeriod time.Duration
	reason        string
}

// podActions is the plan of one sync of a live pod, as computePodActions decides it.
type podActions struct {
	sandbox sandboxAction
	// steps, in order. Empty unless sandbox is sandboxKeep.
	steps []containerStep
	// requeueAfter is when the pod must be looked at again whatever happens (0: no need).
	requeueAfter time.Duration
}

// changesContainers reports whether carrying out the plan creates, starts or stops a
// container, so the runtime's view of the pod must be read again.
func (a podActions) changesContainers() bool {
	return slices.ContainsFunc(a.steps, func(s containerStep) bool {
		return s.op == opStart || s.op == opStartCreated || s.op == opRestart
	})
}

// podActionInputs are what computePodActions reads beyond the pod and its runtime state.
type podActionInputs struct {
	// sandboxID is the pod's ready sandbox ("" if it has none).
	sandboxID string
	now       time.Time
	// crashLoopResetAfter is how long a container runs before its back-off is forgotten.
	crashLoopResetAfter time.Duration
	// backoff answers how long a restart under key must still wait, and the current delay.
	backoff func(key string) (wait, period time.Duration)
	// startupDone reports whether a running container passed its startup probe (true when it
	// has none).
	startupDone func(c *corev1.Container, containerID string) bool
}

// computePodActions decides what one sync does to a live (admitted, not deleted, not
// finished) pod: whether its sandbox is kept, made or the pod ends, then which containers are
// started, restarted or wait, in the order Kubernetes runs them: init containers one at a time
// (sidecars among them start and stay up), then the regular containers together, and
// ephemeral containers whenever they are asked for. It only reads: runPod carries the plan out.
func computePodActions(pod *corev1.Pod, state *podRuntimeState, in podActionInputs) podActions {
	if in.sandboxID == "" {
		if len(state.containers) > 0 && pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
			return podActions{sandbox: sandboxEndNever}
		}
		return podActions{sandbox: sandboxCreate}
	}
	p := &podPlanner{pod: pod, state: state, in: in, actions: podActions{sandbox: sandboxKeep}}
	if p.planInitContainers() {
		p.planExitedSidecars()
		p.planRegularContainers()
	}
	p.planEphemeralContainers()
	return p.actions
}

// podPlanner builds one podActions.
type podPlanner struct {
	pod     *corev1.Pod
	state   *podRuntimeState
	in      podActionInputs
	actions podActions
}

func (p *podPlanner) add(s containerStep) { p.actions.steps = append(p.actions.steps, s) }

func (p *podPlanner) requeue(d time.Duration) {
	if d > 0 && (p.actions.requeueAfter == 0 || d < p.actions.requeueAfter) {
		p.actions.requeueAfter = d
	}
}

// planInitContainers plans the first init container that is not done, and reports whether
// all are (the pod is initialized).
func (p *podPlanner) planInitContainers() bool {
	// Once a regular container was created in this sandbox, the pod is initialized: a sidecar
	// that exits later no longer holds it up.
	regularStarted := slices.ContainsFunc(p.pod.Spec.Containers, func(c corev1.Container) bool {
		return p.state.latest(c.Name, p.in.sandboxID) != nil
	})
	for i := range p.pod.Spec.InitContainers {
		c := &p.pod.Spec.InitContainers[i]
		cur := p.state.latest(c.Name, p.in.sandboxID)
		if isSidecar(c) {
			// A sidecar is done initializing once it runs and passed its startup probe; it is
			// restarted whenever it exits, whatever the pod's restart policy.
			if regularStarted || (running(cur) && p.in.startupDone(c, cur.Id)) {
				continue
			}
			p.planInitSidecar(c, cur)
			return false
		}
		if exited(cur) && cur.ExitCode == 0 {
			continue
		}
		p.planInit(c, cur)
		return false
	}
	return true
}

func (p *podPlanner) planInitSidecar(c *corev1.Container, cur *runtimeapi.ContainerStatus) {
	step := containerStep{container: c, kind: containerKindInit, current: cur}
	switch {
	case running(cur):
		p.requeue(initPollInterval)
	case created(cur):
		step.op, step.reason = opStartCreated, "created, not started"
		p.add(step)
	case exited(cur):
		if p.planCrashLoop(step, "sidecar exited") {
			p.requeue(initPollInterval)
		}
	default:
		step.op, step.reason = opStart, "sidecar not started"
		p.add(step)
		p.requeue(initPollInterval)
	}
}

func (p *podPlanner) planInit(c *corev1.Container, cur *runtimeapi.ContainerStatus) {
	step := containerStep{container: c, kind: containerKindInit, current: cur}
	switch {
	case running(cur):
		// Init containers are usually short: look again soon rather than wait for the next
		// relist.
		p.requeue(initPollInterval)
	case created(cur):
		step.op, step.reason = opStartCreated, "created, not started"
		p.add(step)
	case exited(cur) && p.pod.Spec.RestartPolicy == corev1.RestartPolicyNever:
		// The pod failed; its status says so.
	case exited(cur):
		p.planCrashLoop(step, "init container failed")
	default:
		step.op, step.reason = opStart, "next init container"
		p.add(step)
		p.requeue(initPollInterval)
	}
}

// planExitedSidecars restarts the sidecars that exited after the pod was initialized.
func (p *podPlanner) planExitedSidecars() {
	for i := range p.pod.Spec.InitContainers {
		c := &p.pod.Spec.InitContainers[i]
		if cur := p.state.latest(c.Name, p.in.sandboxID); isSidecar(c) && exited(cur) {
			p.planCrashLoop(containerStep{container: c, kind: containerKindInit, current: cur}, "sidecar exited")
		}
	}
}

func (p *podPlanner) planRegularContainers() {
	for i := range p.pod.Spec.Containers {
		c := &p.pod.Spec.Containers[i]
		cur := p.state.latest(c.Name, p.in.sandboxID)
		step := containerStep{container: c, kind: containerKindRegular, current: cur}
		switch {
		case cur == nil:
			step.op, step.reason = opStart, "not started in this sandbox"
			p.add(step)
		case running(cur):
			p.planRunning(step)
		case created(cur):
			step.op, step.reason = opStartCreated, "created, not started"
			p.add(step)
		case exited(cur):
			if shouldRestart(p.pod.Spec.RestartPolicy, cur.ExitCode) {
				p.planCrashLoop(step, fmt.Sprintf("exited with code %d under restartPolicy %s", cur.ExitCode, p.pod.Spec.RestartPolicy))
			}
		}
	}
}

// planRunning decides about a running regular container: replaced when its definition
// changed, its back-off forgotten once it ran long enough.
func (p *podPlanner) planRunning(step containerStep) {
	cur := step.current
	if definitionChanged(cur, step.container) {
		step.op, step.reason = opRestart, "definition changed"
		p.add(step)
		return
	}
	ran := p.in.now.Sub(time.Unix(0, cur.StartedAt))
	if ran >= p.in.crashLoopResetAfter {
		step.op, step.reason = opResetBackoff, "ran long enough"
		p.add(step)
		return
	}
	if _, period := p.in.backoff(backoffKey(p.pod.UID, step.kind, step.container.Name)); period > 0 {
		// Look again once it has run long enough to forget its back-off.
		p.requeue(p.in.crashLoopResetAfter - ran)
	}
}

// planCrashLoop plans the restart of an exited container, or its wait while its back-off
// lasts; it reports whether the container is started.
func (p *podPlanner) planCrashLoop(step containerStep, reason string) bool {
	cur := step.current
	// An instance that ran long enough before it exited starts a new back-off.
	step.resetBackoff = cur.StartedAt > 0 && time.Duration(cur.FinishedAt-cur.StartedAt) >= p.in.crashLoopResetAfter
	if !step.resetBackoff {
		if wait, period := p.in.backoff(backoffKey(p.pod.UID, step.kind, step.container.Name)); wait > 0 {
			step.op, step.backoffPeriod, step.reason = opBackOff, period, reason+", backing off"
			p.add(step)
			p.requeue(wait)
			return false
		}
	}
	step.op, step.reason = opStart, reason
	p.add(step)
	return true
}

// planEphemeralContainers starts each ephemeral container (kubectl debug) once, whether or not
// the pod finished initializing; they are never restarted.
func (p *podPlanner) planEphemeralContainers() {
	for _, e := range planEphemeral(p.pod, p.state, p.in.sandboxID) {
		step := containerStep{op: opStart, container: e.container, kind: containerKindEphemeral, reason: "ephemeral container asked for"}
		if e.createdID != "" {
			step.op, step.reason = opStartCreated, "created, not started"
			step.current = &runtimeapi.ContainerStatus{Id: e.createdID}
		}
		p.add(step)
	}
}

func created(c *runtimeapi.ContainerStatus) bool {
	return c != nil && c.State == runtimeapi.ContainerState_CONTAINER_CREATED
}

// terminationAction is what one sync of a deleted pod (deletionTimestamp set, the object still
// there) does.
type terminationAction int

const (
	// terminationStartKill: no kill of the pod runs: start one in the background (preStop hooks,
	// then the containers stop within the grace period) and report the pod's status meanwhile.
	terminationStartKill terminationAction = iota
	// terminationReport: the kill is under way: keep the readiness probes running and report the
	// containers as they are, so a pod whose readiness probe fails, or whose containers stopped,
	// reads not ready while it terminates (its endpoints then turn serving: false).
	terminationReport
	// terminationRetry: the kill failed: forget it, so the next sync (after the error back-off)
	// starts another.
	terminationRetry
	// terminationFinish: every container stopped: write the final status, reclaim the sandbox and
	// the volumes, delete the object.
	terminationFinish
)

func (a terminationAction) String() string {
	switch a {
	case terminationStartKill:
		return "start-kill"
	case terminationReport:
		return "report"
	case terminationRetry:
		return "retry"
	case terminationFinish:
		return "finish"
	}
	return fmt.Sprintf("terminationAction(%d)", int(a))
}

// killProgress is what a sync knows of a pod's background kill.
type killProgress struct {
	started, done bool
	err           error
}

// computeTermination decides what one sync of a deleted pod does from the progress of its kill.
// As Kubernetes' kubelet does, the pod's status keeps being written while its containers
// terminate (the kill only blocks its own goroutine, never the pod's worker).
func computeTermination(kill killProgress) terminationAction {
	switch {
	case !kill.started:
		return terminationStartKill
	case !kill.done:
		return terminationReport
	case kill.err != nil:
		return terminationRetry
	}
	return terminationFinish
}

// probedKinds are the probes that run for a container of a pod; while the pod terminates only
// readiness does: upstream's prober stops liveness and startup probes at deletion (a container
// must not be restarted while it shuts down) and keeps probing readiness, so a terminating pod
// reports when it stops serving.
func probedKinds(terminating bool) []probeKind {
	if terminating {
		return []probeKind{readinessProbe}
	}
	return []probeKind{startupProbe, livenessProbe, readinessProbe}
}
