package printers

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// testNow is the fixed clock of every test: ages are computed against it.
var testNow = time.Date(2025, time.June, 1, 12, 0, 0, 0, time.UTC)

// ago returns the metav1.Time d before now.
func ago(d time.Duration) metav1.Time { return metav1.NewTime(testNow.Add(-d)) }

func agoPtr(d time.Duration) *metav1.Time {
	t := ago(d)
	return &t
}

func objectMeta(name string, created time.Duration) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: ago(created)}
}

// podBuilder builds pods for tests: makePod("web").Containers("app").Statuses(running("app", true)).Obj().
type podBuilder struct{ pod corev1.Pod }

func makePod(name string) *podBuilder {
	return &podBuilder{pod: corev1.Pod{
		ObjectMeta: objectMeta(name, 10*time.Minute),
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}}
}

func (b *podBuilder) Containers(names ...string) *podBuilder {
	for _, n := range names {
		b.pod.Spec.Containers = append(b.pod.Spec.Containers, corev1.Container{Name: n, Image: "registry.local/" + n + ":1"})
	}
	return b
}

func (b *podBuilder) InitContainers(names ...string) *podBuilder {
	for _, n := range names {
		b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, corev1.Container{Name: n, Image: "registry.local/" + n + ":1"})
	}
	return b
}

// Sidecar adds an init container with restartPolicy Always.
func (b *podBuilder) Sidecar(name string) *podBuilder {
	always := corev1.ContainerRestartPolicyAlways
	b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, corev1.Container{Name: name, Image: "registry.local/" + name + ":1", RestartPolicy: &always})
	return b
}

func (b *podBuilder) Phase(p corev1.PodPhase) *podBuilder { b.pod.Status.Phase = p; return b }

func (b *podBuilder) Reason(r string) *podBuilder { b.pod.Status.Reason = r; return b }

func (b *podBuilder) Statuses(cs ...corev1.ContainerStatus) *podBuilder {
	b.pod.Status.ContainerStatuses = cs
	return b
}

func (b *podBuilder) InitStatuses(cs ...corev1.ContainerStatus) *podBuilder {
	b.pod.Status.InitContainerStatuses = cs
	return b
}

func (b *podBuilder) Condition(typ corev1.PodConditionType, status corev1.ConditionStatus, reason string) *podBuilder {
	b.pod.Status.Conditions = append(b.pod.Status.Conditions, corev1.PodCondition{Type: typ, Status: status, Reason: reason})
	return b
}

func (b *podBuilder) ReadinessGates(types ...corev1.PodConditionType) *podBuilder {
	for _, t := range types {
		b.pod.Spec.ReadinessGates = append(b.pod.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: t})
	}
	return b
}

func (b *podBuilder) Deleting() *podBuilder {
	b.pod.DeletionTimestamp = agoPtr(time.Second)
	return b
}

func (b *podBuilder) Node(n string) *podBuilder { b.pod.Spec.NodeName = n; return b }

func (b *podBuilder) Nominated(n string) *podBuilder { b.pod.Status.NominatedNodeName = n; return b }

func (b *podBuilder) IP(ips ...string) *podBuilder {
	b.pod.Status.PodIP = ips[0]
	for _, ip := range ips {
		b.pod.Status.PodIPs = append(b.pod.Status.PodIPs, corev1.PodIP{IP: ip})
	}
	return b
}

func (b *podBuilder) Created(d time.Duration) *podBuilder { b.pod.CreationTimestamp = ago(d); return b }

func (b *podBuilder) Obj() *corev1.Pod { p := b.pod; return &p }

func running(name string, ready bool) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Ready: ready, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ago(time.Minute)}}}
}

func waiting(name, reason string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
}

func terminated(name, reason string, exitCode, signal int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: exitCode, Signal: signal}}}
}

// restarted records count restarts, the last one finishing lastFinished before now.
func restarted(cs corev1.ContainerStatus, count int32, lastFinished time.Duration) corev1.ContainerStatus {
	cs.RestartCount = count
	cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: ago(lastFinished)}
	return cs
}

func started(cs corev1.ContainerStatus) corev1.ContainerStatus {
	yes := true
	cs.Started = &yes
	return cs
}

// nodeBuilder builds nodes: makeNode("n1").Ready(corev1.ConditionTrue).Label(...).Obj().
type nodeBuilder struct{ node corev1.Node }

func makeNode(name string) *nodeBuilder {
	return &nodeBuilder{node: corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: ago(72 * time.Hour)}}}
}

func (b *nodeBuilder) Condition(typ corev1.NodeConditionType, s corev1.ConditionStatus) *nodeBuilder {
	b.node.Status.Conditions = append(b.node.Status.Conditions, corev1.NodeCondition{Type: typ, Status: s})
	return b
}

