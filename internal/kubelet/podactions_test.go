package kubelet

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

func TestComputePodActions(t *testing.T) {
	const (
		sb         = "sb-1"
		resetAfter = 10 * time.Minute
	)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	app := corev1.Container{Name: "app", Image: testImage}
	web := corev1.Container{Name: "web", Image: testImage}
	init1 := corev1.Container{Name: "init1", Image: testImage}
	init2 := corev1.Container{Name: "init2", Image: testImage}
	sidecar := corev1.Container{Name: "sidecar", Image: testImage, RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}

	// instance is a container of the sandbox sb in state st that started ago before now and, if
	// exited, ran for ran with exit code.
	type instance struct {
		c       corev1.Container
		st      runtimeapi.ContainerState
		ago     time.Duration
		ran     time.Duration
		code    int32
		changed bool // its definition differs from the pod's
		sandbox string
	}
	build := func(insts []instance) *podRuntimeState {
		state := &podRuntimeState{}
		for i, in := range insts {
			c := in.c
			if in.changed {
				c.Image = "other:1"
			}
			sandbox := in.sandbox
			if sandbox == "" {
				sandbox = sb
			}
			cs := runtimeContainer(fmt.Sprintf("id-%d", i), in.c.Name, sandbox, in.st)
			cs.Annotations = map[string]string{annotationSpecHash: containerSpecHash(&c)}
			started := now.Add(-in.ago)
			cs.StartedAt = started.UnixNano()
			if in.st == runtimeapi.ContainerState_CONTAINER_EXITED {
				cs.FinishedAt = started.Add(in.ran).UnixNano()
				cs.ExitCode = in.code
			}
			state.containers = append(state.containers, cs)
		}
		return state
	}
	const (
		run  = runtimeapi.ContainerState_CONTAINER_RUNNING
		exit = runtimeapi.ContainerState_CONTAINER_EXITED
		made = runtimeapi.ContainerState_CONTAINER_CREATED
	)
	type step struct {
		op    containerOp
		name  string
		kind  string
		reset bool
	}
	tests := []struct {
		name      string
		init      []corev1.Container
		regular   []corev1.Container
		ephemeral []string
		policy    corev1.RestartPolicy
		sandboxID string
		have      []instance
		// backingOff maps a container name to its remaining back-off wait (period is twice it).
		backingOff map[string]time.Duration
		// startupPending names running containers whose startup probe has not passed.
		startupPending []string

		wantSandbox sandboxAction
		wantSteps   []step
		wantRequeue time.Duration
	}{
		{
			name: "a new pod gets a sandbox", regular: []corev1.Container{app},
			wantSandbox: sandboxCreate,
		},
		{
			name: "a dead sandbox under a Never pod whose containers ran ends the pod", regular: []corev1.Container{app},
			policy: corev1.RestartPolicyNever, have: []instance{{c: app, st: exit, code: 0}},
			wantSandbox: sandboxEndNever,
		},
		{
			name: "a dead sandbox under an Always pod is made again", regular: []corev1.Container{app},
			have:        []instance{{c: app, st: exit, code: 0}},
			wantSandbox: sandboxCreate,
		},
		{
			name: "a fresh sandbox starts the first init container only", sandboxID: sb,
			init: []corev1.Container{init1, init2}, regular: []corev1.Container{app},
			wantSteps:   []step{{op: opStart, name: "init1", kind: containerKindInit}},
			wantRequeue: initPollInterval,
		},
		{
			name: "the next init container once the first succeeded", sandboxID: sb,
			init: []corev1.Container{init1, init2}, regular: []corev1.Container{app},
			have:        []instance{{c: init1, st: exit, code: 0}},
			wantSteps:   []step{{op: opStart, name: "init2", kind: containerKindInit}},
			wantRequeue: initPollInterval,
		},
		{
			name: "a running init container is watched closely", sandboxID: sb,
			init: []corev1.Container{init1}, regular: []corev1.Container{app},
			have:        []instance{{c: init1, st: run, ago: time.Second}},
			wantRequeue: initPollInterval,
		},
		{
			name: "an init container that failed under Never fails the pod: nothing more starts", sandboxID: sb,
			init: []corev1.Container{init1}, regular: []corev1.Container{app}, policy: corev1.RestartPolicyNever,
			have: []instance{{c: init1, st: exit, code: 1}},
		},
		{
			name: "a failed init container waits out its back-off", sandboxID: sb,
			init: []corev1.Container{init1}, regular: []corev1.Container{app},
			have:        []instance{{c: init1, st: exit, code: 1, ran: time.Second}},
			backingOff:  map[string]time.Duration{"init1": 5 * time.Second},
			wantSteps:   []step{{op: opBackOff, name: "init1", kind: containerKindInit}},
			wantRequeue: 5 * time.Second,
		},
		{
			name: "a failed init container restarts once its back-off is over", sandboxID: sb,
			init: []corev1.Container{init1}, regular: []corev1.Container{app},
			have:      []instance{{c: init1, st: exit, code: 1, ran: time.Second}},
			wantSteps: []step{{op: opStart, name: "init1", kind: containerKindInit}},
		},
		{
			name: "an init container that ran long before it failed forgets its back-off", sandboxID: sb,
			init: []corev1.Container{init1}, regular: []corev1.Container{app},
			have:       []instance{{c: init1, st: exit, code: 1, ago: time.Hour, ran: 2 * resetAfter}},
			backingOff: map[string]time.Duration{"init1": 5 * time.Second},
			wantSteps:  []step{{op: opStart, name: "init1", kind: containerKindInit, reset: true}},
		},
		{
			name: "initialized: every regular container starts", sandboxID: sb,
			init: []corev1.Container{init1}, regular: []corev1.Container{app, web},
			have: []instance{{c: init1, st: exit, code: 0}},
			wantSteps: []step{
				{op: opStart, name: "app", kind: containerKindRegular},
				{op: opStart, name: "web", kind: containerKindRegular},
			},
		},
		{
			name: "an init container of an older sandbox does not count", sandboxID: sb,
			init: []corev1.Container{init1}, regular: []corev1.Container{app},
			have:        []instance{{c: init1, st: exit, code: 0, sandbox: "sb-0"}},
			wantSteps:   []step{{op: opStart, name: "init1", kind: containerKindInit}},
			wantRequeue: initPollInterval,
		},
		{
			name: "a running container whose definition changed is restarted", sandboxID: sb,
			regular:   []corev1.Container{app, web},
			have:      []instance{{c: app, st: run, ago: time.Minute, changed: true}, {c: web, st: run, ago: time.Minute}},
			wantSteps: []step{{op: opRestart, name: "app", kind: containerKindRegular}},
		},
		{
			name: "a container running after a crash is looked at again when its back-off can be forgotten", sandboxID: sb,
			regular:     []corev1.Container{app},
			have:        []instance{{c: app, st: run, ago: time.Minute}},
			backingOff:  map[string]time.Duration{"app": 0},
			wantRequeue: resetAfter - time.Minute,
		},
		{
			name: "a container that ran long enough forgets its back-off", sandboxID: sb,
			regular:   []corev1.Container{app},
			have:      []instance{{c: app, st: run, ago: 2 * resetAfter}},
			wantSteps: []step{{op: opResetBackoff, name: "app", kind: containerKindRegular}},
		},
		{
			name: "a container that succeeded under OnFailure stays down", sandboxID: sb,
			regular: []corev1.Container{app}, policy: corev1.RestartPolicyOnFailure,
			have: []instance{{c: app, st: exit, code: 0}},
		},
		{
			name: "a container that failed under OnFailure restarts", sandboxID: sb,
			regular: []corev1.Container{app}, policy: corev1.RestartPolicyOnFailure,
			have:      []instance{{c: app, st: exit, code: 2, ran: time.Second}},
			wantSteps: []step{{op: opStart, name: "app", kind: containerKindRegular}},
		},
		{
			name: "a container created but never started is started", sandboxID: sb,
			regular:   []corev1.Container{app},
			have:      []instance{{c: app, st: made}},
			wantSteps: []step{{op: opStartCreated, name: "app", kind: containerKindRegular}},
		},
		{
			name: "a sidecar starts before the regular containers", sandboxID: sb,
			init: []corev1.Container{sidecar}, regular: []corev1.Container{app},
			wantSteps:   []step{{op: opStart, name: "sidecar", kind: containerKindInit}},
			wantRequeue: initPollInterval,
		},
		{
			name: "a running sidecar holds the pod until its startup probe passes", sandboxID: sb,
			init: []corev1.Container{sidecar}, regular: []corev1.Container{app},
			have:           []instance{{c: sidecar, st: run, ago: time.Second}},
			startupPending: []string{"sidecar"},
			wantRequeue:    initPollInterval,
		},
		{
			name: "a started sidecar lets the regular containers start", sandboxID: sb,
			init: []corev1.Container{sidecar}, regular: []corev1.Container{app},
			have:      []instance{{c: sidecar, st: run, ago: time.Second}},
			wantSteps: []step{{op: opStart, name: "app", kind: containerKindRegular}},
		},
		{
			name: "a sidecar that exited after initialization restarts, whatever the pod's policy", sandboxID: sb,
			init: []corev1.Container{sidecar}, regular: []corev1.Container{app}, policy: corev1.RestartPolicyNever,
			have:      []instance{{c: sidecar, st: exit, code: 0, ran: time.Second}, {c: app, st: run, ago: time.Second}},
			wantSteps: []step{{op: opStart, name: "sidecar", kind: containerKindInit}},
		},
		{
			name: "an ephemeral container starts while the pod still initializes", sandboxID: sb,
			init: []corev1.Container{init1}, regular: []corev1.Container{app}, ephemeral: []string{"debugger"},
			have:        []instance{{c: init1, st: run, ago: time.Second}},
			wantSteps:   []step{{op: opStart, name: "debugger", kind: containerKindEphemeral}},
			wantRequeue: initPollInterval,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := makePod("p").obj()
			pod.Spec.InitContainers = tt.init
			pod.Spec.Containers = tt.regular
			for _, name := range tt.ephemeral {
				pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, ephemeralContainer(name, ""))
			}
			pod.Spec.RestartPolicy = tt.policy
			if pod.Spec.RestartPolicy == "" {
				pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
			}
			in := podActionInputs{
				sandboxID:           tt.sandboxID,
				now:                 now,
				crashLoopResetAfter: resetAfter,
				backoff: func(key string) (time.Duration, time.Duration) {
					for name, wait := range tt.backingOff {
						for _, kind := range []string{containerKindInit, containerKindRegular} {
							if key == backoffKey(pod.UID, kind, name) {
								return wait, 2*wait + time.Second
							}
						}
					}
					return 0, 0
				},
				startupDone: func(c *corev1.Container, _ string) bool { return !slices.Contains(tt.startupPending, c.Name) },
			}
			got := computePodActions(pod, build(tt.have), in)
			if got.sandbox != tt.wantSandbox {
				t.Errorf("sandbox action = %d, want %d", got.sandbox, tt.wantSandbox)
			}
			var steps []step
			for _, s := range got.steps {
				if s.reason == "" {
					t.Errorf("step %s of %s has no reason", s.op, s.container.Name)
				}
				steps = append(steps, step{op: s.op, name: s.container.Name, kind: s.kind, reset: s.resetBackoff})
			}
			if !slices.Equal(steps, tt.wantSteps) {
				t.Errorf("steps = %+v, want %+v", steps, tt.wantSteps)
			}
			if got.requeueAfter != tt.wantRequeue {
				t.Errorf("requeueAfter = %v, want %v", got.requeueAfter, tt.wantRequeue)
			}
		})
	}
}

