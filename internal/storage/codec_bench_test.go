package storage_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/skiff-sh/skiff/internal/storage"
)

func benchScheme(tb testing.TB) *runtime.Scheme {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		tb.Fatal(err)
	}
	return scheme
}

// realisticPod looks like a Deployment's pod after scheduling and startup.
func realisticPod() *corev1.Pod {
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	container := func(name, image string) corev1.Container {
		return corev1.Container{
			Name: name, Image: image,
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			Env: []corev1.EnvVar{
				{Name: "LOG_LEVEL", Value: "info"},
				{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
			},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
			},
			VolumeMounts:             []corev1.VolumeMount{{Name: "kube-api-access-x7k2p", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
			ReadinessProbe:           &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intOrString(8080)}}, PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3},
			TerminationMessagePath:   "/dev/termination-log",
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			ImagePullPolicy:          corev1.PullIfNotPresent,
		}
	}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-7d4b9c8f6d-x2x9q", GenerateName: "web-7d4b9c8f6d-", Namespace: "default",
			UID: "0b6a8f5e-3c0e-4d59-9a36-2d8e0c1b7f10", CreationTimestamp: now,
			Labels:      map[string]string{"app": "web", "pod-template-hash": "7d4b9c8f6d"},
			Annotations: map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-01-02T03:00:00Z"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d4b9c8f6d",
				UID: "5f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b", Controller: boolPtr(true), BlockOwnerDeletion: boolPtr(true)}},
		},
		Spec: corev1.PodSpec{
			Containers:    []corev1.Container{container("web", "registry.example.com/web:1.4.2"), container("sidecar", "registry.example.com/proxy:0.9.1")},
			Volumes:       []corev1.Volume{{Name: "kube-api-access-x7k2p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: int64Ptr(3607)}}}}}}},
			RestartPolicy: corev1.RestartPolicyAlways,
			DNSPolicy:     corev1.DNSClusterFirst,
			NodeName:      "worker-3", ServiceAccountName: "default", SchedulerName: "default-scheduler",
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: int64Ptr(300)},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: int64Ptr(300)},
			},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, HostIP: "10.0.0.13", PodIP: "10.244.3.17", StartTime: &now, QOSClass: corev1.PodQOSBurstable,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			},
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "web", Ready: true, Image: "registry.example.com/web:1.4.2", ImageID: "registry.example.com/web@sha256:" + strings.Repeat("a", 64), ContainerID: "containerd://" + strings.Repeat("b", 64), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}},
				{Name: "sidecar", Ready: true, Image: "registry.example.com/proxy:0.9.1", ImageID: "registry.example.com/proxy@sha256:" + strings.Repeat("c", 64), ContainerID: "containerd://" + strings.Repeat("d", 64), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}},
			},
		},
	}
}

func configMap1KiB() *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "bench-0001", Namespace: "default", UID: "1c2d3e4f-5a6b-7c8d-9e0f-1a2b3c4d5e6f"},
		Data:       map[string]string{"payload": strings.Repeat("x", 1024)},
	}
}

func boolPtr(b bool) *bool    { return &b }
func int64Ptr(i int64) *int64 { return &i }

func BenchmarkCodec(b *testing.B) {
	scheme := benchScheme(b)
	objects := []struct {
		name string
		obj  runtime.Object
		new  func() runtime.Object
	}{
		{"Pod", realisticPod(), func() runtime.Object { return &corev1.Pod{} }},
		{"ConfigMap1KiB", configMap1KiB(), func() runtime.Object { return &corev1.ConfigMap{} }},
	}
	for _, o := range objects {
		for _, encoding := range []string{storage.EncodingJSON, storage.EncodingProtobuf} {
			codec, err := storage.NewCodec(scheme, corev1.SchemeGroupVersion, encoding)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(o.name+"/"+encoding, func(b *testing.B) {
				var buf bytes.Buffer
				if err := codec.Encode(o.obj, &buf); err != nil {
					b.Fatal(err)
				}
				size := buf.Len()
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					buf.Reset()
					if err := codec.Encode(o.obj, &buf); err != nil {
						b.Fatal(err)
					}
					if _, _, err := codec.Decode(buf.Bytes(), nil, o.new()); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(size), "stored-bytes")
			})
		}
	}
}

func TestCodecRoundTripsBothWays(t *testing.T) {
	scheme := benchScheme(t)
	jsonCodec, err := storage.NewCodec(scheme, corev1.SchemeGroupVersion, storage.EncodingJSON)
	if err != nil {
		t.Fatal(err)
	}
	protoCodec, err := storage.NewCodec(scheme, corev1.SchemeGroupVersion, storage.EncodingProtobuf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := storage.NewCodec(scheme, corev1.SchemeGroupVersion, "yaml"); err == nil {
		t.Fatal("unknown encoding accepted")
	}
	pod := realisticPod()
	for _, pair := range []struct {
		name     string
		enc, dec runtime.Codec
	}{{"json->protobuf codec", jsonCodec, protoCodec}, {"protobuf->json codec", protoCodec, jsonCodec}} {
		t.Run(pair.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := pair.enc.Encode(pod, &buf); err != nil {
				t.Fatal(err)
			}
			got := &corev1.Pod{}
			if _, _, err := pair.dec.Decode(buf.Bytes(), nil, got); err != nil {
				t.Fatal(err)
			}
			if got.Name != pod.Name || got.Status.PodIP != pod.Status.PodIP || len(got.Spec.Containers) != 2 ||
				!got.Spec.Containers[0].Resources.Requests.Cpu().Equal(resource.MustParse("100m")) {
				t.Fatalf("round trip lost data: %+v", got)
			}
		})
	}
}

func intOrString(port int) intstr.IntOrString { return intstr.FromInt32(int32(port)) }
