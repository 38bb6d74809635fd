package core

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func debugContainer(name string, mods ...func(*corev1.EphemeralContainer)) corev1.EphemeralContainer {
	ec := corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: name, Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile, TerminationMessagePath: "/dev/termination-log",
	}}
	for _, m := range mods {
		m(&ec)
	}
	return ec
}

// ephemeralUpdate runs a pods/ephemeralcontainers write of ecs over old through the strategy.
func ephemeralUpdate(t *testing.T, old *corev1.Pod, mutate func(*corev1.Pod)) (*corev1.Pod, field.ErrorList) {
	t.Helper()
	r := resourceByPlural(t, "pods")
	strategy, verbs, ok := r.SubresourceStrategy("ephemeralcontainers")
	if !ok || verbs != nil {
		t.Fatalf("pods/ephemeralcontainers: served %v, verbs %v", ok, verbs)
	}
	pod := old.DeepCopy()
	mutate(pod)
	strategy.PrepareForUpdate(context.Background(), pod, old)
	return pod, strategy.ValidateUpdate(context.Background(), pod, old)
}

func TestPodEphemeralContainers(t *testing.T) {
	old := makePod("web").node("n1").obj()
	old.Generation = 1

	pod, errs := ephemeralUpdate(t, old, func(p *corev1.Pod) {
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, debugContainer("debugger", func(ec *corev1.EphemeralContainer) { ec.TargetContainerName = "app" }))
		// Anything else of the request is ignored.
		p.Spec.Containers[0].Image = "other"
		p.Labels = map[string]string{"changed": "yes"}
	})
	requireNoErrors(t, errs)
	if len(pod.Spec.EphemeralContainers) != 1 || pod.Spec.Containers[0].Image != "nginx:1.27" || pod.Labels["changed"] != "" || pod.Generation != 2 {
		t.Fatalf("after the write: %+v", pod)
	}

	withDebugger := pod.DeepCopy()
	tests := []struct {
		name   string
		old    *corev1.Pod
		mutate func(*corev1.Pod)
		want   wantErr
	}{
		{"ports", old, func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugContainer("d", func(ec *corev1.EphemeralContainer) {
				ec.Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}
			})}
		}, wantErr{"spec.ephemeralContainers[0].ports", field.ErrorTypeForbidden, "cannot be set for an Ephemeral Container"}},
		{"probe", old, func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugContainer("d", func(ec *corev1.EphemeralContainer) {
				ec.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
			})}
		}, wantErr{"spec.ephemeralContainers[0].readinessProbe", field.ErrorTypeForbidden, "cannot be set for an Ephemeral Container"}},
		{"resources", old, func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugContainer("d", func(ec *corev1.EphemeralContainer) {
				ec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: qty("100m")}
			})}
		}, wantErr{"spec.ephemeralContainers[0].resources", field.ErrorTypeForbidden, "cannot be set for an Ephemeral Container"}},
		{"name taken by a container", old, func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugContainer("app")}
		}, wantErr{"spec.ephemeralContainers[0].name", field.ErrorTypeDuplicate, ""}},
		{"two with one name", old, func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugContainer("d"), debugContainer("d")}
		}, wantErr{"spec.ephemeralContainers[1].name", field.ErrorTypeDuplicate, ""}},
		{"unknown target", old, func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugContainer("d", func(ec *corev1.EphemeralContainer) { ec.TargetContainerName = "nope" })}
		}, wantErr{"spec.ephemeralContainers[0].targetContainerName", field.ErrorTypeNotFound, ""}},
		{"removed", withDebugger, func(p *corev1.Pod) { p.Spec.EphemeralContainers = nil },
			wantErr{"spec.ephemeralContainers", field.ErrorTypeForbidden, `existing ephemeral containers "debugger" may not be removed`}},
		{"changed", withDebugger, func(p *corev1.Pod) { p.Spec.EphemeralContainers[0].Image = "alpine" },
			wantErr{"spec.ephemeralContainers", field.ErrorTypeForbidden, `existing ephemeral containers "debugger" may not be changed`}},
		{"static pod", makePod("static").with(func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} }).obj(), func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugContainer("d")}
		}, wantErr{"[]", field.ErrorTypeForbidden, "static pods do not support ephemeral containers"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errs := ephemeralUpdate(t, tt.old, tt.mutate)
			requireError(t, errs, tt.want)
		})
	}

	// The main resource cannot add them.
	r := resourceByPlural(t, "pods")
	viaPod := old.DeepCopy()
	viaPod.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugContainer("d")}
	requireError(t, r.Strategy.ValidateUpdate(context.Background(), viaPod, old), wantErr{"spec", field.ErrorTypeForbidden, "pod updates may not change fields"})
}

func resizeUpdate(t *testing.T, old *corev1.Pod, mutate func(*corev1.Pod)) (*corev1.Pod, field.ErrorList) {
	t.Helper()
	r := resourceByPlural(t, "pods")
	strategy, _, ok := r.SubresourceStrategy("resize")
	if !ok {
		t.Fatal("pods/resize not served")
	}
	pod := old.DeepCopy()
	mutate(pod)
	strategy.PrepareForUpdate(context.Background(), pod, old)
	return pod, strategy.ValidateUpdate(context.Background(), pod, old)
}