func TestComputeTermination(t *testing.T) {
	failed := errors.New("stop container: deadline exceeded")
	for _, tt := range []struct {
		name string
		kill killProgress
		want terminationAction
	}{
		{"a pod just deleted starts its kill in the background", killProgress{}, terminationStartKill},
		{"while the kill runs the status is reported", killProgress{started: true}, terminationReport},
		{"a kill that failed is forgotten and tried again", killProgress{started: true, done: true, err: failed}, terminationRetry},
		{"a kill that ended finishes the pod", killProgress{started: true, done: true}, terminationFinish},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := computeTermination(tt.kill); got != tt.want {
				t.Errorf("computeTermination(%+v) = %s, want %s", tt.kill, got, tt.want)
			}
		})
	}
}

func TestWantedProbes(t *testing.T) {
	exec := func(cmd string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{cmd}}}}
	}
	probed := corev1.Container{Name: "app", Image: testImage, ReadinessProbe: exec("ready"), LivenessProbe: exec("live"), StartupProbe: exec("started")}
	sidecar := corev1.Container{Name: "proxy", Image: testImage, RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), ReadinessProbe: exec("ready"), LivenessProbe: exec("live")}
	const (
		run  = runtimeapi.ContainerState_CONTAINER_RUNNING
		exit = runtimeapi.ContainerState_CONTAINER_EXITED
	)
	for _, tt := range []struct {
		name     string
		deleted  bool
		appState runtimeapi.ContainerState
		want     []string
	}{
		{name: "a live pod's running containers get every probe they declare", appState: run,
			want: []string{"app/Liveness", "app/Readiness", "app/Startup", "proxy/Liveness", "proxy/Readiness"}},
		{name: "an exited container is not probed", appState: exit,
			want: []string{"proxy/Liveness", "proxy/Readiness"}},
		{name: "a terminating pod keeps its readiness probes only", deleted: true, appState: run,
			want: []string{"app/Readiness", "proxy/Readiness"}},
		{name: "a terminating pod's stopped container is not probed", deleted: true, appState: exit,
			want: []string{"proxy/Readiness"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pod := makePod("p").obj()
			pod.Spec.Containers = []corev1.Container{probed}
			pod.Spec.InitContainers = []corev1.Container{sidecar}
			if tt.deleted {
				now := metav1.Now()
				pod.DeletionTimestamp = &now
			}
			state := &podRuntimeState{containers: []*runtimeapi.ContainerStatus{
				runtimeContainer("id-app", "app", "sb", tt.appState),
				runtimeContainer("id-proxy", "proxy", "sb", run),
			}}
			var got []string
			for key, id := range wantedProbes(pod, state) {
				if id != "id-"+key.container {
					t.Errorf("probe %s/%s of instance %s, want id-%s", key.container, key.kind, id, key.container)
				}
				got = append(got, key.container+"/"+string(key.kind))
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("probes = %v, want %v", got, tt.want)
			}
		})
	}
}