func (b *nodeBuilder) Ready(s corev1.ConditionStatus) *nodeBuilder {
	return b.Condition(corev1.NodeReady, s)
}

func (b *nodeBuilder) Unschedulable() *nodeBuilder { b.node.Spec.Unschedulable = true; return b }

func (b *nodeBuilder) Label(k, v string) *nodeBuilder {
	if b.node.Labels == nil {
		b.node.Labels = map[string]string{}
	}
	b.node.Labels[k] = v
	return b
}

func (b *nodeBuilder) Address(typ corev1.NodeAddressType, addr string) *nodeBuilder {
	b.node.Status.Addresses = append(b.node.Status.Addresses, corev1.NodeAddress{Type: typ, Address: addr})
	return b
}

func (b *nodeBuilder) Info(kubelet, osImage, kernel, runtime string) *nodeBuilder {
	b.node.Status.NodeInfo = corev1.NodeSystemInfo{KubeletVersion: kubelet, OSImage: osImage, KernelVersion: kernel, ContainerRuntimeVersion: runtime}
	return b
}

func (b *nodeBuilder) Obj() *corev1.Node { n := b.node; return &n }

// serviceBuilder builds services: makeService("web", corev1.ServiceTypeNodePort).Port(80, 30080).Obj().
type serviceBuilder struct{ svc corev1.Service }

func makeService(name string, typ corev1.ServiceType) *serviceBuilder {
	return &serviceBuilder{svc: corev1.Service{ObjectMeta: objectMeta(name, 2*time.Hour), Spec: corev1.ServiceSpec{Type: typ}}}
}

func (b *serviceBuilder) ClusterIP(ips ...string) *serviceBuilder {
	b.svc.Spec.ClusterIP = ips[0]
	b.svc.Spec.ClusterIPs = ips
	return b
}

func (b *serviceBuilder) Port(port, nodePort int32) *serviceBuilder {
	return b.ProtocolPort(port, nodePort, corev1.ProtocolTCP)
}

func (b *serviceBuilder) ProtocolPort(port, nodePort int32, proto corev1.Protocol) *serviceBuilder {
	b.svc.Spec.Ports = append(b.svc.Spec.Ports, corev1.ServicePort{Port: port, NodePort: nodePort, Protocol: proto})
	return b
}

func (b *serviceBuilder) ExternalIPs(ips ...string) *serviceBuilder {
	b.svc.Spec.ExternalIPs = ips
	return b
}

func (b *serviceBuilder) ExternalName(n string) *serviceBuilder {
	b.svc.Spec.ExternalName = n
	return b
}

func (b *serviceBuilder) Ingress(ip, hostname string) *serviceBuilder {
	b.svc.Status.LoadBalancer.Ingress = append(b.svc.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip, Hostname: hostname})
	return b
}

func (b *serviceBuilder) Selector(k, v string) *serviceBuilder {
	if b.svc.Spec.Selector == nil {
		b.svc.Spec.Selector = map[string]string{}
	}
	b.svc.Spec.Selector[k] = v
	return b
}

func (b *serviceBuilder) Obj() *corev1.Service { s := b.svc; return &s }

// jobBuilder builds jobs: makeJob("backup").Completions(1).Started(time.Minute).Obj().
type jobBuilder struct{ job batchv1.Job }

func makeJob(name string) *jobBuilder {
	return &jobBuilder{job: batchv1.Job{
		ObjectMeta: objectMeta(name, time.Hour),
		Spec: batchv1.JobSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "uid-" + name}},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "work", Image: "busybox:1.36"}}}},
		},
	}}
}

func (b *jobBuilder) Completions(n int32) *jobBuilder { b.job.Spec.Completions = &n; return b }

func (b *jobBuilder) Parallelism(n int32) *jobBuilder { b.job.Spec.Parallelism = &n; return b }

func (b *jobBuilder) Succeeded(n int32) *jobBuilder { b.job.Status.Succeeded = n; return b }

func (b *jobBuilder) Started(d time.Duration) *jobBuilder {
	b.job.Status.StartTime = agoPtr(d)
	return b
}

func (b *jobBuilder) Finished(d time.Duration) *jobBuilder {
	b.job.Status.CompletionTime = agoPtr(d)
	return b
}

func (b *jobBuilder) Condition(typ batchv1.JobConditionType, s corev1.ConditionStatus) *jobBuilder {
	b.job.Status.Conditions = append(b.job.Status.Conditions, batchv1.JobCondition{Type: typ, Status: s})
	return b
}

func (b *jobBuilder) Deleting() *jobBuilder { b.job.DeletionTimestamp = agoPtr(time.Second); return b }

func (b *jobBuilder) Obj() *batchv1.Job { j := b.job; return &j }
