package kubelet

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

func TestExpandVars(t *testing.T) {
	vars := map[string]string{"A": "alpha", "B": "beta", "EMPTY": ""}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	tests := []struct{ in, want string }{
		{"$(A)", "alpha"},
		{"x-$(A)-$(B)-y", "x-alpha-beta-y"},
		{"$(MISSING)", "$(MISSING)"},
		{"$$(A)", "$(A)"},
		{"$$", "$"},
		{"cost $5", "cost $5"},
		{"$(A", "$(A"},
		{"trailing $", "trailing $"},
		{"$(EMPTY)x", "x"},
		{"$()", "$()"},
	}
	for _, tc := range tests {
		if got := expandVars(tc.in, lookup); got != tc.want {
			t.Errorf("expandVars(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestResolveEnvErrors(t *testing.T) {
	client := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}, Data: map[string]string{"k": "v"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sec", Namespace: "ns"}, Data: map[string][]byte{"k": []byte("v")}},
	)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	cmKey := func(name, key string, optional bool) corev1.EnvVar {
		return corev1.EnvVar{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: ptr.To(optional)}}}
	}
	secKey := func(name, key string) corev1.EnvVar {
		return corev1.EnvVar{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}}}
	}
	tests := []struct {
		name    string
		c       corev1.Container
		wantErr string
		wantX   *string
	}{
		{"missing configmap", corev1.Container{Env: []corev1.EnvVar{cmKey("nope", "k", false)}}, `configmap "nope" not found`, nil},
		{"missing configmap key", corev1.Container{Env: []corev1.EnvVar{cmKey("cm", "nope", false)}}, "couldn't find key nope in ConfigMap ns/cm", nil},
		{"optional key", corev1.Container{Env: []corev1.EnvVar{cmKey("cm", "nope", true)}}, "", nil},
		{"missing secret", corev1.Container{Env: []corev1.EnvVar{secKey("nope", "k")}}, `secret "nope" not found`, nil},
		{"missing secret key", corev1.Container{Env: []corev1.EnvVar{secKey("sec", "nope")}}, "couldn't find key nope in Secret ns/sec", nil},
		{"secret value", corev1.Container{Env: []corev1.EnvVar{secKey("sec", "k")}}, "", ptr.To("v")},
		{"missing envFrom", corev1.Container{EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}}}}}, `configmap "nope" not found`, nil},
		{"optional envFrom", corev1.Container{EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Optional: ptr.To(true)}}}}, "", nil},
		{"env overrides envFrom", corev1.Container{
			EnvFrom: []corev1.EnvFromSource{{Prefix: "", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}},
			Env:     []corev1.EnvVar{{Name: "k", Value: "override"}, {Name: "X", Value: "$(k)!"}},
		}, "", ptr.To("override!")},
		{"bad field path", corev1.Container{Env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nope"}}}}}, "unsupported fieldPath: spec.nope", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env, err := resolveEnv(newObjectSource(context.Background(), client), envInputs{pod: pod}, &tc.c)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var x *string
			for _, e := range env {
				if e.Name == "X" {
					x = ptr.To(e.Value)
				}
			}
			if (x == nil) != (tc.wantX == nil) || (x != nil && *x != *tc.wantX) {
				t.Errorf("X = %v, want %v (env %v)", x, tc.wantX, env)
			}
		})
	}
}

func TestContainerResourceValue(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "a", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: quantity("250m"), corev1.ResourceMemory: quantity("100Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: quantity("1500m")},
		}},
		{Name: "b"},
	}}}
	allocatable := corev1.ResourceList{corev1.ResourceCPU: quantity("4"), corev1.ResourceMemory: quantity("8Gi")}
	tests := []struct {
		container, resource, divisor, want string
	}{
		{"a", "limits.cpu", "", "2"}, // 1.5 cores rounded up
		{"a", "limits.cpu", "1m", "1500"},
		{"a", "requests.cpu", "1m", "250"},
		{"a", "requests.memory", "1Mi", "100"},
		{"a", "limits.memory", "1Gi", "8"}, // node allocatable
		{"b", "requests.cpu", "", "0"},
		{"b", "limits.memory", "", "8589934592"},
	}
	for _, tc := range tests {
		ref := &corev1.ResourceFieldSelector{ContainerName: tc.container, Resource: tc.resource}
		if tc.divisor != "" {
			ref.Divisor = quantity(tc.divisor)
		}
		got, err := containerResourceValue(pod, &pod.Spec.Containers[0], allocatable, ref)
		if err != nil || got != tc.want {
			t.Errorf("%s %s /%s = %q, %v; want %q", tc.container, tc.resource, tc.divisor, got, err, tc.want)
		}
	}
	if _, err := containerResourceValue(pod, &pod.Spec.Containers[0], allocatable, &corev1.ResourceFieldSelector{Resource: "limits.gpu"}); err == nil {
		t.Error("unsupported resource accepted")
	}
}

