package kubelet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestLocalStorageEvictions(t *testing.T) {
	const mi = 1 << 20
	limited := func(name, limit string) corev1.Container {
		c := corev1.Container{Name: name, Image: testImage}
		if limit != "" {
			c.Resources.Limits = corev1.ResourceList{corev1.ResourceEphemeralStorage: quantity(limit)}
		}
		return c
	}
	emptyDir := func(name, sizeLimit string, medium corev1.StorageMedium) corev1.Volume {
		v := corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: medium}}}
		if sizeLimit != "" {
			v.EmptyDir.SizeLimit = ptr.To(quantity(sizeLimit))
		}
		return v
	}
	for _, tt := range []struct {
		name       string
		containers []corev1.Container
		init       []corev1.Container
		volumes    []corev1.Volume
		mutate     func(*corev1.Pod)
		usage      *podStorageUsage
		want       string
	}{
		{
			name:       "a container past its own limit (upstream's 'evicted pods should be terminal': 10Mi written under 5Mi)",
			containers: []corev1.Container{limited("bar", "5Mi"), limited("other", "")},
			usage:      &podStorageUsage{containers: map[string]uint64{"bar": 10 * mi, "other": 0}},
			want:       `Pod ephemeral local storage usage exceeds the total limit of containers 5Mi. `,
		},
		{
			name:       "one container over its limit while the pod's sum holds names the container",
			containers: []corev1.Container{limited("a", "5Mi"), limited("b", "20Mi")},
			usage:      &podStorageUsage{containers: map[string]uint64{"a": 6 * mi, "b": mi}},
			want:       `Container a exceeded its local ephemeral storage limit "5Mi". `,
		},
		{
			name:       "within every limit: kept",
			containers: []corev1.Container{limited("a", "5Mi")},
			usage:      &podStorageUsage{containers: map[string]uint64{"a": 5 * mi}},
		},
		{
			name:       "an emptyDir past its sizeLimit goes first",
			containers: []corev1.Container{limited("a", "5Mi")},
			volumes:    []corev1.Volume{emptyDir("scratch", "1Mi", "")},
			usage:      &podStorageUsage{containers: map[string]uint64{"a": 10 * mi}, emptyDirs: map[string]uint64{"scratch": 2 * mi}},
			want:       `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `,
		},
		{
			name:       "an emptyDir on disk counts toward the pod's limit",
			containers: []corev1.Container{limited("a", "5Mi")},
			volumes:    []corev1.Volume{emptyDir("scratch", "", "")},
			usage:      &podStorageUsage{containers: map[string]uint64{"a": 3 * mi}, emptyDirs: map[string]uint64{"scratch": 3 * mi}},
			want:       `Pod ephemeral local storage usage exceeds the total limit of containers 5Mi. `,
		},
		{
			name:       "a memory-backed emptyDir does not",
			containers: []corev1.Container{limited("a", "5Mi")},
			volumes:    []corev1.Volume{emptyDir("shm", "", corev1.StorageMediumMemory)},
			usage:      &podStorageUsage{containers: map[string]uint64{"a": 3 * mi}, emptyDirs: map[string]uint64{"shm": 3 * mi}},
		},
		{
			name:    "an emptyDir sizeLimit alone makes a pod checked",
			volumes: []corev1.Volume{emptyDir("scratch", "1Mi", "")},
			usage:   &podStorageUsage{containers: map[string]uint64{"app": 100 * mi}, emptyDirs: map[string]uint64{"scratch": 2 * mi}},
			want:    `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `,
		},
		{
			name:       "no limit at all: never evicted",
			containers: []corev1.Container{limited("a", "")},
			usage:      &podStorageUsage{containers: map[string]uint64{"a": 100 * mi}},
		},
		{
			name:       "an init container's larger limit is the pod's",
			init:       []corev1.Container{limited("setup", "20Mi")},
			containers: []corev1.Container{limited("a", "")},
			usage:      &podStorageUsage{containers: map[string]uint64{"setup": 8 * mi, "a": 8 * mi}},
		},
		{
			name:       "a pod not measured is skipped",
			containers: []corev1.Container{limited("a", "5Mi")},
		},
		{
			name:       "a terminating pod is left to its termination",
			containers: []corev1.Container{limited("a", "5Mi")},
			mutate:     func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.Now()) },
			usage:      &podStorageUsage{containers: map[string]uint64{"a": 10 * mi}},
		},
		{
			name:       "a static pod is never evicted",
			containers: []corev1.Container{limited("a", "5Mi")},
			mutate:     func(p *corev1.Pod) { p.Annotations = map[string]string{annotationConfigMirror: "x"} },
			usage:      &podStorageUsage{containers: map[string]uint64{"a": 10 * mi}},
		},
		{
			name:       "nor a system-critical one",
			containers: []corev1.Container{limited("a", "5Mi")},
			mutate:     func(p *corev1.Pod) { p.Spec.Priority = ptr.To[int32](systemCriticalPriority) },
			usage:      &podStorageUsage{containers: map[string]uint64{"a": 10 * mi}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pod := makePod("p").obj()
			if tt.containers != nil {
				pod.Spec.Containers = tt.containers
			}
			pod.Spec.InitContainers, pod.Spec.Volumes = tt.init, tt.volumes
			if tt.mutate != nil {
				tt.mutate(pod)
			}
			usage := map[types.UID]podStorageUsage{}
			if tt.usage != nil {
				usage[pod.UID] = *tt.usage
			}
			got := localStorageEvictions([]*corev1.Pod{pod}, usage)
			switch {
			case tt.want == "" && len(got) > 0:
				t.Errorf("evicted with %q, want kept", got[0].message)
			case tt.want != "" && (len(got) != 1 || got[0].message != tt.want || got[0].pod != pod):
				t.Errorf("evictions = %+v, want one with %q", got, tt.want)
			}
		})
	}
}