func TestPodResize(t *testing.T) {
	burstable := makePod("web").node("n1").resources(
		corev1.ResourceList{corev1.ResourceCPU: qty("1"), corev1.ResourceMemory: qty("256Mi")},
		corev1.ResourceList{corev1.ResourceCPU: qty("500m"), corev1.ResourceMemory: qty("128Mi")},
	).obj()

	twoContainers := burstable.DeepCopy()
	second := twoContainers.Spec.Containers[0].DeepCopy()
	second.Name = "sidekick"
	twoContainers.Spec.Containers = append(twoContainers.Spec.Containers, *second)
	withInit := func(sidecar bool) *corev1.Pod {
		p := burstable.DeepCopy()
		c := p.Spec.Containers[0].DeepCopy()
		c.Name = "setup"
		if sidecar {
			c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		}
		p.Spec.InitContainers = []corev1.Container{*c}
		return p
	}
	onOldNode := burstable.DeepCopy()
	onOldNode.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}

	pod, errs := resizeUpdate(t, burstable, func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = qty("750m")
		p.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
		// Not a resize: ignored.
		p.Spec.Containers[0].Image = "other"
	})
	requireNoErrors(t, errs)
	if got := pod.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; got.String() != "750m" || pod.Spec.Containers[0].Image != "nginx:1.27" || len(pod.Spec.Containers[0].ResizePolicy) != 1 {
		t.Fatalf("after the resize: %+v", pod.Spec.Containers[0])
	}

	// A memory limit may go down when the container restarts for it.
	_, errs = resizeUpdate(t, burstable, func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = qty("200Mi")
		p.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	})
	requireNoErrors(t, errs)
	// A sidecar is resized like a container; a reordering is never applied to other containers.
	pod, errs = resizeUpdate(t, withInit(true), func(p *corev1.Pod) {
		p.Spec.InitContainers[0].Resources.Limits[corev1.ResourceCPU] = qty("2")
	})
	requireNoErrors(t, errs)
	if got := pod.Spec.InitContainers[0].Resources.Limits[corev1.ResourceCPU]; got.String() != "2" {
		t.Fatalf("sidecar after the resize: %+v", pod.Spec.InitContainers[0].Resources)
	}
	pod, _ = resizeUpdate(t, twoContainers, func(p *corev1.Pod) {
		p.Spec.Containers[0], p.Spec.Containers[1] = p.Spec.Containers[1], p.Spec.Containers[0]
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = qty("900m")
	})
	if pod.Spec.Containers[0].Name != "sidekick" {
		t.Fatalf("a reordered request was applied instead of refused: %v", pod.Spec.Containers)
	}

	tests := []struct {
		name   string
		old    *corev1.Pod
		mutate func(*corev1.Pod)
		want   wantErr
	}{
		{"limit removed", burstable, func(p *corev1.Pod) { delete(p.Spec.Containers[0].Resources.Limits, corev1.ResourceMemory) },
			wantErr{"spec.containers[0].resources.limits", field.ErrorTypeForbidden, "resource limits cannot be removed"}},
		{"request removed", burstable, func(p *corev1.Pod) { delete(p.Spec.Containers[0].Resources.Requests, corev1.ResourceCPU) },
			wantErr{"spec.containers[0].resources.requests", field.ErrorTypeForbidden, "resource requests cannot be removed"}},
		{"memory limit lowered without a restart", burstable, func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = qty("200Mi")
		}, wantErr{"spec.containers[0].resources.limits[memory]", field.ErrorTypeForbidden, "memory limits cannot be decreased unless resizePolicy is RestartContainer"}},
		{"memory limit added without a restart", makePod("web").node("n1").resources(
			corev1.ResourceList{corev1.ResourceCPU: qty("1")}, corev1.ResourceList{corev1.ResourceCPU: qty("500m"), corev1.ResourceMemory: qty("128Mi")}).obj(),
			func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = qty("1Gi") },
			wantErr{"spec.containers[0].resources.limits[memory]", field.ErrorTypeForbidden, "memory limits cannot be added unless resizePolicy is RestartContainer"}},
		{"reordered", twoContainers, func(p *corev1.Pod) {
			p.Spec.Containers[0], p.Spec.Containers[1] = p.Spec.Containers[1], p.Spec.Containers[0]
		}, wantErr{"spec.containers[0].name", field.ErrorTypeForbidden, "containers may not be renamed or reordered on resize"}},
		{"init container", withInit(false), func(p *corev1.Pod) {
			p.Spec.InitContainers[0].Resources.Requests[corev1.ResourceCPU] = qty("200m")
		}, wantErr{"spec", field.ErrorTypeForbidden, "resources for non-sidecar init containers are immutable"}},
		{"node without resize", onOldNode, func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = qty("750m")
		}, wantErr{"spec", field.ErrorTypeForbidden, "Pod running on node without support for resize"}},
		{"qos changes", burstable, func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = p.Spec.Containers[0].Resources.Limits.DeepCopy()
		}, wantErr{"spec", field.ErrorTypeInvalid, "Pod QOS Class may not change as a result of resizing"}},
		{"other resource", burstable, func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceEphemeralStorage] = qty("1Gi")
		}, wantErr{"spec", field.ErrorTypeForbidden, "only cpu and memory resources are mutable"}},
		{"bad resize policy", burstable, func(p *corev1.Pod) {
			p.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: "gpu", RestartPolicy: corev1.NotRequired}}
		}, wantErr{"spec.containers[0].resizePolicy", field.ErrorTypeNotSupported, ""}},
		{"request above limit", burstable, func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = qty("2")
		}, wantErr{"spec.containers[0].resources.requests", field.ErrorTypeInvalid, "must be less than or equal to cpu limit"}},
		{"static pod", makePod("static").with(func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} }).obj(), func(p *corev1.Pod) {},
			wantErr{"[]", field.ErrorTypeForbidden, "static pods cannot be resized"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errs := resizeUpdate(t, tt.old, tt.mutate)
			requireError(t, errs, tt.want)
		})
	}
}