func TestPodPhase(t *testing.T) {
	runningS := corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	exit := func(code int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
	}
	waitingS := corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}
	backoff := corev1.ContainerStatus{
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}},
	}
	S := func(s ...corev1.ContainerStatus) []corev1.ContainerStatus { return s }
	tests := []struct {
		name     string
		policy   corev1.RestartPolicy
		init     []corev1.ContainerStatus
		regular  []corev1.ContainerStatus
		terminal bool
		want     corev1.PodPhase
	}{
		{"creating", corev1.RestartPolicyAlways, nil, S(waitingS), false, corev1.PodPending},
		{"running", corev1.RestartPolicyAlways, nil, S(runningS), false, corev1.PodRunning},
		{"one running one creating", corev1.RestartPolicyAlways, nil, S(runningS, waitingS), false, corev1.PodPending},
		{"crash looping", corev1.RestartPolicyAlways, nil, S(backoff), false, corev1.PodRunning},
		{"always exited ok", corev1.RestartPolicyAlways, nil, S(exit(0)), false, corev1.PodRunning},
		{"never exited ok", corev1.RestartPolicyNever, nil, S(exit(0)), false, corev1.PodSucceeded},
		{"never exited bad", corev1.RestartPolicyNever, nil, S(exit(0), exit(1)), false, corev1.PodFailed},
		{"onfailure ok", corev1.RestartPolicyOnFailure, nil, S(exit(0)), false, corev1.PodSucceeded},
		{"onfailure bad", corev1.RestartPolicyOnFailure, nil, S(exit(1)), false, corev1.PodRunning},
		{"init running", corev1.RestartPolicyAlways, S(runningS), S(waitingS), false, corev1.PodPending},
		{"init failed never", corev1.RestartPolicyNever, S(exit(1)), S(waitingS), false, corev1.PodFailed},
		{"init failed always", corev1.RestartPolicyAlways, S(exit(1)), S(waitingS), false, corev1.PodPending},
		{"init done", corev1.RestartPolicyAlways, S(exit(0)), S(runningS), false, corev1.PodRunning},
		{"terminal all ok", corev1.RestartPolicyAlways, nil, S(exit(0)), true, corev1.PodSucceeded},
		{"terminal killed", corev1.RestartPolicyAlways, nil, S(exit(137)), true, corev1.PodFailed},
	}
	for _, tc := range tests {
		pod := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: tc.policy}}
		if got := podPhase(pod, tc.init, tc.regular, tc.terminal); got != tc.want {
			t.Errorf("%s: phase = %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestResourcesAndQoS(t *testing.T) {
	mk := func(req, lim corev1.ResourceList) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}}}}
	}
	guaranteed := mk(corev1.ResourceList{corev1.ResourceCPU: quantity("1"), corev1.ResourceMemory: quantity("1Gi")},
		corev1.ResourceList{corev1.ResourceCPU: quantity("1"), corev1.ResourceMemory: quantity("1Gi")})
	burstable := mk(corev1.ResourceList{corev1.ResourceMemory: quantity("2Gi")}, nil)
	bestEffort := mk(nil, nil)
	tests := []struct {
		name     string
		pod      *corev1.Pod
		qos      corev1.PodQOSClass
		shares   int64
		quota    int64
		oom      int64
		memLimit int64
	}{
		{"guaranteed", guaranteed, corev1.PodQOSGuaranteed, 1024, 100000, -997, 1 << 30},
		{"burstable", burstable, corev1.PodQOSBurstable, 2, 0, 750, 0},
		{"best effort", bestEffort, corev1.PodQOSBestEffort, 2, 0, 1000, 0},
	}
	for _, tc := range tests {
		if got := qosClass(tc.pod); got != tc.qos {
			t.Errorf("%s: qos = %s", tc.name, got)
		}
		r := linuxResources(tc.pod, &tc.pod.Spec.Containers[0], 8<<30)
		if r.CpuShares != tc.shares || r.CpuQuota != tc.quota || r.OomScoreAdj != tc.oom || r.MemoryLimitInBytes != tc.memLimit {
			t.Errorf("%s: resources = %+v", tc.name, r)
		}
	}
	tiny := mk(nil, corev1.ResourceList{corev1.ResourceCPU: quantity("1m")})
	if r := linuxResources(tiny, &tiny.Spec.Containers[0], 8<<30); r.CpuQuota != 1000 || r.CpuShares != 2 {
		t.Errorf("1m cpu limit: %+v", r)
	}
}