func TestPodEphemeralStorageLimit(t *testing.T) {
	c := func(name, limit string, sidecar bool) corev1.Container {
		out := corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceEphemeralStorage: quantity(limit)}}}
		if sidecar {
			out.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		}
		return out
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{c("side", "2Mi", true), c("setup", "30Mi", false)},
		Containers:     []corev1.Container{c("a", "5Mi", false), c("b", "5Mi", false), {Name: "none"}},
	}}
	if got, ok := podEphemeralStorageLimit(pod); !ok || got.Cmp(quantity("32Mi")) != 0 {
		t.Errorf("limit = %s, %v; want 32Mi (the init container and the sidecar before it)", got.String(), ok)
	}
	pod.Spec.InitContainers[1] = c("setup", "1Mi", false)
	if got, _ := podEphemeralStorageLimit(pod); got.Cmp(quantity("12Mi")) != 0 {
		t.Errorf("limit = %s, want 12Mi (containers and sidecar)", got.String())
	}
	if _, ok := podEphemeralStorageLimit(&corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}}); ok {
		t.Error("a pod without limits has one")
	}
}

func TestOverlayUpperDir(t *testing.T) {
	mountinfo := strings.Join([]string{
		"22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw",
		"310 22 0:52 / /data/containerd/state/io.containerd.runtime.v2.task/k8s.io/abc123/rootfs rw,relatime shared:150 - overlay overlay rw,lowerdir=/s/1/fs:/s/2/fs,upperdir=/s/9/fs,workdir=/s/9/work",
		"311 22 0:53 / /data/containerd/state/io.containerd.runtime.v2.task/k8s.io/abc1234/rootfs rw - overlay overlay rw,lowerdir=/s/1/fs,upperdir=/s/10/fs,workdir=/s/10/work",
	}, "\n")
	if got := overlayUpperDir([]byte(mountinfo), "abc123"); got != "/s/9/fs" {
		t.Errorf("upper dir = %q, want /s/9/fs", got)
	}
	if got := overlayUpperDir([]byte(mountinfo), "missing"); got != "" {
		t.Errorf("upper dir of an unknown container = %q", got)
	}
}

func TestBoundedDiskUsage(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a", "b", "c"} {
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, 64<<10), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	all, complete := boundedDiskUsage(dir, 100)
	if !complete || all < 3*64<<10 {
		t.Errorf("usage = %d (complete %v), want at least 192KiB, complete", all, complete)
	}
	part, complete := boundedDiskUsage(dir, 2)
	if complete || part >= all {
		t.Errorf("bounded usage = %d (complete %v), want less than %d, incomplete", part, complete, all)
	}
}

// A pod whose container writes past its ephemeral-storage limit is evicted on the housekeeping
// tick as upstream's kubelet does: a Warning Evicted event, its container stopped, phase Failed
// with reason Evicted and the limit in the message. A pod within its limit stays.
func TestPodEvictedForEphemeralStorage(t *testing.T) {
	h := newHarness(t, nil)
	withLimit := func(name string) *corev1.Pod {
		return makePod(name).container(corev1.Container{Name: "app", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceEphemeralStorage: quantity("5Mi")}}}).obj()
	}
	h.create(withLimit("hog"))
	h.create(withLimit("tidy"))
	h.waitPod("default", "hog", "running", podRunning)
	h.waitPod("default", "tidy", "running", podRunning)
	hog := h.runtime.RunningContainer("uid-hog", "app")
	h.runtime.SetWritableLayer(hog, 10<<20)
	h.runtime.SetWritableLayer(h.runtime.RunningContainer("uid-tidy", "app"), 1<<20)
	h.step(h.cfg.HousekeepingPeriod)
	pod := h.waitPod("default", "hog", "evicted", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if pod.Status.Reason != reasonEvicted || !strings.Contains(pod.Status.Message, "5Mi") {
		t.Errorf("status reason %q message %q, want Evicted naming the 5Mi limit", pod.Status.Reason, pod.Status.Message)
	}
	if s := statusOf(pod, "app"); s == nil || s.State.Terminated == nil {
		t.Errorf("container status %+v, want terminated", s)
	}
	h.eventually("Evicted event", func() bool { return h.hasEvent("Warning Evicted Pod ephemeral local storage usage exceeds") })
	if h.runtime.RunningContainer("uid-hog", "app") != "" {
		t.Error("the evicted pod's container still runs")
	}
	if p := h.pod("default", "tidy"); p.Status.Phase != corev1.PodRunning {
		t.Errorf("pod within its limit is %s, want Running", p.Status.Phase)
	}
}
