package kubelet

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

func envMap(cfg *runtimeapi.ContainerConfig) map[string]string {
	out := map[string]string{}
	for _, kv := range cfg.Envs {
		out[kv.Key] = string(kv.Value)
	}
	return out
}

func TestPodRunsWithEnvCommandResourcesAndStatus(t *testing.T) {
	// Cluster DNS is used once a Service answers on its address.
	dnsService := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: "kube-system"}, Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10"}}}
	h := newHarnessWithObjects(t, func(c *Config) { c.ClusterDNS = []string{"10.96.0.10"} }, dnsService)
	ctx := context.Background()
	if _, err := h.client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "default"},
		Data:       map[string]string{"greeting": "hello", "mode": "fast", "dashed-key": "x"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "default"},
		Data:       map[string][]byte{"password": []byte("s3cret"), "user": []byte("admin"), "1st": []byte("no")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := makePod("web").container(corev1.Container{
		Name:       "app",
		Command:    []string{"/bin/sh", "-c"},
		Args:       []string{"echo $(GREETING) $(UNDEFINED) $$(GREETING)"},
		WorkingDir: "/srv",
		Ports:      []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 30080, Protocol: corev1.ProtocolTCP}, {ContainerPort: 9090}},
		EnvFrom: []corev1.EnvFromSource{
			{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}},
		},
		Env: []corev1.EnvVar{
			{Name: "GREETING", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "greeting"}}},
			{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "password"}}},
			{Name: "MESSAGE", Value: "$(GREETING) world"},
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "HOST_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
			{Name: "APP_LABEL", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
			{Name: "MEM_LIMIT_MI", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: quantity("1Mi")}}},
			{Name: "CPU_REQUEST_M", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.cpu", Divisor: quantity("1m")}}},
			{Name: "OPTIONAL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Key: "k", Optional: ptr.To(true)}}},
		},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: quantity("250m"), corev1.ResourceMemory: quantity("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: quantity("500m"), corev1.ResourceMemory: quantity("128Mi")},
		},
		SecurityContext: &corev1.SecurityContext{
			RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](3000), ReadOnlyRootFilesystem: ptr.To(true),
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}, Drop: []corev1.Capability{"ALL"}},
		},
	}).obj()
	h.create(pod)
	got := h.waitPod("default", "web", "pod running", podRunning)

	// Status as Kubernetes writes it.
	if got.Status.PodIP == "" || len(got.Status.PodIPs) != 1 || got.Status.PodIPs[0].IP != got.Status.PodIP {
		t.Errorf("pod IPs = %q %v", got.Status.PodIP, got.Status.PodIPs)
	}
	if got.Status.HostIP != "192.0.2.10" || len(got.Status.HostIPs) != 1 {
		t.Errorf("host IPs = %q %v", got.Status.HostIP, got.Status.HostIPs)
	}
	if got.Status.StartTime == nil || !got.Status.StartTime.Time.Equal(h.clock.Now()) || got.Status.QOSClass != corev1.PodQOSBurstable {
		t.Errorf("startTime %v qos %s", got.Status.StartTime, got.Status.QOSClass)
	}
	for _, typ := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
		if c := conditionOf(got, typ); c == nil || c.Status != corev1.ConditionTrue {
			t.Errorf("condition %s = %+v", typ, c)
		}
	}
	cs := statusOf(got, "app")
	containerID := h.runtime.RunningContainer("uid-web", "app")
	if cs == nil || cs.State.Running == nil || !cs.Ready || cs.Started == nil || !*cs.Started || cs.RestartCount != 0 ||
		cs.ContainerID != "fakecri://"+containerID || cs.Image != testImage || !strings.HasPrefix(cs.ImageID, "sha256:") {
		t.Errorf("container status = %+v", cs)
	}

	// What the runtime was asked to run.
	cfg := h.runtime.ContainerConfig(containerID)
	env := envMap(cfg)
	wantEnv := map[string]string{
		"CFG_greeting": "hello", "CFG_mode": "fast", "CFG_dashed-key": "x", "1st": "", "password": "s3cret", "user": "admin",
		"GREETING": "hello", "PASSWORD": "s3cret", "MESSAGE": "hello world", "POD_NAME": "web", "POD_IP": got.Status.PodIP,
		"HOST_IP": "192.0.2.10", "APP_LABEL": "web", "MEM_LIMIT_MI": "128", "CPU_REQUEST_M": "250",
	}
	for k, v := range wantEnv {
		if k == "1st" {
			if _, ok := env[k]; ok {
				t.Errorf("env has invalid name %s from envFrom", k)
			}
			continue
		}
		if env[k] != v {
			t.Errorf("env %s = %q, want %q", k, env[k], v)
		}
	}
	if _, ok := env["OPTIONAL"]; ok {
		t.Error("optional env from an absent ConfigMap was set")
	}
	if !slices.Equal(cfg.Command, []string{"/bin/sh", "-c"}) || !slices.Equal(cfg.Args, []string{"echo hello $(UNDEFINED) $(GREETING)"}) {
		t.Errorf("command %q args %q", cfg.Command, cfg.Args)
	}
	if cfg.WorkingDir != "/srv" || cfg.LogPath != "app/0.log" || cfg.Metadata.Attempt != 0 {
		t.Errorf("workingDir %q logPath %q attempt %d", cfg.WorkingDir, cfg.LogPath, cfg.Metadata.Attempt)
	}
	res := cfg.Linux.Resources
	if res.CpuShares != 256 || res.CpuQuota != 50000 || res.CpuPeriod != 100000 || res.MemoryLimitInBytes != 128<<20 {
		t.Errorf("resources = %+v", res)
	}
	sc := cfg.Linux.SecurityContext
	if sc.RunAsUser.GetValue() != 1000 || sc.RunAsGroup.GetValue() != 3000 || !sc.ReadonlyRootfs || !sc.NoNewPrivs ||
		!slices.Equal(sc.Capabilities.AddCapabilities, []string{"NET_ADMIN"}) || !slices.Equal(sc.Capabilities.DropCapabilities, []string{"ALL"}) ||
		sc.NamespaceOptions.Pid != runtimeapi.NamespaceMode_CONTAINER || len(sc.MaskedPaths) == 0 {
		t.Errorf("security context = %+v", sc)
	}
	if cfg.Labels["io.kubernetes.pod.uid"] != "uid-web" || cfg.Labels["io.kubernetes.container.name"] != "app" {
		t.Errorf("labels = %v", cfg.Labels)
	}

	sandboxes := h.runtime.CallsTo("RunPodSandbox")
	if !slices.Equal(sandboxes, []string{"default/web"}) {
		t.Errorf("RunPodSandbox calls = %v", sandboxes)
	}
	sandboxID := strings.TrimPrefix(cs.ContainerID, "fakecri://")
	_ = sandboxID
	var sandboxCfg *runtimeapi.PodSandboxConfig
	for i := 1; i < 10 && sandboxCfg == nil; i++ {
		sandboxCfg = h.runtime.SandboxConfig("sandbox000" + string(rune('0'+i)))
	}
	if sandboxCfg == nil {
		t.Fatal("no sandbox config")
	}
	if len(sandboxCfg.PortMappings) != 1 || sandboxCfg.PortMappings[0].HostPort != 30080 || sandboxCfg.PortMappings[0].ContainerPort != 8080 {
		t.Errorf("port mappings = %v", sandboxCfg.PortMappings)
	}
	if sandboxCfg.Hostname != "web" || sandboxCfg.Metadata.Uid != "uid-web" || sandboxCfg.LogDirectory == "" {
		t.Errorf("sandbox = %+v", sandboxCfg)
	}
	if dns := sandboxCfg.DnsConfig; dns == nil || !slices.Equal(dns.Servers, []string{"10.96.0.10"}) ||
		!slices.Equal(dns.Searches[:3], []string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local"}) || !slices.Equal(dns.Options, []string{"ndots:5"}) {
		t.Errorf("dns = %+v", sandboxCfg.DnsConfig)
	}

	// The status went through pods/status as a strategic merge patch
	// carrying the UID precondition.
	var patches []k8stesting.PatchAction
	for _, a := range h.client.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok && a.GetResource().Resource == "pods" {
			patches = append(patches, p)
		}
	}
	if len(patches) == 0 {
		t.Fatal("no pod status patch")
	}
	for _, p := range patches {
		if p.GetSubresource() != "status" || p.GetPatchType() != types.StrategicMergePatchType {
			t.Errorf("patch %s/%s type %s", p.GetResource().Resource, p.GetSubresource(), p.GetPatchType())
		}
		var body struct {
			Metadata struct {
				UID string `json:"uid"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(p.GetPatch(), &body); err != nil || body.Metadata.UID != "uid-web" {
			t.Errorf("patch %s lacks the uid precondition", p.GetPatch())
		}
	}
	for _, want := range []string{
		`Normal Pulled Container image "localhost/busybox:local" already present on machine`,
		"Normal Created Created container app", "Normal Started Started container app",
	} {
		if !h.hasEvent(want) {
			t.Errorf("no event %q in %v", want, h.drainEvents())
		}
	}
}

func TestPodOnOtherNodeIsIgnored(t *testing.T) {
	h := newHarness(t, nil)
	h.create(makePod("elsewhere").node("node-b").obj())
	h.create(makePod("here").obj())
	h.waitPod("default", "here", "running", podRunning)
	if got := h.runtime.CallsTo("RunPodSandbox"); !slices.Equal(got, []string{"default/here"}) {
		t.Errorf("sandboxes = %v", got)
	}
}

func TestInitContainersRunInOrder(t *testing.T) {
	h := newHarness(t, nil)
	h.create(makePod("ordered").init("first", "second").obj())
	pod := h.waitPod("default", "ordered", "first init running", func(p *corev1.Pod) bool {
		s := statusOf(p, "first")
		return s != nil && s.State.Running != nil
	})
	if pod.Status.Phase != corev1.PodPending {
		t.Errorf("phase = %s while initializing", pod.Status.Phase)
	}
	if c := conditionOf(pod, corev1.PodInitialized); c.Status != corev1.ConditionFalse || c.Reason != "ContainersNotInitialized" ||
		c.Message != "containers with incomplete status: [first second]" {
		t.Errorf("Initialized = %+v", c)
	}
	if s := statusOf(pod, "app"); s.State.Waiting == nil || s.State.Waiting.Reason != "PodInitializing" {
		t.Errorf("app status while initializing = %+v", s.State)
	}
	if err := h.runtime.Exit(h.runtime.RunningContainer("uid-ordered", "first"), 0); err != nil {
		t.Fatal(err)
	}
	h.step(time.Second)
	h.waitPod("default", "ordered", "second init running", func(p *corev1.Pod) bool {
		s := statusOf(p, "second")
		return s != nil && s.State.Running != nil
	})
	if err := h.runtime.Exit(h.runtime.RunningContainer("uid-ordered", "second"), 0); err != nil {
		t.Fatal(err)
	}
	h.step(time.Second)
	pod = h.waitPod("default", "ordered", "running", podRunning)
	if got := h.runtime.CallsTo("CreateContainer"); !slices.Equal(got, []string{"first", "second", "app"}) {
		t.Errorf("creation order = %v", got)
	}
	if c := conditionOf(pod, corev1.PodInitialized); c.Status != corev1.ConditionTrue {
		t.Errorf("Initialized = %+v", c)
	}
	// Like Kubernetes, a completed init container is reported ready (and no
	// longer started).
	for _, name := range []string{"first", "second"} {
		if s := statusOf(pod, name); s.State.Terminated == nil || s.State.Terminated.Reason != "Completed" || !s.Ready || s.Started == nil || *s.Started {
			t.Errorf("%s init status = %+v", name, s)
		}
	}
}

func TestSidecarInitContainer(t *testing.T) {
	h := newHarness(t, nil)
	always := corev1.ContainerRestartPolicyAlways
	pod := makePod("sidecar").init("setup").obj()
	pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: "proxy", Image: testImage, ImagePullPolicy: corev1.PullIfNotPresent, RestartPolicy: &always})
	h.create(pod)
	h.eventually("setup running", func() bool { return h.runtime.RunningContainer("uid-sidecar", "setup") != "" })
	if err := h.runtime.Exit(h.runtime.RunningContainer("uid-sidecar", "setup"), 0); err != nil {
		t.Fatal(err)
	}
	h.step(time.Second)
	pod = h.waitPod("default", "sidecar", "running with its sidecar", func(p *corev1.Pod) bool {
		s := statusOf(p, "proxy")
		return podRunning(p) && s != nil && s.State.Running != nil && s.Ready
	})
	if s := statusOf(pod, "proxy"); s.Started == nil || !*s.Started {
		t.Errorf("sidecar status = %+v", s)
	}
	if s := statusOf(pod, "setup"); !s.Ready {
		t.Errorf("completed init container not ready: %+v", s)
	}
	if c := conditionOf(pod, corev1.PodInitialized); c.Status != corev1.ConditionTrue {
		t.Errorf("Initialized = %+v", c)
	}
	if got := h.runtime.CallsTo("CreateContainer"); !slices.Equal(got, []string{"setup", "proxy", "app"}) {
		t.Errorf("creation order = %v", got)
	}
	// A sidecar that exits is restarted; the pod stays initialized and
	// running, the app untouched.
	if err := h.runtime.Exit(h.runtime.RunningContainer("uid-sidecar", "proxy"), 1); err != nil {
		t.Fatal(err)
	}
	pod = h.waitPodStepping("default", "sidecar", "sidecar restarted", func(p *corev1.Pod) bool {
		s := statusOf(p, "proxy")
		return s != nil && s.RestartCount == 1 && s.State.Running != nil
	})
	if !podRunning(pod) {
		t.Errorf("phase = %s after sidecar restart", pod.Status.Phase)
	}
	if got := h.runtime.CallsTo("CreateContainer"); !slices.Equal(got, []string{"setup", "proxy", "app", "proxy"}) {
		t.Errorf("creation order = %v", got)
	}
}

func TestFailingInitContainerFailsNeverPod(t *testing.T) {
	h := newHarness(t, nil)
	h.create(makePod("broken").init("setup").restartPolicy(corev1.RestartPolicyNever).obj())
	h.eventually("init running", func() bool { return h.runtime.RunningContainer("uid-broken", "setup") != "" })
	if err := h.runtime.Exit(h.runtime.RunningContainer("uid-broken", "setup"), 2); err != nil {
		t.Fatal(err)
	}
	h.step(time.Second)
	pod := h.waitPod("default", "broken", "failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if slices.Contains(h.runtime.CallsTo("CreateContainer"), "app") {
		t.Error("app container created although init failed")
	}
	if s := statusOf(pod, "setup"); s.State.Terminated == nil || s.State.Terminated.ExitCode != 2 || s.State.Terminated.Reason != "Error" {
		t.Errorf("setup status = %+v", s)
	}
	h.eventually("sandbox stopped", func() bool { _, ready := h.runtime.SandboxCount(); return ready == 0 })
}

func TestCrashLoopBackOff(t *testing.T) {
	h := newHarness(t, nil)
	h.create(makePod("crashy").obj())
	h.waitPod("default", "crashy", "running", podRunning)

	// First exit: restarted at once.
	first := h.runtime.RunningContainer("uid-crashy", "app")
	if err := h.runtime.Exit(first, 1); err != nil {
		t.Fatal(err)
	}
	h.step(time.Second)
	pod := h.waitPod("default", "crashy", "first restart", func(p *corev1.Pod) bool {
		s := statusOf(p, "app")
		return s.RestartCount == 1 && s.State.Running != nil
	})
	if s := statusOf(pod, "app"); s.LastTerminationState.Terminated == nil || s.LastTerminationState.Terminated.ExitCode != 1 {
		t.Errorf("lastState after first restart = %+v", s.LastTerminationState)
	}

	// Second exit: back-off of 10 s.
	second := h.runtime.RunningContainer("uid-crashy", "app")
	if err := h.runtime.Exit(second, 1); err != nil {
		t.Fatal(err)
	}
	h.step(time.Second)
	pod = h.waitPod("default", "crashy", "CrashLoopBackOff", func(p *corev1.Pod) bool {
		s := statusOf(p, "app")
		return s.State.Waiting != nil && s.State.Waiting.Reason == "CrashLoopBackOff"
	})
	s := statusOf(pod, "app")
	if want := "back-off 10s restarting failed container=app pod=crashy_default(uid-crashy)"; s.State.Waiting.Message != want {
		t.Errorf("waiting message = %q, want %q", s.State.Waiting.Message, want)
	}
	if s.RestartCount != 1 || s.Ready || s.LastTerminationState.Terminated == nil || s.LastTerminationState.Terminated.ExitCode != 1 {
		t.Errorf("status in back-off = %+v", s)
	}
	if pod.Status.Phase != corev1.PodRunning || conditionOf(pod, corev1.PodReady).Status != corev1.ConditionFalse {
		t.Errorf("phase %s ready %+v", pod.Status.Phase, conditionOf(pod, corev1.PodReady))
	}
	if !h.hasEvent("Warning BackOff Back-off restarting failed container app in pod crashy_default(uid-crashy)") {
		t.Errorf("no BackOff event in %v", h.drainEvents())
	}
	if n := len(h.runtime.CallsTo("StartContainer")); n != 2 {
		t.Errorf("started %d times before the back-off expired, want 2", n)
	}
	// The back-off expires 10 s after the first restart.
	h.step(9 * time.Second)
	h.waitPod("default", "crashy", "second restart", func(p *corev1.Pod) bool {
		s := statusOf(p, "app")
		return s.RestartCount == 2 && s.State.Running != nil
	})
	// Only the previous instance is kept.
	if err := h.runtime.Exit(h.runtime.RunningContainer("uid-crashy", "app"), 1); err != nil {
		t.Fatal(err)
	}
	h.step(time.Second)
	h.waitPod("default", "crashy", "back-off 20s", func(p *corev1.Pod) bool {
		s := statusOf(p, "app")
		return s.State.Waiting != nil && strings.HasPrefix(s.State.Waiting.Message, "back-off 20s")
	})
}

func TestRestartPolicies(t *testing.T) {
	tests := []struct {
		policy      corev1.RestartPolicy
		exitCode    int32
		wantPhase   corev1.PodPhase
		wantRestart bool
	}{
		{corev1.RestartPolicyNever, 0, corev1.PodSucceeded, false},
		{corev1.RestartPolicyNever, 1, corev1.PodFailed, false},
		{corev1.RestartPolicyOnFailure, 0, corev1.PodSucceeded, false},
		{corev1.RestartPolicyOnFailure, 3, corev1.PodRunning, true},
		{corev1.RestartPolicyAlways, 0, corev1.PodRunning, true},
	}
	for _, tc := range tests {
		t.Run(string(tc.policy)+"/"+string(rune('0'+tc.exitCode)), func(t *testing.T) {
			h := newHarness(t, nil)
			h.create(makePod("job").restartPolicy(tc.policy).obj())
			h.waitPod("default", "job", "running", podRunning)
			if err := h.runtime.Exit(h.runtime.RunningContainer("uid-job", "app"), tc.exitCode); err != nil {
				t.Fatal(err)
			}
			h.step(time.Second)
			if tc.wantRestart {
				// The restart may land in a back-off period first (rarely, when the exit is seen by two
				// syncs).
				pod := h.waitPodStepping("default", "job", "restart", func(p *corev1.Pod) bool { return statusOf(p, "app").RestartCount == 1 })
				if pod.Status.Phase != tc.wantPhase {
					t.Errorf("phase = %s, want %s", pod.Status.Phase, tc.wantPhase)
				}
				return
			}
			pod := h.waitPod("default", "job", string(tc.wantPhase), func(p *corev1.Pod) bool { return p.Status.Phase == tc.wantPhase })
			s := statusOf(pod, "app")
			if s.State.Terminated == nil || s.State.Terminated.ExitCode != tc.exitCode || s.RestartCount != 0 {
				t.Errorf("status = %+v", s)
			}
			if c := conditionOf(pod, corev1.PodReady); c.Status != corev1.ConditionFalse || c.Reason != "PodCompleted" {
				t.Errorf("Ready = %+v", c)
			}
			h.eventually("sandbox stopped", func() bool { _, ready := h.runtime.SandboxCount(); return ready == 0 })
			if n := len(h.runtime.CallsTo("StartContainer")); n != 1 {
				t.Errorf("started %d times", n)
			}
		})
	}
}

func TestGracefulDeletion(t *testing.T) {
	h := newHarness(t, nil)
	h.create(makePod("doomed").obj())
	pod := h.waitPod("default", "doomed", "running", podRunning)
	containerID := h.runtime.RunningContainer("uid-doomed", "app")

	now := metav1.NewTime(h.clock.Now())
	pod.DeletionTimestamp = &now
	pod.DeletionGracePeriodSeconds = ptr.To[int64](7)
	if _, err := h.client.CoreV1().Pods("default").Update(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("pod deleted by the kubelet", func() bool { return h.pod("default", "doomed") == nil })
	if got := h.runtime.StopTimeout(containerID); got != 7*time.Second {
		t.Errorf("container stopped with timeout %v, want the 7s grace period", got)
	}
	h.eventually("sandbox removed", func() bool { all, _ := h.runtime.SandboxCount(); return all == 0 })
	if !h.hasEvent("Normal Killing Stopping container app") {
		t.Errorf("no Killing event in %v", h.drainEvents())
	}
	var deletes []k8stesting.DeleteActionImpl
	for _, a := range h.client.Actions() {
		if d, ok := a.(k8stesting.DeleteActionImpl); ok && a.GetResource().Resource == "pods" {
			deletes = append(deletes, d)
		}
	}
	if len(deletes) != 1 || deletes[0].DeleteOptions.GracePeriodSeconds == nil || *deletes[0].DeleteOptions.GracePeriodSeconds != 0 ||
		deletes[0].DeleteOptions.Preconditions == nil || *deletes[0].DeleteOptions.Preconditions.UID != "uid-doomed" {
		t.Errorf("deletes = %+v", deletes)
	}
}

func TestPodRemovedFromAPIIsKilled(t *testing.T) {
	h := newHarness(t, nil)
	h.create(makePod("forced").obj())
	h.waitPod("default", "forced", "running", podRunning)
	if err := h.client.CoreV1().Pods("default").Delete(context.Background(), "forced", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	h.eventually("sandbox removed", func() bool { all, _ := h.runtime.SandboxCount(); return all == 0 })
}

func TestOrphanedSandboxesAreCleanedUp(t *testing.T) {
	h := newHarness(t, func(c *Config) {})
	h.runtime.AddOrphanSandbox(&runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "ghost", Namespace: "default", Uid: "uid-ghost"},
		Labels:   map[string]string{labelPodUID: "uid-ghost", labelManagedBy: managedByKubelet},
	})
	h.stepUntil("orphan removed", h.cfg.HousekeepingPeriod, func() bool { all, _ := h.runtime.SandboxCount(); return all == 0 })
}

func TestRestartedKubeletAdoptsRunningPods(t *testing.T) {
	h := newHarness(t, nil)
	h.create(makePod("steady").obj())
	h.waitPod("default", "steady", "running", podRunning)
	containerID := h.runtime.RunningContainer("uid-steady", "app")
	h.stop()

	h.start()
	// The restarted kubelet's loops make their tickers as they start: step until it relists.
	h.stepUntil("relisted", time.Second, func() bool { return len(h.runtime.CallsTo("ListContainers")) > 3 })
	pod := h.waitPod("default", "steady", "still running", podRunning)
	if got := h.runtime.RunningContainer("uid-steady", "app"); got != containerID {
		t.Errorf("container %s replaced by %s after kubelet restart", containerID, got)
	}
	if n := len(h.runtime.CallsTo("RunPodSandbox")); n != 1 {
		t.Errorf("%d sandboxes created, want 1", n)
	}
	if s := statusOf(pod, "app"); s.RestartCount != 0 || s.State.Running == nil {
		t.Errorf("status after restart = %+v", s)
	}
}

func TestImagePullPolicies(t *testing.T) {
	h := newHarness(t, nil)
	h.create(makePod("never").container(corev1.Container{Name: "app", Image: "localhost/absent:v1", ImagePullPolicy: corev1.PullNever}).obj())
	pod := h.waitPod("default", "never", "ErrImageNeverPull", func(p *corev1.Pod) bool {
		s := statusOf(p, "app")
		return s != nil && s.State.Waiting != nil && s.State.Waiting.Reason == "ErrImageNeverPull"
	})
	if msg := statusOf(pod, "app").State.Waiting.Message; msg != `Container image "localhost/absent:v1" is not present with pull policy of Never` {
		t.Errorf("message = %q", msg)
	}

	h.create(makePod("unreachable").container(corev1.Container{Name: "app", Image: "example.com/app:v1"}).obj())
	// The failed pull shows as ErrImagePull, and at the next sync (which
	// our own status write may trigger at once) as ImagePullBackOff.
	h.waitPod("default", "unreachable", "ImagePullBackOff", func(p *corev1.Pod) bool {
		s := statusOf(p, "app")
		return s != nil && s.State.Waiting != nil && s.State.Waiting.Reason == "ImagePullBackOff"
	})
	if !h.hasEvent(`Warning Failed Failed to pull image "example.com/app:v1"`) {
		t.Errorf("no pull failure event in %v", h.drainEvents())
	}
	if n := h.runtime.Pulls("example.com/app:v1"); n != 1 {
		t.Errorf("pulled %d times during the back-off, want 1", n)
	}
	h.step(10 * time.Second)
	h.eventually("pull retried after the back-off", func() bool { return h.runtime.Pulls("example.com/app:v1") == 2 })

	h.create(makePod("pulled").container(corev1.Container{Name: "app", Image: "registry.test/app:v2"}).obj())
	h.waitPod("default", "pulled", "running", podRunning)
	if !h.hasEvent(`Normal Pulling Pulling image "registry.test/app:v2"`) {
		t.Errorf("no Pulling event")
	}
	h.create(makePod("always").container(corev1.Container{Name: "app", Image: testImage, ImagePullPolicy: corev1.PullAlways}).obj())
	h.waitPod("default", "always", "running", podRunning)
	if h.runtime.Pulls(testImage) != 1 {
		t.Errorf("Always policy pulled %d times, want 1", h.runtime.Pulls(testImage))
	}
}

func TestCreateContainerConfigError(t *testing.T) {
	h := newHarness(t, nil)
	h.create(makePod("misconfigured").container(corev1.Container{Name: "app", Env: []corev1.EnvVar{
		{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "missing"}, Key: "k"}}},
	}}).obj())
	pod := h.waitPod("default", "misconfigured", "config error", func(p *corev1.Pod) bool {
		s := statusOf(p, "app")
		return s != nil && s.State.Waiting != nil && s.State.Waiting.Reason == "CreateContainerConfigError"
	})
	if msg := statusOf(pod, "app").State.Waiting.Message; msg != `configmap "missing" not found` {
		t.Errorf("message = %q", msg)
	}
	if pod.Status.Phase != corev1.PodPending {
		t.Errorf("phase = %s", pod.Status.Phase)
	}
	// Creating the ConfigMap lets the container start at the next attempt.
	if _, err := h.client.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "missing", Namespace: "default"}, Data: map[string]string{"k": "v"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.step(15 * time.Second)
	h.waitPod("default", "misconfigured", "running", podRunning)
}

func TestStopWaves(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	pod := makePod("p").obj()
	pod.Spec.InitContainers = []corev1.Container{{Name: "setup"}, {Name: "proxy", RestartPolicy: &always}, {Name: "logs", RestartPolicy: &always}}
	pod.Spec.Containers = []corev1.Container{{Name: "app"}, {Name: "worker"}}
	c := func(name string, state runtimeapi.ContainerState) *runtimeapi.ContainerStatus {
		return &runtimeapi.ContainerStatus{Id: name, Metadata: &runtimeapi.ContainerMetadata{Name: name}, State: state}
	}
	containers := []*runtimeapi.ContainerStatus{
		c("logs", runtimeapi.ContainerState_CONTAINER_RUNNING), c("app", runtimeapi.ContainerState_CONTAINER_RUNNING),
		c("setup", runtimeapi.ContainerState_CONTAINER_EXITED), c("proxy", runtimeapi.ContainerState_CONTAINER_RUNNING),
		c("worker", runtimeapi.ContainerState_CONTAINER_CREATED),
	}
	names := func(waves [][]*runtimeapi.ContainerStatus) string {
		var out []string
		for _, w := range waves {
			var ids []string
			for _, s := range w {
				ids = append(ids, s.Id)
			}
			out = append(out, strings.Join(ids, ","))
		}
		return strings.Join(out, " | ")
	}
	if got := names(stopWaves(pod, containers)); got != "app,worker | logs | proxy" {
		t.Errorf("with sidecars: %s", got)
	}
	if got := names(stopWaves(nil, containers)); got != "logs,app,proxy,worker" {
		t.Errorf("without a spec: %s", got)
	}
}

func TestSidecarStopsAfterContainers(t *testing.T) {
	h := newHarness(t, nil)
	always := corev1.ContainerRestartPolicyAlways
	pod := makePod("ordered-stop").obj()
	pod.Spec.InitContainers = []corev1.Container{{Name: "proxy", Image: testImage, ImagePullPolicy: corev1.PullIfNotPresent, RestartPolicy: &always}}
	h.create(pod)
	h.waitPod("default", "ordered-stop", "running", podRunning)
	if err := h.client.CoreV1().Pods("default").Delete(context.Background(), "ordered-stop", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	h.eventually("containers stopped", func() bool { return len(h.runtime.CallsTo("StopContainer")) >= 2 })
	if got := h.runtime.CallsTo("StopContainer"); !slices.Equal(got[:2], []string{"app", "proxy"}) {
		t.Errorf("stop order = %v", got)
	}
}