func TestSecurityContextRunAsNonRoot(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}}}
	c := &corev1.Container{Name: "c"}
	if !needsImageUser(pod, c) {
		t.Error("runAsNonRoot without runAsUser does not look at the image's user")
	}
	// As Kubernetes' kubelet: without a runAsUser the image's user decides.
	for _, tc := range []struct {
		name  string
		image imageUser
		want  string // "" accepted
	}{
		{"image with USER 1234 (e2e nonroot)", imageUser{uid: ptr.To[int64](1234)}, ""},
		{"image with no USER", imageUser{uid: new(int64)}, "runAsNonRoot and image will run as root"},
		{"image with USER root", imageUser{uid: ptr.To[int64](0)}, "runAsNonRoot and image will run as root"},
		{"image with USER nobody", imageUser{name: "nobody"}, "image has non-numeric user (nobody), cannot verify user is non-root"},
	} {
		_, err := securityContext(pod, c, tc.image)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
	c.SecurityContext = &corev1.SecurityContext{RunAsUser: ptr.To[int64](0)}
	if _, err := securityContext(pod, c, imageUser{uid: ptr.To[int64](1234)}); err == nil || !strings.Contains(err.Error(), "runAsUser breaks non-root policy") {
		t.Errorf("uid 0 with runAsNonRoot: %v", err)
	}
	c.SecurityContext = &corev1.SecurityContext{RunAsUser: ptr.To[int64](1000), Privileged: ptr.To(true)}
	if needsImageUser(pod, c) {
		t.Error("a container naming its user looks at the image's")
	}
	sc, err := securityContext(pod, c, imageUser{})
	if err != nil || !sc.Privileged || len(sc.MaskedPaths) != 0 || sc.RunAsUser.GetValue() != 1000 {
		t.Errorf("privileged sc = %+v, %v", sc, err)
	}
}

func TestImageHelpers(t *testing.T) {
	pulls := map[string]corev1.PullPolicy{
		"busybox": corev1.PullAlways, "busybox:latest": corev1.PullAlways, "busybox:1.36": corev1.PullIfNotPresent,
		"localhost:5000/app": corev1.PullAlways, "localhost:5000/app:v1": corev1.PullIfNotPresent, "app@sha256:abc": corev1.PullIfNotPresent,
	}
	for image, want := range pulls {
		if got := defaultPullPolicy(image); got != want {
			t.Errorf("defaultPullPolicy(%s) = %s, want %s", image, got, want)
		}
	}
	hosts := map[string]string{
		"busybox": "docker.io", "library/busybox": "docker.io", "localhost/busybox:local": "localhost",
		"127.0.0.1:5000/app": "127.0.0.1:5000", "ghcr.io/org/app:v1": "ghcr.io",
	}
	for image, want := range hosts {
		if got := registryHost(image); got != want {
			t.Errorf("registryHost(%s) = %s, want %s", image, got, want)
		}
	}
	client := fake.NewClientset(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "regcred", Namespace: "ns"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"https://127.0.0.1:5000":{"auth":"dXNlcjpwYXNz"}}}`)},
	})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, Spec: corev1.PodSpec{ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}}}}
	auth, err := pullAuth(pod, "127.0.0.1:5000/app:v1", newObjectSource(context.Background(), client))
	if err != nil || auth == nil || auth.Username != "user" || auth.Password != "pass" {
		t.Errorf("auth = %+v, %v", auth, err)
	}
	if auth, _ := pullAuth(pod, "docker.io/app", newObjectSource(context.Background(), client)); auth != nil {
		t.Errorf("credentials for another registry used: %+v", auth)
	}
}
